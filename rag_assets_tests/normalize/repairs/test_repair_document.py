"""IR repairs: each one on hand-built IR (exact expectations), then on every adapter's real output.

Real output: Docling's own exports of two PDFs (flat heading levels, furniture), the PyMuPDF
path on a 16-page table and a Chinese standard, a generated PDF with running furniture and a
table over a page break, and DOCX/Markdown documents that must come through untouched.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rag_assets.contracts.ir import (
    BBox,
    DocumentElement,
    StandardizedDocument,
    TableCell,
    TableData,
)
from rag_assets.normalize.adapt import to_ir
from rag_assets.normalize.docling_adapter import docling_to_ir
from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.normalize.repairs import repair_document
from rag_assets.normalize.repairs.furniture import retype_furniture
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED, recover_heading_levels
from rag_assets.normalize.repairs.tables import merge_continued_tables
from rag_assets.normalize.repairs.text import (
    join_hyphenated,
    join_split_words,
    remove_cjk_spaces,
)
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets_tests.support.builders import doc_from_elements, materialize_file

FURNITURE = ("page_header", "page_footer")
BODY_BOX: BBox = (72.0, 100.0, 520.0, 700.0)
HAN_SPACE_HAN = re.compile(r"([\u4e00-\u9fff])[ \u3000]+([\u4e00-\u9fff])")


# --- hand-built IR -------------------------------------------------------------------------


def heading(text: str, level: int = 2, page: int = 1, bbox: BBox | None = None) -> DocumentElement:
    return DocumentElement(
        type="heading",
        text=f"{'#' * level} {text}",
        level=level,
        page_start=page,
        page_end=page,
        bbox=bbox,
    )


def para(text: str, page: int = 1, bbox: BBox | None = BODY_BOX) -> DocumentElement:
    return DocumentElement(type="paragraph", text=text, page_start=page, page_end=page, bbox=bbox)


def table(
    rows: list[list[str]],
    page: int,
    header_rows: int = 1,
    caption: str | None = None,
    bbox: BBox = (72.0, 400.0, 520.0, 780.0),
) -> DocumentElement:
    data = TableData(
        num_rows=len(rows),
        num_cols=len(rows[0]),
        cells=[
            TableCell(row=r, col=c, text=text, is_header=r < header_rows)
            for r, row in enumerate(rows)
            for c, text in enumerate(row)
        ],
        header_rows=header_rows,
        caption=caption,
    )
    return DocumentElement(
        type="table",
        text=table_to_markdown(data),
        page_start=page,
        page_end=page,
        bbox=bbox,
        table=data,
    )


def levels(elements: list[DocumentElement]) -> list[tuple[int | None, str]]:
    return [(e.level, e.text) for e in elements if e.type == "heading"]


# --- heading levels ---------------------------------------------------------------------------


def test_flat_decimal_levels_follow_numbering_below_the_title() -> None:
    title = DocumentElement(type="title", text="# Widget Handbook", level=1)
    flat = [
        title,
        heading("1 Introduction"),
        heading("1.1 Scope"),
        heading("1.1.1 Terms"),
        heading("Notes"),
        heading("2 Use"),
        heading("References"),
    ]
    out, changed = recover_heading_levels(flat)
    assert levels(out) == [
        (2, "## 1 Introduction"),
        (3, "### 1.1 Scope"),
        (4, "#### 1.1.1 Terms"),
        (5, "##### Notes"),
        (2, "## 2 Use"),
        (2, "## References"),
    ]
    assert changed == 3
    assert out[0] == title


def test_without_a_title_7_is_level_1_and_7_4_1_level_3() -> None:
    out, changed = recover_heading_levels(
        [heading("7 Parking"), heading("7.4 Sizes"), heading("7.4.1 Lanes"), heading("7.5 Signs")]
    )
    assert [e.level for e in out] == [1, 2, 3, 2]
    assert changed == 2  # 7.4 and 7.5 were at level 2 already
    # A page of sections 7.4 ... with no bare 7: depth still decides.
    out, _ = recover_heading_levels(
        [heading("7.4 Sizes", 1), heading("7.4.1 Lanes", 1), heading("7.5 Signs", 1)]
    )
    assert [e.level for e in out] == [2, 3, 2]


def test_cjk_chapter_section_article() -> None:
    out, _ = recover_heading_levels(
        [
            heading("第一章 总则"),
            heading("第一节 范围"),
            heading("第一条 目的"),
            heading("第二条 定义"),
            heading("第二节 术语"),
            heading("第三条 用语"),
            heading("第二章 附则"),
        ]
    )
    assert [e.level for e in out] == [1, 2, 3, 3, 2, 3, 1]


def test_chapter_section_article_order_comes_from_the_document() -> None:
    gdpr = [
        heading("CHAPTER I General"),
        heading("Article 1 Subject"),
        heading("CHAPTER III Rights"),
        heading("Section 1 Transparency"),
        heading("Article 12 Information"),
        heading("Section 2 Access"),
        heading("Article 15 Right of access"),
    ]
    assert [e.level for e in recover_heading_levels(gdpr)[0]] == [1, 3, 1, 2, 3, 2, 3]
    constitution = [
        heading("Article I Legislature"),
        heading("Section 1 Powers"),
        heading("Section 2 House"),
        heading("Article II Executive"),
        heading("Section 1 President"),
    ]
    assert [e.level for e in recover_heading_levels(constitution)[0]] == [1, 2, 2, 1, 2]


def test_topic_letters_above_numbered_questions() -> None:
    paren = [
        heading("(A) Background"),
        heading("(1) Why now?"),
        heading("(2) Who pays?"),
        heading("(B) Funding"),
        heading("(1) How much?"),
    ]
    assert [e.level for e in recover_heading_levels(paren)[0]] == [1, 2, 2, 1, 2]
    dotted = [heading("A. Policy"), heading("1. Scope"), heading("2. Cost"), heading("B. Review")]
    assert [e.level for e in recover_heading_levels(dotted)[0]] == [1, 2, 2, 1]


def test_chapter_stands_for_the_first_decimal_depth() -> None:
    out, _ = recover_heading_levels(
        [
            heading("Chapter 3 Design"),
            heading("3.1 Layout"),
            heading("3.1.1 Grid"),
            heading("Chapter 4 Build"),
        ]
    )
    assert [e.level for e in out] == [1, 2, 3, 1]


def test_number_only_heading_front_matter_and_repeated_titles() -> None:
    out, _ = recover_heading_levels(
        [
            heading("Security Guide"),
            heading("Contents"),
            heading("1"),
            heading("Securing data"),
            heading("1.1 Basics"),
            heading("Column mask"),
            heading("2 Roles"),
            heading("Security Guide"),
            heading("About us"),
        ]
    )
    assert [e.level for e in out] == [1, 1, 1, 1, 2, 3, 1, 1, 2]


def test_section_numbers_printed_after_the_title() -> None:
    out, _ = recover_heading_levels(
        [
            heading("이슈와 논점"),
            heading("들어가며 1"),
            heading("현황 2"),
            heading("(1) 법률 개정"),
            heading("(2) 약관"),
            heading("문제점 3"),
            heading("(1) 해석"),
            heading("4"),
            heading("맺으며"),
        ]
    )
    assert [e.level for e in out] == [1, 1, 1, 2, 2, 1, 2, 1, 1]


def test_levels_that_agree_with_numbering_are_left_alone() -> None:
    docx = [
        DocumentElement(type="title", text="# Test Document", level=1),
        heading("1 Section", 2),
        heading("1.1 Section", 3),
        heading("1.2.1 Section", 4),
        heading("REFERENCES", 3),
    ]
    assert recover_heading_levels(docx) == (docx, 0)
    one_style = [heading("1 Intro"), heading("Background"), heading("2 Method")]
    assert recover_heading_levels(one_style) == (one_style, 0)
    unnumbered = [heading("Deployment", 1), heading("Running it", 2)]
    assert recover_heading_levels(unnumbered) == (unnumbered, 0)
    # A lone line that looks numbered ("3.11." from a date) is no numbering pattern.
    stray = [
        heading("(1) Scope", 1),
        heading("3.11. declared a pandemic", 1),
        heading("(2) Cost", 1),
    ]
    assert recover_heading_levels(stray) == (stray, 0)


def test_stated_levels_are_never_changed_guessed_ones_are_filled() -> None:
    """Markup states levels ("Header 2" is no section number); a flat PDF guess is filled in."""
    stated = [
        heading("Header 1", 1).model_copy(update={"metadata": {LEVEL_STATED: True}}),
        heading("Header 2", 2).model_copy(update={"metadata": {LEVEL_STATED: True}}),
        heading("Header 3", 3).model_copy(update={"metadata": {LEVEL_STATED: True}}),
    ]
    assert recover_heading_levels(stated) == (stated, 0)
    mixed = [
        heading("Chapter 1 Intro", 1).model_copy(update={"metadata": {LEVEL_STATED: True}}),
        heading("1.1 Foo", 1),
        heading("1.1.1 Bar", 1),
        heading("Chapter 2 Scope", 2).model_copy(update={"metadata": {LEVEL_STATED: True}}),
    ]
    out, changed = recover_heading_levels(mixed)
    assert ([e.level for e in out], changed) == ([1, 2, 3, 2], 2)


def test_trailing_numbers_count_only_from_one() -> None:
    products = [heading("Overview"), heading("Windows 10"), heading("Windows 11"), heading("Notes")]
    assert recover_heading_levels(products) == (products, 0)


# --- page furniture -------------------------------------------------------------------------


def paged_report() -> list[DocumentElement]:
    """Three pages: label `E-N` and a date at the top, `- N -` and a repeated line at the bottom."""
    elements = []
    for page, word in zip((1, 2, 3), ("one", "two", "three"), strict=True):
        elements += [
            para(f"E-{page}", page, (500.0, 20.0, 530.0, 30.0)),
            para("2026-05-15", page, (72.0, 34.0, 140.0, 44.0)),
            para(f"Body of page {word}.", page),
            para("ACME Confidential", page, (72.0, 800.0, 200.0, 810.0)),
            para(f"- {page} -", page, (280.0, 815.0, 310.0, 825.0)),
        ]
    # A signed letter's date: the page's last body line, but far from the footer.
    elements.insert(8, para("2026-05-16", 2, (72.0, 720.0, 140.0, 730.0)))
    return elements


def test_page_labels_dates_and_repeated_lines_become_furniture() -> None:
    out, retyped = retype_furniture(paged_report())
    kinds = [(e.type, e.text) for e in out if e.page_start == 2]
    assert kinds == [
        ("page_header", "E-2"),
        ("page_header", "2026-05-15"),
        ("paragraph", "Body of page two."),
        ("paragraph", "2026-05-16"),
        ("page_footer", "ACME Confidential"),
        ("page_footer", "- 2 -"),
    ]
    assert retyped == 12
    assert len(out) == len(paged_report())  # retyped, never deleted


@pytest.mark.parametrize("label", ["Page 3 of 10", "3", "- 3 -", "iii", "E-2", "第 3 页"])
def test_page_label_forms(label: str) -> None:
    elements = [para("Body.", 1), para(label, 1, (280.0, 815.0, 310.0, 825.0))]
    assert [e.type for e in retype_furniture(elements)[0]] == ["paragraph", "page_footer"]


def test_what_is_not_furniture() -> None:
    lone_date = [para("2026-05-15", 1, (72.0, 20.0, 140.0, 30.0)), para("Body.", 1)]
    chapter_number = [heading("1", bbox=(500.0, 20.0, 530.0, 60.0)), para("Body.", 1)]
    mid_page_number = [
        para("Top.", 1, (72.0, 20.0, 520.0, 30.0)),
        para("3", 1),
        para("Bottom.", 1, (72.0, 800.0, 520.0, 810.0)),
    ]
    no_layout = [para("E-2", 1, None), para("Body.", 1, None)]
    # A chapter number (or a section badge) just above the body, below the page margin.
    below_margin = [
        para("1", 1, (500.0, 93.0, 522.0, 130.0)),
        para("Body.", 1, (72.0, 150.0, 520.0, 700.0)),
        DocumentElement(type="page_footer", text="Guide", bbox=(72.0, 790.0, 200.0, 800.0)),
    ]
    # Section badges that happen to repeat: "2" atop page 2's section, "4" atop page 4's.
    badges = [
        el
        for page in (2, 4)
        for el in (
            para(str(page), page, (73.0, 94.0, 81.0, 108.0)),
            heading(f"Section {page}", 1, page, (99.0, 95.0, 235.0, 108.0)),
            para(f"Body {'x' * page}.", page, (72.0, 150.0, 520.0, 825.0)),
        )
    ]
    for elements in (lone_date, chapter_number, mid_page_number, no_layout, below_margin, badges):
        assert retype_furniture(elements) == (elements, 0)


def test_repeated_running_heading_is_retyped_without_its_marks() -> None:
    elements = []
    for page, body in ((1, "First body."), (2, "Second body.")):
        elements += [heading("Widget Spec", 3, page, (72.0, 20.0, 200.0, 30.0)), para(body, page)]
    out, retyped = retype_furniture(elements)
    assert [(e.type, e.text, e.level) for e in out[::2]] == [
        ("page_header", "Widget Spec", None)
    ] * 2
    assert retyped == 2


# --- continued tables -----------------------------------------------------------------------

HEADER = ["Offset", "Name", "Reset"]


def rows(start: int, stop: int) -> list[list[str]]:
    return [[f"0x{i:02X}", f"REG{i}", str(i)] for i in range(start, stop)]


def test_table_continuing_with_repeated_header_is_one_table() -> None:
    elements = [
        para("Intro."),
        table([HEADER, *rows(0, 3)], 1, caption="Table 2 Registers"),
        DocumentElement(type="page_footer", text="- 1 -", page_start=1, page_end=1),
        DocumentElement(type="page_header", text="Spec", page_start=2, page_end=2),
        DocumentElement(type="caption", text="Table 2 (continued)", page_start=2, page_end=2),
        table([HEADER, *rows(3, 5)], 2, bbox=(72.0, 60.0, 520.0, 300.0)),
        para("After.", 2),
    ]
    out, merged = merge_continued_tables(elements)
    assert merged == 1
    assert [e.type for e in out] == [
        "paragraph",
        "table",
        "page_footer",
        "page_header",
        "caption",
        "paragraph",
    ]
    joined = out[1]
    assert joined.table.grid() == [HEADER, *rows(0, 5)]
    assert (joined.page_start, joined.page_end, joined.table.header_rows) == (1, 2, 1)
    assert joined.text == table_to_markdown(joined.table)
    assert joined.table.caption == "Table 2 Registers"
    assert joined.metadata["continued_on_pages"] == [2]


def test_caption_below_the_first_part_names_the_table() -> None:
    caption = DocumentElement(type="caption", text="Table 4 Registers", page_start=1, page_end=1)
    continued = DocumentElement(type="caption", text="Table 4 (cont.)", page_start=2, page_end=2)
    other = DocumentElement(type="caption", text="Table 5 Fields", page_start=2, page_end=2)
    first, second = table([HEADER, *rows(0, 3)], 1), table(rows(3, 5), 2, header_rows=0)
    assert merge_continued_tables([first, caption, continued, second])[1] == 1
    assert merge_continued_tables([first, caption, other, second])[1] == 0


def test_parts_whose_data_row_was_taken_for_a_header_chain_into_one() -> None:
    # The PyMuPDF adapter calls every part's first row a header; on pages 2 and 3 it is data.
    parts = [table([HEADER, *rows(0, 3)], 1), table(rows(3, 6), 2), table(rows(6, 8), 3)]
    out, merged = merge_continued_tables(parts)
    assert merged == 2 and len(out) == 1
    assert out[0].table.grid() == [HEADER, *rows(0, 8)]
    assert [c.row for c in out[0].table.cells if c.is_header] == [0, 0, 0]
    assert (out[0].page_end, out[0].metadata["continued_on_pages"]) == (3, [2, 3])


@pytest.mark.parametrize(
    "between, second",
    [
        ([], table([["A", "B"], ["1", "2"]], 2)),  # other column count
        ([], table(rows(3, 5), 3)),  # skips a page
        ([para("Text between.", 2)], table(rows(3, 5), 2)),
        ([], table([["Field", "Meaning", "Notes"], *rows(3, 5)], 2)),  # its own header
        (
            [DocumentElement(type="caption", text="Table 3 Other", page_start=2, page_end=2)],
            table(rows(3, 5), 2, header_rows=0),
        ),
        ([], table(rows(3, 5), 2, bbox=(600.0, 60.0, 800.0, 300.0))),  # another column band
    ],
)
def test_tables_that_are_not_continuations(
    between: list[DocumentElement], second: DocumentElement
) -> None:
    elements = [table([HEADER, *rows(0, 3)], 1, caption="Table 2 Registers"), *between, second]
    assert merge_continued_tables(elements) == (elements, 0)


# --- broken words ---------------------------------------------------------------------------


def test_hyphenated_line_breaks_joined_compounds_kept() -> None:
    elements = [
        para("The implemen-\ntation is a well-known design."),
        para("A well-\nknown trick; Foo-\nBar and x-\n1 stay; pre-\nprocessing runs."),
        DocumentElement(type="code", text="a = b-\nc"),
    ]
    out, joined = join_hyphenated(elements)
    assert [e.text for e in out] == [
        "The implementation is a well-known design.",
        "A well-known trick; Foo-\nBar and x-\n1 stay; preprocessing runs.",
        "a = b-\nc",
    ]
    assert joined == 3


@pytest.mark.parametrize(
    ("broken", "whole"),
    [
        ("Die Verarbei-\ntung", "Die Verarbeitung"),
        ("die Lö-\nschung", "die Löschung"),
        ("zu ver-\nändern", "zu verändern"),
        ("une réfé-\nrence", "une référence"),
        ("обра-\nботка", "обработка"),
        ("the rep\u00ad\nresentative", "the representative"),  # soft hyphen
        ("technolo \u00ad\ngically neutral", "technologically neutral"),  # letter-spaced
        ("inter\u00ad\nNational", "interNational"),  # a soft hyphen joins whatever follows
        ("Daten\u00ac\nschutz", "Datenschutz"),  # the not sign of some extractions and OCR
        ("imple\u2010\n  mentation", "implementation"),  # U+2010, the next line indented
        ("Verarbei\u00adtung im Satz", "Verarbeitung im Satz"),  # soft hyphen inside a line
    ],
)
def test_every_way_a_word_is_hyphenated_at_a_line_end(broken: str, whole: str) -> None:
    out, joined = join_hyphenated([para(broken)])
    assert (out[0].text, joined) == (whole, 1)


@pytest.mark.parametrize(
    "kept",
    [
        "die EU-\nDatenschutzverordnung",  # a capital after a hard hyphen: a compound
        "Ein- und\nAusgang",
        "the 2-\n3 range",
        "Zeile -\nweiter",  # a dash after a space
    ],
)
def test_hyphens_that_are_no_line_break_of_a_word(kept: str) -> None:
    assert join_hyphenated([para(kept)]) == ([para(kept)], 0)


def test_a_join_keeps_each_line_on_its_page() -> None:
    steps = DocumentElement(
        type="list",
        text="- Step one is the ini-\n  tialisation\n- Step two\n- Step three is the con-\n  figuration",
        page_start=1,
        page_end=2,
        metadata={"line_pages": [[0, 1], [3, 2]]},
    )
    (out,), joined = join_hyphenated([steps])
    assert joined == 2
    assert out.text.split("\n") == [
        "- Step one is the initialisation",
        "- Step two",
        "- Step three is the configuration",
    ]
    assert out.metadata["line_pages"] == [[0, 1], [2, 2]]
    assert out.pages_of(out.text.index("three"), len(out.text)) == (2, 2)


def test_split_words_joined_page_by_page_in_a_list_that_crosses_a_page_break() -> None:
    # The words are learnt from the same page slices the join then fixes: a list continued on
    # the next page once took the whole document down with a KeyError.
    steps = DocumentElement(
        type="list",
        text="- Set the inform ation field\n- Read it\n- Clear the inform ation field",
        page_start=1,
        page_end=2,
        metadata={"line_pages": [[0, 1], [2, 2]]},
    )
    out, joined = join_split_words([steps, para("The information is kept.")])
    assert out[0].text.split("\n") == [
        "- Set the information field",
        "- Read it",
        "- Clear the information field",
    ]
    assert joined == 2
    assert out[0].metadata["line_pages"] == [[0, 1], [2, 2]]


def test_words_split_by_spaces_joined_where_the_document_spells_them_whole() -> None:
    elements = [
        heading("Art icle 3"),
        heading("Territor ial scope", bbox=None),  # text without layout (a .txt of a PDF)
        para("The inform ation on its territorial scope. An other article, with in reach."),
        para("Information is kept; interm ediar y bodies act as intermediary bodies."),
        para("Another article within the territory; the rest of other articles stand."),
        para("An article in the law is one with a scope."),
        para("Visual Studio runs VisualStudio.exe, as VisualStudio.dll says."),
        para("A rare form ula is joined; a unique splitt ing is joined."),
        para("中 华 inform ation 人民", bbox=None),
        DocumentElement(type="code", text="inform ation = 1"),
        table([["Art icle", "Value"], ["x", "y"]], 1),
    ]
    out, joined = join_split_words(elements)
    assert [e.text for e in out[:9]] == [
        "## Article 3",
        "## Territorial scope",
        # Both `an` and `other`, `with` and `in` stand alone elsewhere: real words, kept apart.
        "The information on its territorial scope. An other article, with in reach.",
        "Information is kept; intermediary bodies act as intermediary bodies.",
        "Another article within the territory; the rest of other articles stand.",
        "An article in the law is one with a scope.",
        # A capital opens a word: two names, not a split of the identifier.
        "Visual Studio runs VisualStudio.exe, as VisualStudio.dll says.",
        # `splitt` is no English word, `splitting` is one; with five such clear splits the
        # document is letter-spaced, so `form ula` (both in the word list) is a split too.
        "A rare formula is joined; a unique splitting is joined.",
        "中 华 information 人民",
    ]
    assert out[9].text == "inform ation = 1"
    assert out[10].table.grid()[0] == ["Article", "Value"]
    assert out[10].text == table_to_markdown(out[10].table)
    assert joined == 8
    again, rejoined = join_split_words(out)
    assert again == out and rejoined == 0


def test_outside_letter_spaced_documents_a_run_of_english_words_stays_apart() -> None:
    elements = [
        para("A rare form ula stays split in a clean text, the rest is prose."),
        para("One splitt ing is joined: splitt is no English word."),
    ]
    out, joined = join_split_words(elements)
    assert [e.text for e in out] == [
        "A rare form ula stays split in a clean text, the rest is prose.",
        "One splitting is joined: splitt is no English word.",
    ]
    assert joined == 1


def test_a_letter_spaced_document_is_joined_even_where_it_never_spells_the_word_whole() -> None:
    # As a EUR-Lex PDF's text layer splits them, the same way every time.
    elements = [
        heading("Article 33 Notification to the super visor y author ity"),
        para("The controller shall notify the super visor y author ity whic h is competent."),
        para("It shall take appropr iate measures in the context of emplo yment and protect io n."),
        para("A super helmet is a part of it; an authority on pottery works with in reach."),
        para("He worked with clay in the studio; the other part was his."),
        # `sown` and `ef` are English words, yet a possessive and two variables.
        para("The card's own slot holds e f and g."),
        # `carryout` is a word too, but `out` stands alone: a phrase; `refer` and `red` never do.
        para("Controllers carry out checks, out of reach, as refer red to above."),
        para("There is the re\u2011use of data."),  # a non-breaking hyphen: `re‑use`
    ]
    out, joined = join_split_words(elements)
    assert [e.text for e in out] == [
        "## Article 33 Notification to the supervisory authority",
        "The controller shall notify the supervisory authority which is competent.",
        "It shall take appropriate measures in the context of employment and protection.",
        # Only English words, each standing alone elsewhere: two words, kept apart.
        "A super helmet is a part of it; an authority on pottery works with in reach.",
        "He worked with clay in the studio; the other part was his.",
        "The card's own slot holds e f and g.",
        "Controllers carry out checks, out of reach, as referred to above.",
        "There is the re\u2011use of data.",
    ]
    assert joined == 9


def test_spaces_between_cjk_characters_removed_latin_spacing_kept() -> None:
    cell_rows = [["公路 技术 等级", "车道数"], ["高速 公路", "八"]]
    elements = [
        para("中 华 人 民 共和国， 使用 Python 语言和 3 种 工具。"),
        para("第一条 为了完善制度，第 7.9 条 服务设施。"),
        para("김 창 호 코로나-19 관련"),
        para("中 华", bbox=None),  # no layout: the source wrote that space
        table(cell_rows, 1),
    ]
    out, removed = remove_cjk_spaces(elements)
    assert [e.text for e in out[:4]] == [
        "中华人民共和国，使用 Python 语言和 3 种工具。",
        "第一条 为了完善制度，第 7.9 条 服务设施。",
        "김 창 호 코로나-19 관련",
        "中 华",
    ]
    assert out[4].table.grid() == [["公路技术等级", "车道数"], ["高速公路", "八"]]
    assert out[4].text == table_to_markdown(out[4].table)
    assert removed == 9


# --- the whole pass ---------------------------------------------------------------------------


def test_repair_document_counts_and_keeps_furniture_out_of_the_markdown() -> None:
    doc = doc_from_elements(
        [
            heading("1 Scope", bbox=(72.0, 60.0, 300.0, 80.0)),
            heading("1.1 Terms", bbox=BODY_BOX),
            para("The implemen-\ntation runs."),
            table([HEADER, *rows(0, 2)], 1),
            para("- 1 -", 1, (280.0, 815.0, 310.0, 825.0)),
            table(rows(2, 4), 2, bbox=(72.0, 40.0, 520.0, 200.0)),
            para("- 2 -", 2, (280.0, 815.0, 310.0, 825.0)),
        ]
    )
    repaired = repair_document(doc)
    assert repaired.metadata["repairs"] == {
        "hyphens_joined": 1,
        "split_words_joined": 0,
        "cjk_spaces_removed": 0,
        "furniture_restored": 0,
        "furniture_retyped": 2,
        "tables_merged": 1,
        "heading_lines_split": 0,
        "heading_levels": 1,
        "furniture_dropped": 2,
    }
    assert "- 1 -" not in repaired.markdown and "- 2 -" not in repaired.markdown
    for element in repaired.elements:
        if element.type in FURNITURE:
            assert element.start_char == element.end_char
        else:
            assert repaired.markdown[element.start_char : element.end_char] == element.text
    assert repaired.markdown.startswith("# 1 Scope\n\n## 1.1 Terms\n\nThe implementation runs.")
    again = repair_document(repaired)
    assert again.elements == repaired.elements and again.markdown == repaired.markdown
    assert again.metadata["repairs"] == {
        **{k: 0 for k in repaired.metadata["repairs"]},
        "furniture_dropped": 2,
    }


# --- real output: Docling ---------------------------------------------------------------------

DECIMAL = re.compile(r"^(\d+(?:\.\d+)*)(?:\s|$)")


def docling_groundtruth(shared_fixtures: Path, stem: str) -> StandardizedDocument:
    parsed = ParsedDocument(
        parser="docling",
        parser_version="groundtruth",
        source_path=str(shared_fixtures / stem),
        file_format="pdf",
        native=json.loads(
            (shared_fixtures / f"{stem}.groundtruth.json").read_text(encoding="utf-8")
        ),
    )
    return docling_to_ir(parsed, doc_id=stem, source_sha256="0" * 64)


def plain(element: DocumentElement) -> str:
    return element.text.lstrip("#").strip()


def assert_nothing_lost(before: StandardizedDocument, after: StandardizedDocument) -> None:
    """Same elements in the same order, same text bar `#` marks: a chapter number and the title
    under it stay two headings."""
    assert [plain(e) for e in before.elements] == [plain(e) for e in after.elements]
    body = [e for e in after.elements if e.type not in FURNITURE]
    assert after.markdown == "\n\n".join(e.text for e in body)


def test_docling_redp5110_levels_agree_with_numbering(shared_fixtures: Path) -> None:
    before = docling_groundtruth(shared_fixtures, "pdf/redp5110_sampled")
    after = to_ir(
        ParsedDocument(
            parser="docling",
            parser_version="gt",
            source_path="redp",
            file_format="pdf",
            native=json.loads(
                (shared_fixtures / "pdf/redp5110_sampled.groundtruth.json").read_text()
            ),
        ),
        doc_id="pdf/redp5110_sampled",
        source_sha256="0" * 64,
    )
    assert {e.level for e in before.headings()} == {2}  # Docling flattens PDF section headers
    assert_nothing_lost(before, after)
    numbered = [(e.level, m[1]) for e in after.headings() if (m := DECIMAL.match(plain(e)))]
    assert len(numbered) == 10
    assert all(level == number.count(".") + 1 for level, number in numbered)
    by_title = {plain(e): e.level for e in after.headings()}
    # The chapter number and its title stay two headings, as the source prints them: `# 1`,
    # then `# Securing and protecting IBM DB2 data` (no repair joins them).
    outline = [e.text for e in after.headings()]
    chapter = outline.index("# 1")
    assert outline[chapter + 1] == "# Securing and protecting IBM DB2 data"
    assert by_title["Contents"] == by_title["Preface"] == 1
    assert all(e.text.startswith("#" * e.level + " ") for e in after.headings())
    assert after.metadata["repairs"] == {
        "hyphens_joined": 0,
        "split_words_joined": 0,
        "cjk_spaces_removed": 0,
        "furniture_restored": 0,
        "furniture_retyped": 0,
        "tables_merged": 0,
        "heading_lines_split": 0,
        "heading_levels": 17,
        "furniture_dropped": 20,
    }
    assert "© Copyright IBM Corp. 2014" not in after.markdown
    assert "© Copyright IBM Corp. 2014" in before.markdown


def test_docling_korean_report_levels_and_running_header(shared_fixtures: Path) -> None:
    before = docling_groundtruth(shared_fixtures, "pdf/normal_4pages")
    after = repair_document(before)
    assert_nothing_lost(before, after)
    outline = [(e.level, plain(e)) for e in after.headings()]
    sections = [title for level, title in outline if level == 1]
    # The last section's number is a heading of its own before its title, as Docling reads it.
    assert sections[2:] == [
        "들어가며 1",
        "코로나-19 관련 보험 현황 2",
        "문제점 3",
        "개선과제 4",
        "5",
        "맺으며",
    ]
    assert all(level == 2 for level, title in outline if title.startswith("("))
    assert sum(title.startswith("(") for _, title in outline) == 11
    # The running header Docling typed on page 2 it missed on page 4.
    assert [(e.type, e.page_start) for e in after.elements if e.text == "이슈와 논점"] == [
        ("page_header", 2),
        ("page_header", 4),
    ]
    assert "\n\n이슈와 논점\n\n" in before.markdown and "\n\n이슈와 논점\n\n" not in after.markdown
    assert after.metadata["repairs"]["heading_levels"] == 8  # `맺으며` is a heading of its own
    assert after.metadata["repairs"]["cjk_spaces_removed"] == 0  # Korean spaces words: kept


# --- real output: PyMuPDF ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pymupdf() -> PyMuPDFParser:
    return PyMuPDFParser()


def pymupdf_ir(parser: PyMuPDFParser, path: Path) -> StandardizedDocument:
    return pymupdf_to_ir(parser.parse(path), doc_id=path.stem, source_sha256="0" * 64)


@pytest.fixture(scope="module")
def warn_report(
    pymupdf: PyMuPDFParser, shared_fixtures: Path
) -> tuple[StandardizedDocument, StandardizedDocument]:
    before = pymupdf_ir(pymupdf, shared_fixtures / "pdf/WARN-Report-for-7-1-2015-to-03-25-2016.pdf")
    return before, repair_document(before)


def test_warn_report_is_one_table_with_every_row_and_one_header(warn_report) -> None:
    before, after = warn_report
    parts = [e.table for e in before.elements if e.type == "table" and e.table.num_cols == 7]
    assert len(parts) == 15  # one per page, as the adapter gives them
    tables = [e for e in after.elements if e.type == "table"]
    assert len(tables) == 2  # the 15-page notice table and the month summary after it
    notices, summary = tables
    assert (notices.page_start, notices.page_end, notices.table.header_rows) == (1, 15, 1)
    grid = notices.table.grid()
    assert grid == [row for part in parts for row in part.grid()]
    assert len(grid) == 634 and grid.count(grid[0]) == 1 and grid[0][0] == "Notice Date"
    assert [c.row for c in notices.table.cells if c.is_header] == [0] * 7
    assert notices.text.count("Notice Date") == 1 and notices.text == table_to_markdown(
        notices.table
    )
    assert (summary.page_start, summary.page_end, summary.table.num_rows) == (15, 16, 11)
    assert summary.table.grid()[-1][:2] == ["Total", "632"]
    assert after.metadata["repairs"]["tables_merged"] == 15


def test_anhui_standard_clauses_tables_and_cjk_spacing(
    pymupdf: PyMuPDFParser, shared_fixtures: Path
) -> None:
    before = pymupdf_ir(
        pymupdf, shared_fixtures / "pdf/issue-336-example_zh_anhui_land_use_standard.pdf"
    )
    after = repair_document(before)
    # This page holds no heading: "7.6" is table 7.6's caption, the clauses are 第 7.9 条 ... text.
    assert after.headings() == []
    captions = [e.text for e in after.elements if e.type == "caption"]
    assert captions[:2] == [
        "表 7.5 停车区用地指标基准值（公顷 / 处）",
        "表 7.6 停车区用地指标调整系数",
    ]
    tables = [e for e in after.elements if e.type == "table"]
    assert [t.table.caption for t in tables[:2]] == captions[:2]
    clauses = [e.text for e in after.elements if e.type == "paragraph" and e.text.startswith("第")]
    assert [c.split(" ", 3)[:3] for c in clauses] == [
        ["第", "7.9", "条"],
        ["第", "7.10", "条"],
        ["第", "7.11", "条"],
    ]
    assert (
        "桥隧养护管理站一般在独立特大桥" in after.markdown
    )  # "桥隧 养护" joined at the line break
    assert "其用地指标按表 7.6 中的系数进行调整" in after.markdown
    assert [m.group() for m in HAN_SPACE_HAN.finditer(after.markdown)] == [
        "条 服",
        "条 公",
        "条 养",
    ]
    assert HAN_SPACE_HAN.search(before.markdown.replace("条 ", "条"))  # the parser did inject some
    assert "安徽省建设用地使用标准" not in after.markdown and not after.markdown.endswith("173")
    assert after.metadata["repairs"]["cjk_spaces_removed"] == 9
    assert_nothing_changed_but_spacing(before, after)


def assert_nothing_changed_but_spacing(
    before: StandardizedDocument, after: StandardizedDocument
) -> None:
    def squeeze(doc: StandardizedDocument) -> list[str]:
        return ["".join(e.text.split()) for e in doc.elements]

    assert squeeze(before) == squeeze(after)


HEADER_LINE = "Widget Protocol Specification"
REGISTER_ROWS = [["Offset", "Name", "Access", "Reset"]] + [
    [f"0x{4 * i:02X}", f"REG{i}", "RW" if i % 2 else "RO", str(i)] for i in range(60)
]


def build_spec_pdf(path: Path) -> None:
    """Four pages: running header, a date line under it and `- N -` on every page; a register
    table whose header row reportlab repeats after the page break."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    text = "The controller keeps a queue of pending requests and serves them in order. " * 5
    grid = Table(REGISTER_ROWS, repeatRows=1)
    grid.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    story = [Paragraph("1 Overview", styles["Heading1"])]
    story += [Paragraph(text, styles["BodyText"]) for _ in range(26)]
    story += [
        Paragraph("1.1 Register map", styles["Heading2"]),
        Paragraph(text, styles["BodyText"]),
    ]
    story += [grid, Paragraph("1.2 Reset", styles["Heading2"]), Paragraph(text, styles["BodyText"])]

    def furniture(canvas, doc) -> None:
        canvas.saveState()
        canvas.setFont("Helvetica", 10)
        canvas.drawString(72, 780, HEADER_LINE)
        canvas.drawString(72, 766, "2026-05-15")
        canvas.drawCentredString(297, 60, f"- {doc.page} -")
        canvas.restoreState()

    SimpleDocTemplate(str(path), pagesize=A4).build(
        story, onFirstPage=furniture, onLaterPages=furniture
    )


def test_generated_pdf_furniture_out_and_table_merged(
    pymupdf: PyMuPDFParser, tmp_path: Path
) -> None:
    path = tmp_path / "spec.pdf"
    build_spec_pdf(path)
    before = pymupdf_ir(pymupdf, path)
    after = repair_document(before)
    pages = after.page_count
    assert pages == 4
    furniture = [(e.type, e.page_start, e.text) for e in after.elements if e.type in FURNITURE]
    assert [p for kind, p, text in furniture if kind == "page_header" and HEADER_LINE in text] == [
        1,
        2,
        3,
        4,
    ]
    assert [p for kind, p, text in furniture if kind == "page_footer" and text == f"- {p} -"] == [
        1,
        2,
        3,
        4,
    ]
    assert all("2026-05-15" in text for kind, _, text in furniture if kind == "page_header")
    for needle in (HEADER_LINE, "2026-05-15", "- 2 -"):
        assert needle not in after.markdown
    # The layout model takes the running header for a heading or body text on some pages.
    missed = [e for e in before.elements if e.type not in FURNITURE and HEADER_LINE in e.text]
    assert after.metadata["repairs"]["furniture_retyped"] == len(missed)
    assert [(e.level, plain(e)) for e in after.headings()] == [
        (1, "1 Overview"),
        (2, "1.1 Register map"),
        (2, "1.2 Reset"),
    ]
    tables = [e for e in after.elements if e.type == "table"]
    assert len(tables) == 1
    assert tables[0].table.grid() == REGISTER_ROWS
    assert (tables[0].page_start, tables[0].page_end, tables[0].table.header_rows) == (3, 4, 1)
    assert len(after.elements) == len(before.elements) - after.metadata["repairs"]["tables_merged"]


# --- real output that needs no repair ------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "docx/unit_test_headers_numbered.docx",
        "md/docling_deployment.md",
        "legal/劳动合同法(2012-12-28).md",
    ],
)
def test_documents_whose_levels_agree_come_through_untouched(
    name: str, shared_fixtures: Path
) -> None:
    from rag_assets.parsers.docling import DoclingParser

    path = shared_fixtures / name
    parsed = DoclingParser().parse(path, path.suffix.lstrip("."))
    before = docling_to_ir(parsed, doc_id=name, source_sha256="0" * 64)
    after = repair_document(before)
    assert after.elements == before.elements and after.markdown == before.markdown
    assert set(after.metadata["repairs"].values()) == {0}


def test_unstructured_fast_pdf_levels_follow_numbering(shared_fixtures: Path) -> None:
    """Unstructured's fast PDF path puts every heading at level 1; the repair nests them."""
    from rag_assets.normalize.unstructured_adapter import unstructured_to_ir
    from rag_assets.parsers.unstructured import UnstructuredParser

    parsed = UnstructuredParser().parse(shared_fixtures / "pdf/redp5110_sampled.pdf", "pdf")
    before = unstructured_to_ir(parsed, doc_id="redp", source_sha256="0" * 64)
    after = to_ir(parsed, doc_id="redp", source_sha256="0" * 64)
    assert {e.level for e in before.headings()} == {1}
    numbered = [(e.level, m[1]) for e in after.headings() if (m := DECIMAL.match(plain(e)))]
    assert len(numbered) >= 8
    assert all(level == number.count(".") + 1 for level, number in numbered)
    assert after.metadata["repairs"]["heading_levels"] > 0


@pytest.mark.slow
def test_normalized_documents_metadata_shows_the_repair_counts(tmp_path: Path) -> None:
    source = tmp_path / "guide.md"
    source.write_text("# Guide\n\n## 1 Scope\n\n這是 中文 句子。\n", encoding="utf-8")
    result, _ = materialize_file(source, tmp_path / "data")
    (materialization,) = [m for m in result.asset_materializations_for_node("normalized_documents")]
    assert materialization.metadata["repairs"].value == {
        "hyphens_joined": 0,
        "split_words_joined": 0,
        "cjk_spaces_removed": 0,
        "furniture_restored": 0,
        "furniture_retyped": 0,
        "tables_merged": 0,
        "heading_lines_split": 0,
        "heading_levels": 0,
        "furniture_dropped": 0,
    }


@pytest.mark.parametrize("file_format", ["md", "html"])
def test_unstructured_markup_levels_are_kept(tmp_path: Path, file_format: str) -> None:
    from rag_assets.parsers.unstructured import UnstructuredParser

    path = tmp_path / f"levels.{file_format}"
    if file_format == "md":
        path.write_text("# Header 1\n\nA.\n\n## Header 2\n\nB.\n\n### Header 3\n\nC.\n")
    else:
        path.write_text(
            "<html><body><h1>Header 1</h1><p>A.</p><h2>Header 2</h2><p>B.</p>"
            "<h3>Header 3</h3><p>C.</p></body></html>"
        )
    doc = to_ir(UnstructuredParser().parse(path, file_format), doc_id="u", source_sha256="0" * 64)
    assert [(e.level, e.text) for e in doc.headings()] == [
        (1, "# Header 1"),
        (2, "## Header 2"),
        (3, "### Header 3"),
    ]


@pytest.mark.parametrize("levels", [(1, 2, 3), (1, 1, 1)])
def test_docling_pdf_levels_are_set_from_real_numbering(levels) -> None:
    """A PDF's levels are the layout model's guess from the page, varied or flat: the headings'
    numbers set them (`2 Design` is no child of `1.1 Terms`)."""
    from docling_core.types.doc import DoclingDocument, ProvenanceItem, Size
    from docling_core.types.doc.base import BoundingBox

    doc = DoclingDocument(name="spec")
    doc.add_page(page_no=1, size=Size(width=600, height=800))
    box = ProvenanceItem(page_no=1, bbox=BoundingBox(l=72, t=700, r=500, b=680), charspan=(0, 1))
    doc.add_title(text="Widget Spec", prov=box)
    for level, text in zip(levels, ("1 Scope", "1.1 Terms", "2 Design"), strict=True):
        doc.add_heading(text=text, level=level, prov=box)
        doc.add_text(label="text", text=f"Body of {text}.", prov=box)
    parsed = ParsedDocument(
        parser="docling",
        parser_version="test",
        source_path="spec.pdf",
        file_format="pdf",
        native=doc.export_to_dict(),
    )
    after = to_ir(parsed, doc_id="spec", source_sha256="0" * 64)
    assert [e.level for e in after.headings() if e.type == "heading"] == [2, 3, 2]


@pytest.mark.parametrize(
    ("file_format", "quote"),
    [
        ("md", "> # Quoted\n>\n> Quoted text.\n"),
        ("html", "<blockquote><h2>Quoted</h2><p>Quoted text.</p></blockquote>"),
    ],
)
def test_unstructured_quoted_heading_opens_no_section(
    tmp_path: Path, file_format: str, quote: str
) -> None:
    from rag_assets.parsers.unstructured import UnstructuredParser

    path = tmp_path / f"quote.{file_format}"
    if file_format == "md":
        path.write_text(f"# Guide\n\n## Usage\n\nBefore.\n\n{quote}\nAfter the quote.\n")
    else:
        path.write_text(
            f"<html><body><h1>Guide</h1><h2>Usage</h2><p>Before.</p>{quote}"
            "<p>After the quote.</p></body></html>"
        )
    doc = to_ir(UnstructuredParser().parse(path, file_format), doc_id="u", source_sha256="0" * 64)
    assert [(e.type, e.text) for e in doc.elements] == [
        ("heading", "# Guide"),
        ("heading", "## Usage"),
        ("paragraph", "Before."),
        ("paragraph", "Quoted"),
        ("paragraph", "Quoted text."),
        ("paragraph", "After the quote."),
    ]
