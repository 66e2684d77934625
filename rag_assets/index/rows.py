"""From stored chunks and embeddings to index rows, and what a replacement wrote."""

from __future__ import annotations

from pydantic import BaseModel

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.embedding.rows import EmbeddingRow, sparse_weights
from rag_assets.index.milvus import IndexRow


def index_rows(chunks: list[ChunkRow], vectors: list[EmbeddingRow]) -> list[IndexRow]:
    by_id = {v.chunk_id: v for v in vectors}
    missing = [c.chunk_id for c in chunks if c.chunk_id not in by_id]
    if missing:
        raise ValueError(f"{len(missing)} chunks have no embedding (first: {missing[0]})")
    return [
        IndexRow.from_chunk(
            chunk, by_id[chunk.chunk_id].dense, sparse_weights(by_id[chunk.chunk_id]) or None
        )
        for chunk in chunks
    ]


class IndexReport(BaseModel):
    """The vector_index partition's record: where the document's rows are and how many."""

    doc_id: str
    collection: str
    uri: str
    model: str
    dimension: int
    rows: int
    upserted: int
    deleted_stale: int
