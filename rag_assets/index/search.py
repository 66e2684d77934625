"""Retrieval for people and scripts: hybrid search over the configured model's collection."""

from __future__ import annotations

from rag_assets.embedding.models import EmbeddingSpec
from rag_assets.embedding.selection import select_embedder
from rag_assets.index.milvus import MilvusIndex, SearchHit
from rag_assets.settings import Settings


def search(settings: Settings, text: str, top_k: int = 5) -> list[SearchHit]:
    """Dense + BM25 (+ learned sparse) fused by RRF; empty when nothing has been indexed yet."""
    embedder, _ = select_embedder(EmbeddingSpec(model=settings.embedding_model))
    query = embedder.encode_queries([text])
    analyzer = {"tokenizer": "jieba"} if settings.text_analyzer == "jieba" else None
    with MilvusIndex(
        settings.resolved_milvus_uri, token=settings.milvus_token, text_analyzer=analyzer
    ) as index:
        collection = index.collection_name(embedder.name, embedder.dimension)
        if collection not in index.list_collections():
            return []
        sparse = query.sparse[0] if query.sparse else None
        return index.hybrid_search(collection, text, query.dense[0], top_k, sparse_weights=sparse)


def citation(hit: SearchHit) -> str:
    """`source.pdf, p. 3-4, § /2 Register Map/2.1 Host Control Register/`: where the text came from."""
    pages = ""
    if hit.page_start:
        pages = f", p. {hit.page_start}" + (
            f"-{hit.page_end}" if hit.page_end and hit.page_end != hit.page_start else ""
        )
    headings = hit.metadata.get("headings") or []
    section = " / ".join(headings) if headings else hit.header_path
    return f"{hit.source_path}{pages}, § {section}"


def citation_dict(hit: SearchHit) -> dict:
    return {
        "chunk_id": hit.chunk_id,
        "doc_id": hit.doc_id,
        "source_path": hit.source_path,
        "header_path": hit.header_path,
        "page_start": hit.page_start,
        "page_end": hit.page_end,
        "score": hit.score,
        "text": hit.text,
        "citation": citation(hit),
    }
