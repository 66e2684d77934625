"""Checks on a document's rows in the index."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence

from rag_assets.index.filters import documents_in
from rag_assets.index.rows import IndexRow
from rag_assets.index.store import MilvusIndex
from rag_assets.quality.outcome import CheckOutcome, outcome

SELF_RETRIEVAL_SAMPLE = 5
SCAN_DOCUMENTS = 500  # documents named in one scan's filter


def check_row_count(rows_in_index: int, chunks: int, duplicates: int = 0) -> CheckOutcome:
    """One row per distinct chunk: `duplicates` chunks repeat an earlier one and are not rows."""
    expected = chunks - duplicates
    repeated = f" ({duplicates} repeat an earlier chunk, indexed once)" if duplicates else ""
    problems = (
        []
        if rows_in_index == expected
        else [f"{rows_in_index} rows in the index for {expected} distinct chunks{repeated}"]
    )
    return outcome(
        problems,
        f"{rows_in_index} rows for {chunks} chunks{repeated}",
        {"rows": rows_in_index, "chunks": chunks, "duplicates": duplicates},
    )


def _sample(rows: list[IndexRow], size: int) -> list[IndexRow]:
    # Evenly spread and deterministic: the first, the last and chunks in between.
    if len(rows) <= size:
        return rows
    step = (len(rows) - 1) / (size - 1)
    return [rows[round(i * step)] for i in range(size)]


def check_self_retrieval(
    index: MilvusIndex, collection: str, doc_id: str, rows: list[IndexRow]
) -> CheckOutcome:
    """Each sampled chunk's own vector must bring it back first (or a chunk with the same text)."""
    problems = []
    sample = _sample(rows, SELF_RETRIEVAL_SAMPLE)
    # One search for the sample: a request each costs more than the search itself.
    found = index.dense_search_many(collection, [row.dense for row in sample], 1, doc_id=doc_id)
    for row, hits in zip(sample, found, strict=True):
        if not hits:
            problems.append(f"chunk {row.chunk_index}: no hit")
        elif hits[0].chunk_id != row.chunk_id and hits[0].text != row.text:
            problems.append(f"chunk {row.chunk_index}: top-1 was chunk {hits[0].chunk_index}")
    return outcome(
        problems, f"{len(sample)} sampled chunks found themselves top-1", {"sampled": len(sample)}
    )


COLLECTION_SAMPLE_PER_DOCUMENT = 2
COLLECTION_TOP_K = 10
# Documents of the collection searched for beside those just written: enough to see a written
# document crowd others out, few enough that the check costs the same at 100 or 10,000.
COLLECTION_OTHER_DOCUMENTS = 100


def collection_sample(
    written: Collection[str], known: Sequence[str], others: int = COLLECTION_OTHER_DOCUMENTS
) -> list[str]:
    """The documents a collection-wide check after a write searches for: those `written` and
    `others` more of the `known` ones, spread evenly over them from a start that depends on
    the written set (so successive writes look at different documents)."""
    written = sorted(set(written))
    rest = sorted(set(known) - set(written))
    if len(rest) <= others:
        return written + rest
    step = len(rest) / others
    start = int.from_bytes(hashlib.sha256("\0".join(written).encode()).digest()[:4]) % len(rest)
    picked = {(start + int(i * step)) % len(rest) for i in range(others)}
    return written + [rest[i] for i in sorted(picked)]


def check_collection_self_retrieval(
    index: MilvusIndex,
    collection: str,
    documents: Sequence[str] | None = None,
    per_document: int = COLLECTION_SAMPLE_PER_DOCUMENT,
    top_k: int = COLLECTION_TOP_K,
) -> CheckOutcome:
    """Sampled chunks of the `documents` (every document in the collection when None) come back
    in the top `top_k` of an unfiltered dense search by their own vector (or a chunk with the
    same text does).

    The per-document check searches within its document only, so it misses a document whose
    rows crowd every other document out of the collection-wide search.
    """
    fields = ["chunk_id", "doc_id", "chunk_index"]
    entries = (
        index.scan(collection, fields)
        if documents is None
        else [
            row
            for start in range(0, len(documents), SCAN_DOCUMENTS)
            for row in index.scan(
                collection, fields, documents_in(documents[start : start + SCAN_DOCUMENTS])
            )
        ]
    )
    by_doc: dict[str, list[dict]] = {}
    for entry in sorted(entries, key=lambda e: (e["doc_id"], e["chunk_index"])):
        by_doc.setdefault(entry["doc_id"], []).append(entry)
    sampled = [e["chunk_id"] for rows in by_doc.values() for e in _sample(rows, per_document)]
    rows = index.rows_by_id(collection, sampled, ["chunk_id", "doc_id", "text", "dense"])
    hits = index.dense_search_many(collection, [r["dense"] for r in rows], top_k)
    unreachable: dict[str, int] = {}
    for row, found in zip(rows, hits, strict=True):
        if not any(h.chunk_id == row["chunk_id"] or h.text == row["text"] for h in found):
            unreachable[row["doc_id"]] = unreachable.get(row["doc_id"], 0) + 1
    problems = [
        f"{doc_id}: {missed} sampled chunks not in the top {top_k} by their own vector"
        for doc_id, missed in sorted(unreachable.items())
    ]
    return outcome(
        problems,
        f"{len(rows)} sampled chunks of {len(by_doc)} documents found themselves "
        f"in the top {top_k} of the whole collection",
        {
            "documents": len(by_doc),
            "sampled": len(rows),
            "unreachable_documents": len(unreachable),
        },
    )
