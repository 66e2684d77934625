"""Every chunk records the titles its section goes by; a document's first chunk lists them all."""

from __future__ import annotations

import json

from rag_assets.chunking import chunk_document
from rag_assets.templates.sections import (
    DOCUMENT_SECTIONS_KEY,
    MAX_DOCUMENT_SECTIONS_JSON,
    TITLES_KEY,
    section_titles,
    with_document_sections,
)
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import doc_from_pages


def test_every_heading_and_the_tables_title_cell() -> None:
    table = "| CONSOLIDATED BALANCE SHEETS |  |\n|---|---|\n| Total assets | 1,204 |"
    assert section_titles(["Item 8", "**Statements**", "Item 8"], table) == {
        TITLES_KEY: ["Item 8", "Statements", "CONSOLIDATED BALANCE SHEETS"]
    }


def test_a_cell_with_a_figure_or_no_words_titles_nothing() -> None:
    for first_cell in ("2023", "$ 1,204", "Q2 2023", "—", ""):
        table = f"| {first_cell} | x |\n|---|---|\n| a | 1 |"
        assert section_titles([], table) == {}, first_cell
    assert section_titles([], "No table here.") == {}
    assert section_titles(["x" * 400], "") == {}  # a sentence heading nothing by name


def test_a_title_holds_no_control_character() -> None:
    # The search quotes titles into its filter, which refuses control characters.
    assert section_titles(["Cash\x85Flows\x00 Statement"], "") == {
        TITLES_KEY: ["Cash Flows Statement"]
    }


def test_a_documents_first_chunk_lists_its_titles_once_each_in_reading_order() -> None:
    pages = [
        [("heading", "## Host Control Register"), ("paragraph", "Bits 15:8 select the mode.")],
        [
            ("heading", "## Power Management"),
            ("paragraph", "The device sleeps after 10 ms."),
            ("table", "| Power States |  |\n|---|---|\n| D0 | on |\n| D3 | off |"),
        ],
        [("heading", "## Host Control Register"), ("paragraph", "Bit 0 resets the host.")],
    ]
    doc = doc_from_pages(pages, doc_id="spec", source_path="spec.pdf")
    rows = chunk_document(doc, "auto", {"min_tokens": 0}, ApproxTokenCounter()).rows
    assert rows[0].metadata[DOCUMENT_SECTIONS_KEY] == [
        "Host Control Register",
        "Power Management",
        "Power States",
    ]
    assert all(DOCUMENT_SECTIONS_KEY not in row.metadata for row in rows[1:])
    assert {tuple(row.metadata[TITLES_KEY]) for row in rows} == {
        ("Host Control Register",),
        ("Power Management", "Power States"),  # the section's text and its table in one
    }


def test_a_long_documents_list_stops_at_its_size_limit() -> None:
    pages = [[("heading", f"## Section {n:05d} of the manual"), ("paragraph", "Text.")]
             for n in range(1000)]  # fmt: skip
    doc = doc_from_pages(pages, doc_id="manual", source_path="manual.pdf")
    rows = chunk_document(doc, "auto", {"min_tokens": 0}, ApproxTokenCounter()).rows
    listed = rows[0].metadata[DOCUMENT_SECTIONS_KEY]
    assert 0 < len(listed) < 1000
    assert len(json.dumps(listed)) <= MAX_DOCUMENT_SECTIONS_JSON
    assert listed[0] == "Section 00000 of the manual"


def test_the_limit_counts_non_latin_titles_as_stored() -> None:
    pages = [
        [("heading", f"## 第{n}条 劳动合同的订立与履行"), ("paragraph", "内容。")]
        for n in range(2000)
    ]
    doc = doc_from_pages(pages, doc_id="law", source_path="law.pdf")
    rows = chunk_document(doc, "auto", {"min_tokens": 0}, ApproxTokenCounter()).rows
    assert len(json.dumps(rows[0].metadata[DOCUMENT_SECTIONS_KEY])) <= MAX_DOCUMENT_SECTIONS_JSON


def test_no_rows_no_titles() -> None:
    assert with_document_sections([]) == []
