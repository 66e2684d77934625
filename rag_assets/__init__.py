"""rag_assets: documents in, a cited retrieval-ready vector index out."""

__version__ = "0.1.0"
