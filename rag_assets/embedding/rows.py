"""The stored form of a document's embeddings: one row per chunk."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, Field

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.embedding.models import Embedder
from rag_assets.embedding.reuse import Reuse, VectorStore, embed_once
from rag_assets.settings.groups import DEFAULT_EMBEDDED_PART, EmbeddedPart


class EmbeddingRow(BaseModel):
    chunk_id: str
    dense: list[float]
    sparse: dict = Field(default_factory=dict)  # token id -> weight, for models with a sparse head


def embedding_rows(
    chunk_ids: list[str], dense: np.ndarray, sparse: list[dict] | None
) -> list[EmbeddingRow]:
    return [
        EmbeddingRow(
            chunk_id=chunk_id,
            dense=dense[i].tolist(),
            sparse={str(k): float(v) for k, v in (sparse[i] if sparse else {}).items()},
        )
        for i, chunk_id in enumerate(chunk_ids)
    ]


def embedded_text(chunk: ChunkRow, part: EmbeddedPart) -> str:
    """`text`: what a person reads; `context`: the breadcrumb, then the text (BM25's field)."""
    return chunk.text if part == "text" else chunk.context_text or chunk.text


def embed_rows(
    embedder: Embedder,
    chunks: Sequence[ChunkRow],
    report: Callable[[str], None] = lambda _: None,
    store: VectorStore | None = None,
    part: EmbeddedPart = DEFAULT_EMBEDDED_PART,
) -> tuple[list[EmbeddingRow], Reuse]:
    """One row per chunk, in order: the vectors of its `part`, each distinct text embedded
    once, stored vectors reused."""
    texts = [embedded_text(c, part) for c in chunks]
    batch, reuse = embed_once(embedder, texts, report, store)
    return embedding_rows([c.chunk_id for c in chunks], batch.dense, batch.sparse), reuse


def dense_matrix(rows: list[EmbeddingRow], dimension: int) -> np.ndarray:
    if not rows:
        return np.zeros((0, dimension), dtype=np.float32)
    return np.asarray([r.dense for r in rows], dtype=np.float32)


def sparse_weights(row: EmbeddingRow) -> dict[int, float]:
    return {int(k): float(v) for k, v in row.sparse.items()}
