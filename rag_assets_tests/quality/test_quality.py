"""Every check passes on good data and fails on deliberately broken data."""

import numpy as np
import pytest

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.index.rows import IndexRow
from rag_assets.index.store import MilvusIndex
from rag_assets.quality.chunks import (
    check_chunks_have_content,
    check_header_paths,
    check_ids_unique_and_deterministic,
    check_metadata_complete,
    check_pages_within_document,
)
from rag_assets.quality.embeddings import check_embeddings
from rag_assets.quality.index import check_row_count, check_self_retrieval

DOC = StandardizedDocument(
    doc_id="doc-1",
    source_path="spec.pdf",
    source_sha256="abc",
    parser="test",
    parser_version="0",
    page_count=3,
    elements=[
        DocumentElement(type="heading", text="# 1 Intro", level=1),
        DocumentElement(type="heading", text="## 1.1 Scope", level=2, page_start=2, page_end=2),
        DocumentElement(type="heading", text="# 2 Registers", level=1, page_start=3, page_end=3),
    ],
)


def _record(index: int, text: str, headings: list[str], pages=(1, 1)) -> dict:
    row = ChunkRow(
        chunk_id=chunk_id_for("doc-1", "semantic", index, text),
        doc_id="doc-1",
        source_path="spec.pdf",
        source_sha256="abc",
        template="semantic",
        chunk_index=index,
        text=text,
        header_path="/" + "".join(f"{h}/" for h in headings[:-1]),
        headings=headings,
        page_start=pages[0],
        page_end=pages[1],
        token_count=3,
    )
    return row.model_dump()


@pytest.fixture
def records() -> list[dict]:
    return [
        _record(0, "# 1 Intro", ["1 Intro"]),
        _record(1, "## 1.1 Scope\n\nText.", ["1 Intro", "1.1 Scope"], (2, 2)),
        _record(2, "# 2 Registers", ["2 Registers"], (3, 3)),
    ]


def test_chunk_checks_pass_on_good_rows(records):
    assert check_metadata_complete(records, "doc-1").passed
    assert check_ids_unique_and_deterministic(records).passed
    assert check_header_paths(records, DOC).passed
    assert check_pages_within_document(records, 3).passed


def test_metadata_check_fails_on_missing_or_mistyped_fields(records):
    del records[0]["source_sha256"]
    records[1]["page_start"] = "two"
    found = check_metadata_complete(records, "doc-1")
    assert not found.passed
    assert "source_sha256" in found.description and "page_start" in found.description
    assert not check_metadata_complete(records[2:], "another-doc").passed


def test_id_check_fails_on_duplicates_and_edited_text(records):
    records[2]["chunk_id"] = records[1]["chunk_id"]
    assert "duplicate" in check_ids_unique_and_deterministic(records).description
    records[2]["chunk_id"] = chunk_id_for("doc-1", "semantic", 2, records[2]["text"])
    records[0]["text"] = "edited after the id was made"
    assert not check_ids_unique_and_deterministic(records).passed


def test_header_path_check_fails_on_malformed_and_inconsistent_paths(records):
    broken = [dict(r) for r in records]
    broken[1]["header_path"] = "1 Intro/"
    assert not check_header_paths(broken, DOC).passed
    broken = [dict(r) for r in records]
    broken[1]["header_path"] = "/2 Registers/"
    assert "does not match" in check_header_paths(broken, DOC).description
    # Well formed and self-consistent, but not a path of this document's heading tree.
    broken = [dict(r) for r in records]
    broken[1]["headings"], broken[1]["header_path"] = ["2 Registers", "1.1 Scope"], "/2 Registers/"
    assert "not a path" in check_header_paths(broken, DOC).description


def test_header_path_check_finds_a_repeated_title_at_the_level_of_the_path() -> None:
    """`Introduction` of a chapter, after one a level lower: the path runs through the second;
    the first match of each title used to be the only one tried."""
    doc = DOC.model_copy(
        update={
            "elements": [
                DocumentElement(type="heading", text="## Introduction", level=2),
                DocumentElement(type="heading", text="# Introduction", level=1),
                DocumentElement(type="heading", text="## Background", level=2),
                DocumentElement(type="heading", text="### Introduction", level=3),
            ]
        }
    )
    path = _record(0, "Text.", ["Introduction", "Background"])
    assert check_header_paths([path], doc).passed
    twice = _record(0, "Text.", ["Introduction", "Introduction"])
    assert check_header_paths([twice], doc).passed
    backwards = _record(0, "Text.", ["Background", "Introduction", "Introduction"])
    assert "not a path" in check_header_paths([backwards], doc).description


def test_content_check_counts_a_heading_once() -> None:
    """A list `1. scope` / `1. scope`: the first item heads a clause, the second is its text."""
    doc = DOC.model_copy(update={"elements": []})
    clause = _record(0, "1. scope\n1. scope", ["1. scope"])
    assert check_chunks_have_content([clause], doc, headings_from_text=True).passed
    alone = _record(0, "1. scope", ["1. scope"])
    assert "only a heading" in check_chunks_have_content([alone], doc, True).description


def test_page_check_fails_outside_the_document(records):
    records[2]["page_end"] = 4
    assert not check_pages_within_document(records, 3).passed
    records[2]["page_end"], records[2]["page_start"] = 3, 0
    assert not check_pages_within_document(records, 3).passed


def _unit_vectors(n: int, dim: int) -> np.ndarray:
    vectors = np.random.default_rng(0).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_embedding_check_fails_on_each_kind_of_bad_vector():
    ids = ["a", "b", "c"]
    good = _unit_vectors(3, 8)
    assert check_embeddings(ids, ids, good, 8).passed
    nan = good.copy()
    nan[1, 0] = np.nan
    assert "not finite" in check_embeddings(ids, ids, nan, 8).description
    assert "unit length" in check_embeddings(ids, ids, good * 2, 8).description
    assert "shape" in check_embeddings(ids, ids, good, 16).description
    assert "ids differ" in check_embeddings(ids, ids[:2], good[:2], 8).description


def test_index_checks_fail_on_a_wrong_count_and_a_misplaced_vector(tmp_path):
    assert check_row_count(3, 3).passed
    assert not check_row_count(4, 3).passed
    vectors = _unit_vectors(3, 8)
    rows = [
        IndexRow(
            chunk_id=f"c{i}",
            doc_id="doc-1",
            text=f"chunk {i}",
            dense=vectors[i].tolist(),
            chunk_index=i,
        )
        for i in range(3)
    ]
    with MilvusIndex(str(tmp_path / "milvus.db")) as index:
        collection = index.ensure_collection("test-model", 8, has_sparse=False)
        index.replace_document(collection, "doc-1", rows)
        assert check_self_retrieval(index, collection, "doc-1", rows).passed
        # Stored vectors that do not belong to their chunks: rows 0 and 1 swapped.
        swapped = [
            rows[0].model_copy(update={"dense": rows[1].dense}),
            rows[1].model_copy(update={"dense": rows[0].dense}),
            rows[2],
        ]
        index.replace_document(collection, "doc-1", swapped)
        found = check_self_retrieval(index, collection, "doc-1", rows)
    assert not found.passed and "top-1 was chunk" in found.description


def test_headings_read_from_text_must_occur_in_the_text_in_order(records):
    doc = DOC.model_copy(
        update={"markdown": "CHAPTER I General\n\nArticle 1 Subject-matter\n\nText."}
    )
    derived = [dict(r) for r in records]
    derived[1]["headings"], derived[1]["header_path"] = (
        ["CHAPTER I General", "Article 1 Subject-matter"],
        "/CHAPTER I General/",
    )
    assert check_header_paths(derived[1:2], doc, headings_from_text=True).passed
    assert not check_header_paths(derived[1:2], doc, headings_from_text=False).passed
    derived[1]["headings"], derived[1]["header_path"] = (
        ["Article 1 Subject-matter", "CHAPTER I General"],
        "/Article 1 Subject-matter/",
    )
    assert (
        "do not occur" in check_header_paths(derived[1:2], doc, headings_from_text=True).description
    )


def test_a_slash_inside_a_heading_keeps_the_path_consistent():
    doc = DOC.model_copy(
        update={
            "elements": [
                DocumentElement(type="heading", text="# I/O Registers", level=1),
                DocumentElement(type="heading", text="## Port A", level=2),
            ]
        }
    )
    record = _record(0, "## Port A", ["I/O Registers", "Port A"])
    record["header_path"] = "/I\u2215O Registers/"
    assert check_header_paths([record], doc).passed
