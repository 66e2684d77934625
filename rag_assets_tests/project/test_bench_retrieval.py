"""bench/retrieval.py's arguments: named sets combined in one collection, a set's own options."""

from __future__ import annotations

import argparse

import pytest

from rag_assets.retrieval.evaluation.comparison import chunk_documents
from rag_assets.templates.sections import TITLES_SEARCHED_KEY
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.project.test_bench_throughput import load_bench_module
from rag_assets_tests.support.builders import doc_from_pages


def test_a_sets_options_are_read_as_a_collections_and_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retrieval = load_bench_module(monkeypatch, "retrieval")
    assert retrieval._set_options("financebench-dev:section_titles=true,min_tokens=0") == (
        "financebench-dev",
        {"section_titles": True, "min_tokens": 0},
    )
    for refused in ("nowhere:section_titles=true", "sample", "sample:no_such_option=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            retrieval._set_options(refused)


def test_a_documents_own_options_override_the_runs() -> None:
    pages = [[("heading", "## Leave Policy"), ("paragraph", "Ten days of sick leave a year.")]]
    documents = [doc_from_pages(pages, doc_id=d, source_path=f"{d}.md") for d in ("a", "b")]
    chunks, _ = chunk_documents(
        documents,
        "semantic",
        ApproxTokenCounter(),
        {"min_tokens": 0},
        {"a": {"section_titles": True}},
    )
    first = {c.doc_id: c.metadata for c in chunks if c.chunk_index == 0}
    assert first["a"][TITLES_SEARCHED_KEY] is True
    assert TITLES_SEARCHED_KEY not in first["b"]
