"""From stored chunks and embeddings to index rows, and what a replacement wrote."""

from __future__ import annotations

from pydantic import BaseModel

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.embedding.rows import EmbeddingRow, sparse_weights
from rag_assets.index.milvus import IndexRow

# A kept row's metadata: how many later chunks repeat it, and the first of their ids (Milvus
# caps a JSON field at 64 KB, and a page of identical sections can repeat thousands of times).
DUPLICATE_COUNT = "duplicate_count"
DUPLICATE_IDS = "duplicate_chunk_ids"
DUPLICATE_IDS_KEPT = 100


def index_rows(chunks: list[ChunkRow], vectors: list[EmbeddingRow]) -> list[IndexRow]:
    """One row per distinct chunk of a document: a chunk whose embedded text repeats an earlier
    one of the same document is not indexed again; the kept row counts it and lists its id.
    Thousands of identical vectors crowd out every other document's rows in an approximate
    index and add nothing a search could return."""
    by_id = {v.chunk_id: v for v in vectors}
    missing = [c.chunk_id for c in chunks if c.chunk_id not in by_id]
    if missing:
        raise ValueError(f"{len(missing)} chunks have no embedding (first: {missing[0]})")
    kept: dict[tuple[str, str], IndexRow] = {}
    rows: list[IndexRow] = []
    for chunk in chunks:
        same = kept.get((chunk.doc_id, chunk.context_text or chunk.text))
        if same is not None:
            same.metadata[DUPLICATE_COUNT] = same.metadata.get(DUPLICATE_COUNT, 0) + 1
            if len(ids := same.metadata.setdefault(DUPLICATE_IDS, [])) < DUPLICATE_IDS_KEPT:
                ids.append(chunk.chunk_id)
            continue
        vector = by_id[chunk.chunk_id]
        row = IndexRow.from_chunk(chunk, vector.dense, sparse_weights(vector) or None)
        kept[(chunk.doc_id, chunk.context_text or chunk.text)] = row
        rows.append(row)
    return rows


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
