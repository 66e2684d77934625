"""Encoding a document's chunks in steps, reporting how many are done, for long runs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rag_assets.embedding.models import Embedder, EmbeddingBatch
from rag_assets.text.progress import CHUNKS_EMBEDDED, progress_line

# Large enough that FlagEmbedding still fills its own batches, small enough that a document of
# thousands of chunks reports every few seconds on a CPU.
PROGRESS_STEP = 256


def encode_with_progress(
    embedder: Embedder,
    texts: list[str],
    report: Callable[[str], None],
    step: int = PROGRESS_STEP,
) -> EmbeddingBatch:
    """`embedder.encode_documents(texts)`, reporting "chunks embedded: N of TOTAL" after each step."""
    parts = []
    for first in range(0, len(texts), step):
        parts.append(embedder.encode_documents(texts[first : first + step]))
        report(progress_line(CHUNKS_EMBEDDED, min(first + step, len(texts)), len(texts)))
    if not parts:
        return embedder.encode_documents([])
    sparse = None if parts[0].sparse is None else [w for p in parts for w in p.sparse or []]
    return EmbeddingBatch(dense=np.concatenate([p.dense for p in parts]), sparse=sparse)
