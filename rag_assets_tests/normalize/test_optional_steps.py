"""Optional steps fail soft: an exception injected into each repair and each optional step in
turn, and the document still lands (degraded, said in metadata and the log) with every other
step applied. Headings whose level the source states are never rewritten by any repair."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from rag_assets.contracts.ir import DocumentElement
from rag_assets.defs.observed_sources import SHARED
from rag_assets.defs.resources import ParserResource, ParsingConfig
from rag_assets.normalize import repairs
from rag_assets.normalize.repairs import REPAIRS, repair_document
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED
from rag_assets.settings import Settings
from rag_assets.settings.repairs import REPAIR_NAMES
from rag_assets.sources.keys import partition_key_for
from rag_assets.templates import base as template_base
from rag_assets.templates import select, spec
from rag_assets.templates.registry import build_template
from rag_assets.templates.tokens import ApproxTokenCounter, TokenCounter
from rag_assets_tests.support.builders import doc_from_elements, materialize_file


def _raise(*_args, **_kwargs):
    raise RuntimeError("injected\nfailure")


def _broken(name: str) -> tuple[tuple[str, object], ...]:
    return tuple((n, _raise if n == name else repair) for n, repair in REPAIRS)


def _element(kind: str, text: str, **fields) -> DocumentElement:
    return DocumentElement(type=kind, text=text, **fields)


def _document():
    """A PDF's IR that every text repair has work in: a hyphen break, a CJK space."""
    return doc_from_elements(
        [
            _element("heading", "# 1 Scope", level=1),
            _element("paragraph", "The implemen-\ntation is described here."),
            _element("paragraph", "中 华 人民", bbox=(72.0, 100.0, 500.0, 120.0)),
            _element("heading", "# 2 Terms", level=1, page_start=2, page_end=2),
            _element("paragraph", "More text on the second page.", page_start=2, page_end=2),
        ]
    )


@pytest.mark.parametrize("name", REPAIR_NAMES)
def test_a_repair_that_raises_is_skipped_and_the_others_still_apply(
    name: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(repairs, "REPAIRS", _broken(name))
    with caplog.at_level(logging.WARNING):
        doc = repair_document(_document())
    assert doc.metadata["repairs_failed"] == {name: "RuntimeError: injected failure"}
    assert doc.metadata["degraded"] == [f"repair {name} skipped (RuntimeError: injected failure)"]
    assert set(doc.metadata["repairs"]) == set(REPAIR_NAMES) - {name} | {"furniture_dropped"}
    text = doc.markdown
    assert ("implementation" in text) == (name != "hyphens_joined")
    assert ("中华人民" in text) == (name != "cjk_spaces_removed")
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert f"repair {name} skipped" in warning.getMessage()
    assert "RuntimeError: injected failure" in warning.getMessage()


def test_no_repair_failed_means_no_degraded_metadata() -> None:
    doc = repair_document(_document())
    assert "repairs_failed" not in doc.metadata and "degraded" not in doc.metadata


def test_skipped_repairs_are_not_run_and_unknown_names_are_refused() -> None:
    doc = repair_document(_document(), skip={"hyphens_joined"})
    assert "hyphens_joined" not in doc.metadata["repairs"]
    assert "implemen-\ntation" in doc.markdown
    with pytest.raises(ValueError, match="unknown repairs"):
        repair_document(_document(), skip={"no_such_repair"})


def test_repairs_off_are_read_from_the_environment_and_checked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAG_ASSETS_REPAIRS_OFF", "hyphens_joined, heading_levels")
    assert Settings.from_env(tmp_path).repairs_off == ["hyphens_joined", "heading_levels"]
    monkeypatch.setenv("RAG_ASSETS_REPAIRS_OFF", "hyphens_joined,heading_level")
    with pytest.raises(ValidationError, match=r"unknown repairs \['heading_level'\]"):
        Settings.from_env(tmp_path)


def test_repairs_off_are_part_of_the_normalize_settings_version() -> None:
    def version(off: list[str]) -> str:
        return SHARED["normalize_settings"](
            SimpleNamespace(parser=ParserResource(parsing=ParsingConfig(repairs_off=off)))
        ).version

    assert version([]) != version(["tables_merged"]) != version(["heading_levels"])
    assert version(["tables_merged", "heading_levels"]) == version(
        ["heading_levels", "tables_merged"]
    )


def _stated(text: str, level: int) -> DocumentElement:
    kind = "title" if level == 1 else "heading"
    return _element(kind, f"{'#' * level} {text}", level=level, metadata={LEVEL_STATED: True})


def test_a_repair_that_rewrites_a_stated_heading_is_undone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def reword(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
        first = elements[0].model_copy(update={"text": "# Rewritten", "level": 2})
        return [first, *elements[1:]], 1

    swapped = tuple((n, reword if n == "heading_levels" else r) for n, r in REPAIRS)
    monkeypatch.setattr(repairs, "REPAIRS", swapped)
    doc = repair_document(doc_from_elements([_stated("Guide", 1), _element("paragraph", "x")]))
    assert doc.elements[0].text == "# Guide" and doc.elements[0].level == 1
    assert doc.metadata["repairs_failed"]["heading_levels"].startswith("StatedStructureChanged")


def test_stated_headings_are_never_merged_or_reworded() -> None:
    """`# Appendix A` over `## Table 4 Notes` as the author wrote them: two headings, their
    levels and words kept."""
    elements = [
        _stated("Appendix A", 1),
        _stated("Table 4 Notes", 2),
        _element("paragraph", "Notes on the table."),
        _stated("Art icle 3", 2),
        _element("paragraph", "The inform ation is kept; information is spelt whole here."),
    ]
    doc = repair_document(doc_from_elements(elements))
    assert [(e.text, e.level) for e in doc.headings()] == [
        ("# Appendix A", 1),
        ("## Table 4 Notes", 2),
        ("## Art icle 3", 2),
    ]
    assert "The information is kept" in doc.markdown
    assert "repairs_failed" not in doc.metadata


def test_markdown_headings_keep_their_text_and_levels_end_to_end(tmp_path: Path) -> None:
    from rag_assets.parsers.routing import ParserRouter
    from rag_assets.parsing import parse_file

    source = tmp_path / "notes.md"
    source.write_text(
        "# Appendix A\n\n## Table 4 Notes\n\nNotes on the table.\n\n## 1\n\n### Scope\n\nText.\n",
        encoding="utf-8",
    )
    doc = parse_file(source, ParserRouter()).document
    assert [(e.text.lstrip("# "), e.level) for e in doc.headings()] == [
        ("Appendix A", 1),
        ("Table 4 Notes", 2),
        ("1", 2),
        ("Scope", 3),
    ]


# --- optional steps of Layer 3 -------------------------------------------------------------


def _counter() -> TokenCounter:
    return ApproxTokenCounter()


def test_template_scoring_that_raises_leaves_the_default_template(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(select, "_auto", _raise)
    choice = select.choose_template(_document(), "auto")
    assert choice.template == "semantic"
    assert choice.degraded == ("template scoring skipped (RuntimeError: injected failure)",)


def test_an_llm_choice_that_raises_leaves_the_scored_choice() -> None:
    broken_client = SimpleNamespace()  # no settings, no chat: any call on it raises
    choice = select.choose_template(_document(), "auto", llm=broken_client)
    assert choice.template == select.choose_template(_document(), "auto").template
    assert choice.degraded[0].startswith("template choice by LLM skipped (AttributeError")


def _articles():
    paragraphs = [
        "Article 1 Scope. This law applies to every employer in the territory.",
        "Article 2 Terms. A worker is anyone employed under a contract.",
        "Article 3 Duties. Under Article 1 of this Law, employers keep records.",
    ]
    return doc_from_elements([_element("paragraph", text) for text in paragraphs])


def test_article_openings_that_raise_leave_chunks_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template = build_template("clauses")
    whole = template.chunk(_articles(), _counter())
    monkeypatch.setattr(template_base, "cited_context", _raise)
    template = build_template("clauses")
    chunks = template.chunk(_articles(), _counter())
    assert [c.text for c in chunks] == [c.text for c in whole]
    assert any(c.context_text != w.context_text for c, w in zip(chunks, whole, strict=True))
    assert template.failures.notes() == [
        "article openings skipped (RuntimeError: injected failure)"
    ]


def _spec_document():
    figure = _element("figure", "![Figure 1](figure-1.png)", page_start=2, page_end=2)
    return doc_from_elements(
        [
            _element("heading", "# 1 Overview", level=1),
            _element("paragraph", "The controller is shown in Figure 1, see Section 2."),
            figure,
            _element("caption", "Figure 1: Block diagram", page_start=2, page_end=2),
            _element("heading", "# 2 Registers", level=1, page_start=2, page_end=2),
            _element("paragraph", "Each register is 32 bits wide.", page_start=2, page_end=2),
        ]
    )


@pytest.mark.parametrize(
    ("target", "step"),
    [("find_figure", "figure placeholders"), ("build_structure", "cross-references")],
)
def test_spec_steps_that_raise_leave_the_rest_of_the_chunks(
    target: str, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = build_template("spec").chunk(_spec_document(), _counter())
    monkeypatch.setattr(spec, target, _raise)
    template = build_template("spec")
    chunks = template.chunk(_spec_document(), _counter())
    assert template.failures.notes() == [f"{step} skipped (RuntimeError: injected failure)"]
    body = [c.text for c in whole if c.chunk_type != "figure"]
    assert [c.text for c in chunks if c.chunk_type != "figure"] == body
    if step == "figure placeholders":
        assert any(c.chunk_type == "figure" for c in whole)
        assert not any(c.chunk_type == "figure" for c in chunks)


def test_vision_tables_that_raise_leave_the_parsers_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pymupdf

    from rag_assets.tables import vision
    from rag_assets.tables.cache import VisionCache
    from rag_assets.tables.structure import structure_markdown
    from rag_assets_tests.support.builders import table

    pdf = tmp_path / "t.pdf"
    with pymupdf.open() as out:
        out.new_page()
        out.save(pdf)
    doc = doc_from_elements([table([["Field", "Bits"], ["Timeout", "15:8"]], 1)])
    rows = structure_markdown(doc)
    client = SimpleNamespace(settings=SimpleNamespace(vision_enabled=True, vision_model="m"))
    monkeypatch.setattr(vision, "_read_tables", _raise)
    outcome = vision.vision_markdown(doc, pdf, rows, client, VisionCache(tmp_path / "cache"))
    assert [r.markdown for r in outcome.tables] == [r.markdown for r in rows]
    assert outcome.degraded == ["vision tables skipped (RuntimeError: injected failure)"]


# --- through Dagster: the document lands degraded ----------------------------------------


def test_a_failed_repair_lands_the_document_degraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag_assets.runner.outcomes import run_outcome

    monkeypatch.setattr(repairs, "REPAIRS", _broken("split_words_joined"))
    source = tmp_path / "guide.md"
    source.write_text("# Guide\n\n## Scope\n\nThe guide covers set-up.\n", encoding="utf-8")
    result, relative = materialize_file(source, tmp_path / "data")
    assert result.success
    (materialization,) = result.asset_materializations_for_node("normalized_documents")
    note = "repair split_words_joined skipped (RuntimeError: injected failure)"
    assert materialization.metadata["degraded"].value == [note]
    assert materialization.metadata["repairs_failed"].value == {
        "split_words_joined": "RuntimeError: injected failure"
    }
    outcome = run_outcome(partition_key_for(relative), relative, [result])
    assert outcome.degraded and f"degraded: {note}" in outcome.summary()


def test_parse_lists_what_was_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag_assets.cli import main

    monkeypatch.setattr(repairs, "REPAIRS", _broken("heading_levels"))
    source = tmp_path / "guide.md"
    source.write_text("# Guide\n\nText.\n", encoding="utf-8")
    assert main(["parse", str(source)]) == 0
    listing = capsys.readouterr().out
    assert "# degraded: repair heading_levels skipped (RuntimeError: injected failure)" in listing


def test_the_repairs_settings_accept_are_the_repairs_that_run() -> None:
    from rag_assets.normalize.repairs import REPAIRS
    from rag_assets.settings.repairs import REPAIR_NAMES

    assert tuple(name for name, _ in REPAIRS) == REPAIR_NAMES
