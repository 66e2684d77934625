"""Identical texts embedded once: within a call, and across runs through a store of vectors.

Running heads, disclaimers and boilerplate pages repeat across documents, and a parser or
template change re-chunks documents whose chunks mostly keep their text. A text's vectors
depend on the text and the model alone (`Embedder.vectors_identity`), so a collection's
vectors are kept in one SQLite file per model, keyed by the text's sha256. The store is a
cache: a read or write that fails leaves the texts to be embedded, logged, never the step
failed; vectors of removed documents stay valid for the same text and are not pruned.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_assets.embedding.models import Embedder, EmbeddingBatch
from rag_assets.embedding.progress import encode_with_progress
from rag_assets.embedding.token_counts import TokenLedger, counting_tokens, record_tokens

log = logging.getLogger(__name__)

# SQLite limits a statement's host parameters (32,766 from 3.32 on); lookups go in slices.
LOOKUP_SLICE = 900
BUSY_TIMEOUT_S = 30.0  # another run writing the same store waits, as the index writer does


@dataclass(frozen=True)
class Reuse:
    """How a call's texts were vectorized: `embedded` ran the model, the rest were reused."""

    texts: int
    embedded: int
    repeated: int  # identical to another text of the same call
    stored: int  # found in the store, from an earlier run
    store_error: str | None = None


class VectorStore:
    """Vectors by text digest, for one model identity (a file per identity)."""

    def __init__(self, folder: Path, identity: str) -> None:
        self.path = Path(folder) / f"{identity}.sqlite"

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS vectors"
            " (digest BLOB PRIMARY KEY, dense BLOB NOT NULL, sparse TEXT) WITHOUT ROWID"
        )
        return db

    def get(self, digests: Sequence[bytes]) -> dict[bytes, tuple[np.ndarray, dict | None]]:
        found: dict[bytes, tuple[np.ndarray, dict | None]] = {}
        with closing(self._connect()) as db:
            for first in range(0, len(digests), LOOKUP_SLICE):
                part = list(digests[first : first + LOOKUP_SLICE])
                marks = ",".join("?" * len(part))
                query = f"SELECT digest, dense, sparse FROM vectors WHERE digest IN ({marks})"
                for digest, dense, sparse in db.execute(query, part):
                    weights = None if sparse is None else _sparse_from_json(sparse)
                    found[digest] = (np.frombuffer(dense, dtype=np.float32), weights)
        return found

    def put(self, digests: Sequence[bytes], batch: EmbeddingBatch) -> None:
        dense = np.ascontiguousarray(batch.dense, dtype=np.float32)
        rows = [
            (
                digest,
                dense[i].tobytes(),
                None if batch.sparse is None else json.dumps(batch.sparse[i]),
            )
            for i, digest in enumerate(digests)
        ]
        with closing(self._connect()) as db, db:
            db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)", rows)


def text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def embed_once(
    embedder: Embedder,
    texts: Sequence[str],
    report: Callable[[str], None] = lambda _: None,
    store: VectorStore | None = None,
) -> tuple[EmbeddingBatch, Reuse]:
    """Vectors for `texts`, in order, running the model once per distinct text not stored."""
    distinct = list(dict.fromkeys(texts))
    digests = [text_digest(t) for t in distinct]
    stored, store_error = _stored(store, digests, embedder.dimension)
    missing = [i for i, d in enumerate(digests) if d not in stored]
    # Longest first over the whole call: each model batch then pads only to similar lengths.
    missing.sort(key=lambda i: -len(distinct[i]))
    with counting_tokens() as ledger:
        fresh = encode_with_progress(embedder, [distinct[i] for i in missing], report)
    if store is not None and missing and store_error is None:
        store_error = _saved(store, [digests[i] for i in missing], fresh)

    dense = np.empty((len(distinct), embedder.dimension), dtype=np.float32)
    sparse: list[dict] = [{}] * len(distinct)
    dense[missing] = fresh.dense
    for row, i in enumerate(missing):
        sparse[i] = fresh.sparse[row] if fresh.sparse is not None else {}
    for i, digest in enumerate(digests):
        if digest in stored:
            dense[i], weights = stored[digest]
            sparse[i] = weights or {}

    position = {text: i for i, text in enumerate(distinct)}
    order = [position[t] for t in texts]
    _charge_first_occurrences(ledger, missing, order)
    batch = EmbeddingBatch(
        dense=dense[order],
        sparse=[sparse[i] for i in order] if embedder.has_sparse else None,
    )
    reuse = Reuse(
        texts=len(texts),
        embedded=len(missing),
        repeated=len(texts) - len(distinct),
        stored=len(distinct) - len(missing),
        store_error=store_error,
    )
    return batch, reuse


def _charge_first_occurrences(ledger: TokenLedger, encoded: list[int], order: list[int]) -> None:
    """Into the caller's open ledger, one entry per input text in input order: the word pieces
    a text cost when it is the first occurrence of a distinct text the model ran, else none."""
    if len(ledger.lengths) != len(encoded):
        return  # the runtime counts nothing (FlagEmbedding)
    cost = {i: (ledger.lengths[row], ledger.widths[row]) for row, i in enumerate(encoded)}
    lengths, widths = [], []
    for distinct_index in order:
        length, width = cost.pop(distinct_index, (0, 0))
        lengths.append(length)
        widths.append(width)
    record_tokens(lengths, widths)


def _stored(
    store: VectorStore | None, digests: list[bytes], dimension: int
) -> tuple[dict[bytes, tuple[np.ndarray, dict | None]], str | None]:
    if store is None or not digests:
        return {}, None
    try:
        found = store.get(digests)
    except (sqlite3.Error, OSError, ValueError) as error:
        log.warning("stored vectors unreadable (%s): %s; embedding every text", store.path, error)
        return {}, f"read: {error}"
    # A row of another size was not written by this model: embedded again, and reported.
    wrong = [d for d, (dense, _) in found.items() if dense.shape != (dimension,)]
    for digest in wrong:
        del found[digest]
    return found, f"{len(wrong)} stored vectors of the wrong size" if wrong else None


def _saved(store: VectorStore, digests: list[bytes], batch: EmbeddingBatch) -> str | None:
    try:
        store.put(digests, batch)
    except (sqlite3.Error, OSError) as error:
        log.warning("vectors not stored (%s): %s", store.path, error)
        return f"write: {error}"
    return None


def _sparse_from_json(value: str) -> dict[int, float]:
    return {int(k): float(v) for k, v in json.loads(value).items()}
