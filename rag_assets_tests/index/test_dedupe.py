"""Identical chunks of a document are indexed once, and every document stays reachable by a
collection-wide dense search (Milvus Lite in tmp_path, synthetic unit vectors)."""

from __future__ import annotations

import numpy as np
import pytest

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.embedding.rows import EmbeddingRow
from rag_assets.index.rows import (
    DUPLICATE_COUNT,
    DUPLICATE_IDS,
    DUPLICATE_IDS_KEPT,
    IndexRow,
    index_rows,
)
from rag_assets.index.store import MilvusIndex
from rag_assets.quality.index import (
    check_collection_self_retrieval,
    check_row_count,
    collection_sample,
)

DIM = 16


def chunk(doc_id: str, i: int, text: str) -> ChunkRow:
    return ChunkRow(
        chunk_id=chunk_id_for(doc_id, "semantic", i, text),
        doc_id=doc_id,
        source_path=f"{doc_id}.md",
        source_sha256="0" * 64,
        template="semantic",
        chunk_index=i,
        text=text,
        context_text=f"Title › Part\n{text}",
    )


def unit(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=DIM)
    return (v / np.linalg.norm(v)).tolist()


def test_identical_chunks_of_a_document_become_one_row_that_points_at_the_others():
    rng = np.random.default_rng(0)
    texts = ["Intro"] + ["Same section body."] * 150 + ["Outro"]
    chunks = [chunk("doc-a", i, t) for i, t in enumerate(texts)]
    # The same text in another document is that document's own row.
    chunks.append(chunk("doc-b", 0, "Same section body."))
    vectors = [EmbeddingRow(chunk_id=c.chunk_id, dense=unit(rng)) for c in chunks]

    rows = index_rows(chunks, vectors)

    assert [(r.doc_id, r.chunk_index) for r in rows] == [
        ("doc-a", 0),
        ("doc-a", 1),
        ("doc-a", 151),
        ("doc-b", 0),
    ]
    kept = rows[1]
    assert kept.metadata[DUPLICATE_COUNT] == 149
    assert kept.metadata[DUPLICATE_IDS] == [c.chunk_id for c in chunks[2:102]]
    assert len(kept.metadata[DUPLICATE_IDS]) == DUPLICATE_IDS_KEPT
    assert DUPLICATE_COUNT not in rows[3].metadata
    doc_a_rows = sum(r.doc_id == "doc-a" for r in rows)
    assert check_row_count(doc_a_rows, 152, duplicates=149).passed
    assert not check_row_count(doc_a_rows, 152).passed
    assert not check_row_count(152, 152, duplicates=149).passed


@pytest.mark.slow
def test_the_collection_check_finds_a_document_that_crowds_out_its_own_rows(tmp_path):
    rng = np.random.default_rng(1)
    with MilvusIndex(str(tmp_path / "milvus.db")) as index:
        collection = index.ensure_collection("test-model", DIM, has_sparse=False)
        for d in range(6):
            doc_id = f"doc-{d}"
            chunks = [chunk(doc_id, i, f"document {d} chunk {i}") for i in range(5)]
            index.replace_document(
                collection, doc_id, [IndexRow.from_chunk(c, unit(rng)) for c in chunks]
            )
        healthy = check_collection_self_retrieval(index, collection)
        assert healthy.passed, healthy.description
        assert healthy.metadata == {"documents": 6, "sampled": 12, "unreachable_documents": 0}

        # 40 distinct texts behind one vector (what an embedder truncating over-long chunks
        # yields): a dense search by it returns 10 of them, so most cannot be found.
        shared = unit(rng)
        poison = [chunk("doc-poison", i, f"table row {i}") for i in range(40)]
        index.replace_document(
            collection, "doc-poison", [IndexRow.from_chunk(c, shared) for c in poison]
        )
        crowded = check_collection_self_retrieval(index, collection, per_document=3)

        # The batch just written and a sample of the others: the same finding on fewer searches.
        named = check_collection_self_retrieval(
            index, collection, ["doc-poison", "doc-3"], per_document=3
        )

    assert not crowded.passed
    assert crowded.metadata["documents"] == 7
    assert not named.passed and "doc-poison:" in named.description
    assert named.metadata["documents"] == 2 and named.metadata["unreachable_documents"] == 1
    assert crowded.metadata["unreachable_documents"] == 1
    assert "doc-poison:" in crowded.description
    assert "doc-0" not in crowded.description


@pytest.mark.slow
def test_a_document_of_identical_sections_lands_once_and_hides_no_other(tmp_path):
    from rag_assets.runner.ingest import ingest
    from rag_assets.settings import Settings

    repeated = tmp_path / "repeated.md"
    section = "## Notice\n\nThis page intentionally repeats the same maintenance notice.\n\n"
    repeated.write_text("# Repeated\n\n" + section * 300)
    other = tmp_path / "pumps.md"
    other.write_text("# Pumps\n\nThe pump station lifts water forty metres to the reservoir.\n")
    settings = Settings.from_env(tmp_path / "data")

    outcomes = {o.source_path: o for o in ingest(settings, [repeated, other])}

    assert all(o.success for o in outcomes.values()), [o.summary() for o in outcomes.values()]
    assert outcomes["repeated.md"].chunks >= 50  # short sections merge, identical all the same
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        [collection] = index.list_collections()
        rows = index.scan(collection, ["doc_id", "metadata"])
        check = check_collection_self_retrieval(index, collection)
    repeated_rows = [r for r in rows if r["doc_id"] == outcomes["repeated.md"].doc_id]
    assert len(repeated_rows) < 5
    assert (
        sum(r["metadata"].get(DUPLICATE_COUNT, 0) for r in repeated_rows) + len(repeated_rows)
        == outcomes["repeated.md"].chunks
    )
    assert check.passed and check.metadata["documents"] == 2


def test_a_collection_check_after_a_write_searches_the_batch_and_a_bounded_spread_of_others():
    known = [f"doc-{i:04}" for i in range(1000)]
    batch = ["doc-0500", "doc-0501", "new-doc"]
    sample = collection_sample(batch, known, others=100)
    assert sample[:3] == sorted(batch)  # every document written, even one not yet a partition
    others = sample[3:]
    assert len(others) == len(set(others)) == 100 and not set(others) & set(batch)
    positions = sorted(known.index(d) for d in others)
    gaps = [b - a for a, b in zip(positions, positions[1:], strict=False)]
    assert max(gaps) <= 12  # spread over the whole collection (the batch sits in one gap)
    assert collection_sample(batch, known, others=100) == sample  # deterministic
    assert collection_sample(["doc-0007"], known, others=100)[1:] != others  # another batch, others
    assert collection_sample(batch, known[:50], others=100) == sorted(batch) + known[:50]
