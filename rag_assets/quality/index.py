"""Checks on a document's rows in the index."""

from __future__ import annotations

from rag_assets.index.milvus import IndexRow, MilvusIndex
from rag_assets.quality.outcome import CheckOutcome, outcome

SELF_RETRIEVAL_SAMPLE = 5


def check_row_count(rows_in_index: int, chunks: int) -> CheckOutcome:
    problems = (
        []
        if rows_in_index == chunks
        else [f"{rows_in_index} rows in the index for {chunks} chunks"]
    )
    return outcome(
        problems,
        f"{rows_in_index} rows for {chunks} chunks",
        {"rows": rows_in_index, "chunks": chunks},
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
    for row in sample:
        hits = index.dense_search(collection, row.dense, top_k=1, doc_id=doc_id)
        if not hits:
            problems.append(f"chunk {row.chunk_index}: no hit")
        elif hits[0].chunk_id != row.chunk_id and hits[0].text != row.text:
            problems.append(f"chunk {row.chunk_index}: top-1 was chunk {hits[0].chunk_index}")
    return outcome(
        problems, f"{len(sample)} sampled chunks found themselves top-1", {"sampled": len(sample)}
    )
