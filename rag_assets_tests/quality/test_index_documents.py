"""A batch written to Milvus Lite in one replacement: each document checked on its own and put
back alone when it fails, the collection checked once across the batch and the known others."""

from __future__ import annotations

import numpy as np

from rag_assets.embedding.rows import EmbeddingRow
from rag_assets.index.rows import index_rows
from rag_assets.index.store import MilvusIndex
from rag_assets.quality.indexing import DocumentRows, index_documents
from rag_assets_tests.index.test_dedupe import DIM, chunk, unit


def _document(doc_id: str, texts: list[str], same_vector: bool = False) -> DocumentRows:
    """A document's chunks and their rows; `same_vector`: every row on one vector, so no chunk
    can be sure to find itself."""
    chunks = [chunk(doc_id, i, text) for i, text in enumerate(texts)]
    rng = np.random.default_rng(list(doc_id.encode()))
    shared = unit(rng)
    vectors = [
        EmbeddingRow(chunk_id=c.chunk_id, dense=shared if same_vector else unit(rng))
        for c in chunks
    ]
    return DocumentRows(chunks, index_rows(chunks, vectors))


def _index(index: MilvusIndex, documents: dict[str, DocumentRows], known: list[str]):
    return index_documents(index, documents, known, model="test-model", dimension=DIM, sparse=False)


def test_a_failing_document_is_put_back_alone_and_the_others_are_checked_together(tmp_path):
    ferries = _document("ferries", ["Ferries leave hourly.", "The last is at 22:00."])
    pilots = _document("pilots", ["Pilots board at the buoy.", "Tugs wait inside."])
    poisoned = _document("cranes", [f"Crane notice {i}." for i in range(12)], same_vector=True)
    with MilvusIndex(str(tmp_path / "milvus.db")) as index:
        earlier = _index(index, {"ferries": ferries}, ["ferries"])
        assert earlier.restored == {}
        batch = {"pilots": pilots, "cranes": poisoned}
        indexed = _index(index, batch, ["cranes", "ferries", "pilots"])
        assert indexed.collection == index.collection_name("test-model", DIM)
        assert index.count_document(indexed.collection, "cranes") == 0
        assert index.count_document(indexed.collection, "pilots") == 2
    assert list(indexed.checked) == ["pilots", "cranes"]
    assert list(indexed.restored) == ["cranes"]
    assert indexed.restored["cranes"].startswith(
        "cranes.md: index check failed (chunks_find_themselves: "
    )
    assert indexed.restored["cranes"].endswith("; its rows removed")
    passed = indexed.checked["pilots"].checks
    assert sorted(passed) == [
        "chunks_find_themselves",
        "collection_chunks_find_themselves",
        "index_rows_match_chunks",
    ]
    assert all(outcome.passed for outcome in passed.values())
    # The document written earlier is among those the collection-wide check searched for.
    assert passed["collection_chunks_find_themselves"].metadata["documents"] == 2


def test_the_collection_check_searches_only_the_known_documents_beside_the_batch(tmp_path):
    with MilvusIndex(str(tmp_path / "milvus.db")) as index:
        _index(index, {"ferries": _document("ferries", ["Ferries leave hourly."])}, [])
        indexed = _index(index, {"pilots": _document("pilots", ["Pilots board."])}, [])
    found = indexed.checked["pilots"].checks["collection_chunks_find_themselves"]
    assert found.passed and found.metadata["documents"] == 1


def test_a_chunk_repeating_an_earlier_one_is_counted_but_makes_no_row(tmp_path):
    notice = _document("notice", ["Ferries leave hourly.", "Ferries leave hourly."])
    assert len(notice.rows) == 1
    with MilvusIndex(str(tmp_path / "milvus.db")) as index:
        indexed = _index(index, {"notice": notice}, ["notice"])
    counted = indexed.checked["notice"].checks["index_rows_match_chunks"]
    assert counted.passed
    assert counted.metadata == {"rows": 1, "chunks": 2, "duplicates": 1}
