"""Every entry point refuses a bad value in one line, with a non-zero exit and never a
traceback: control characters, invalid UTF-8, empty and huge values, out-of-range counts.
A bad filter value never reaches the engine, and a good search still answers after it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from rag_assets.cli import main
from rag_assets.index.filters import quote
from rag_assets.retrieval.grounding import check_answer
from rag_assets.retrieval.inputs import MAX_QUERY_CHARS, MAX_TOP_K, InvalidInput
from rag_assets.retrieval.intent import asks_for_definition
from rag_assets.retrieval.search import Retriever, SearchFilters, open_retriever
from rag_assets.settings import Settings
from rag_assets_tests.support.sample_corpus import ingested_sample

pytestmark = pytest.mark.slow

INVALID_UTF8 = b"bits \xff\xfe".decode("utf-8", "surrogateescape")  # as argv hands it over


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return ingested_sample(tmp_path_factory)


@pytest.fixture(scope="module")
def retriever(settings: Settings) -> Iterator[Retriever]:
    with open_retriever(settings) as opened:
        assert opened is not None
        yield opened


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["query", "--doc", "a\nb", "timeout"], "doc_ids"),
        (["query", "--source", "*.pdf\n", "timeout"], "source_glob"),
        (["query", "--section", "a\nb", "timeout"], "header_path_prefix"),
        (["query", "--template", "spec\r", "timeout"], "templates"),
        (["query", "--top-k", str(MAX_TOP_K + 1), "timeout"], "top_k"),
        (["query", "--top-k", "0", "timeout"], "top_k"),
        (["query", "--top-k", "-3", "timeout"], "top_k"),
        (["query", "--top-k", "many", "timeout"], "--top-k"),
        (["query", "   "], "query is empty"),
        (["query", f"timeout {INVALID_UTF8}"], "query is not valid UTF-8"),
        (["query", "x" * (MAX_QUERY_CHARS + 1)], "query"),
        (["query", "timeout\x00counter"], "query holds a control character"),
        (["text", "--top-k", "100000", "timeout"], "top_k"),
        (["figures", "--top-k", "20000", "block diagram"], "top_k"),
        (["glossary", "word " * 30_000], "term"),
        (["glossary", "Card\nDetect"], "term"),
        (["table-rows", "Offset\x01"], "keywords"),
        (["section", "/2 Register\nMap/"], "path_or_number"),
        (["section", "--doc", "a\nb", "3.2"], "doc"),
        (["answer", ""], "question is empty"),
        (["answer", INVALID_UTF8], "question is not valid UTF-8"),
    ],
)
def test_a_bad_value_is_one_line_and_a_non_zero_exit(
    settings: Settings, args: list[str], names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [*args[:1], "--data-dir", str(settings.data_dir), *args[1:]]
    try:
        code = main(command)
    except SystemExit as exit:  # argparse's own refusal
        code = exit.code
    err = capsys.readouterr().err
    assert code != 0
    assert len(err.strip().splitlines()) == 1, err
    assert names in err and "Traceback" not in err


def test_a_malformed_session_file_is_named(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "session.json"
    for content in ("{not json", '[{"question": 3}]', '{"turns": []}'):
        session.write_text(content, encoding="utf-8")
        code = main(
            ["answer", "--data-dir", str(settings.data_dir), "--session", str(session), "x"]
        )
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert str(session) in err


def test_a_section_that_does_not_exist_says_so(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["section", "--data-dir", str(settings.data_dir), "/No Such/Heading/"]) == 0
    assert "no section '/No Such/Heading/' in the indexed documents" in capsys.readouterr().out


BAD_VALUES = ["a\nb", "a\rb", "\x00", "tab\there", "a\u2028b", "x\x7f"]


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_bad_filter_value_never_reaches_the_engine(retriever: Retriever, bad: str) -> None:
    for field in ("doc_ids", "templates", "chunk_types"):
        with pytest.raises(ValidationError):
            SearchFilters(**{field: [bad]})
    for field in ("source_glob", "header_path_prefix"):
        with pytest.raises(ValidationError):
            SearchFilters(**{field: bad})
    with pytest.raises(ValueError, match="control character"):
        quote(bad)
    # The engine behind the retriever kept open still answers.
    assert retriever.search("timeout counter", top_k=3).hits


def test_filter_values_with_quotes_and_wildcards_are_literals(retriever: Retriever) -> None:
    for value in ['" or 1==1 or "', "%", "_", "\\", "'"]:
        filters = SearchFilters(doc_ids=[value], header_path_prefix=value)
        assert retriever.search("timeout counter", filters=filters).hits == []
    assert retriever.search("timeout counter", top_k=3).hits


def test_an_empty_or_oversized_search_is_refused_by_the_api(retriever: Retriever) -> None:
    for query, top_k in (("", 5), ("  \n ", 5), ("timeout", 0), ("timeout", MAX_TOP_K + 1)):
        with pytest.raises(InvalidInput):
            retriever.search(query, top_k=top_k)


def _seconds(call, text: str) -> float:
    started = time.perf_counter()
    call(text)
    return time.perf_counter() - started


@pytest.mark.parametrize(
    ("call", "unit"),
    [
        (asks_for_definition, "what does the counter "),
        (lambda text: check_answer(text, {1: text}), "[1] "),
        (lambda text: check_answer(text, {1: "0x0E"}), "bits 0x0E. [1] "),
    ],
)
def test_text_scanning_is_linear_in_its_input(call, unit: str) -> None:
    """Ten times the text costs about ten times the time, not a hundred (backtracking or a
    quadratic join would); the small input is large enough to time."""
    small = unit * (2_000 // len(unit))
    large = unit * (20_000 // len(unit))
    small_seconds = min(_seconds(call, small) for _ in range(3))
    large_seconds = min(_seconds(call, large) for _ in range(3))
    assert large_seconds < 30 * small_seconds + 0.05


@pytest.mark.parametrize("command", ["query", "text", "table-rows", "answer"])
def test_a_search_under_another_analyzer_than_the_collections_is_refused(
    settings: Settings,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The engine would analyze the query with the collection's analyzer whatever is configured.
    monkeypatch.setenv("RAG_ASSETS_TEXT_ANALYZER", "jieba-english")
    code = main([command, "--data-dir", str(settings.data_dir), "timeout"])
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1, err
    assert "rag.text_analyzer: has" in err and "english" in err
    assert "drop the collection and re-index" in err
    monkeypatch.delenv("RAG_ASSETS_TEXT_ANALYZER")
    assert main([command, "--data-dir", str(settings.data_dir), "timeout"]) == 0
