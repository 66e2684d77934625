"""Text helpers every layer may use: they import nothing else of rag_assets."""
