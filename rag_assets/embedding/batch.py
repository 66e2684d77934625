"""A batch's documents embedded together: one model call across their chunks (full model
batches across short documents), then each document's rows and word pieces apart again."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.embedding.models import Embedder
from rag_assets.embedding.reuse import Reuse, VectorStore
from rag_assets.embedding.rows import EmbeddingRow, embed_rows
from rag_assets.embedding.token_counts import TokenCount, counting_tokens
from rag_assets.settings.groups import EmbeddedPart


@dataclass(frozen=True)
class DocumentVectors:
    rows: list[EmbeddingRow]  # one per chunk, in the chunks' order
    tokens: TokenCount | None  # None when the runtime counts nothing (FlagEmbedding)


@dataclass(frozen=True)
class BatchVectors:
    documents: dict[str, DocumentVectors]
    reuse: Reuse
    encode_seconds: float


def embed_documents(
    embedder: Embedder,
    chunks: Mapping[str, Sequence[ChunkRow]],
    report: Callable[[str], None],
    store: VectorStore | None,
    part: EmbeddedPart,
) -> BatchVectors:
    """Every document's chunks embedded in one call; each document gets its own rows back."""
    started = time.perf_counter()
    every = [c for doc_chunks in chunks.values() for c in doc_chunks]
    with counting_tokens() as ledger:
        rows, reuse = embed_rows(embedder, every, report, store, part)
    encode_seconds = time.perf_counter() - started
    counts = ledger.per_group([len(doc_chunks) for doc_chunks in chunks.values()])
    documents, start = {}, 0
    for i, (key, doc_chunks) in enumerate(chunks.items()):
        documents[key] = DocumentVectors(
            rows[start : start + len(doc_chunks)], counts[i] if counts else None
        )
        start += len(doc_chunks)
    return BatchVectors(documents, reuse, encode_seconds)
