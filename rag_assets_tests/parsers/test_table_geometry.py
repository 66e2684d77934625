"""A table's heads as the author ruled them: a head over several columns names each of them,
also where the table finder cut it into pieces, and words cut at a row's edge are whole again.
Generated statements and two real pages (a 10-Q's fair value table, a paper's results table)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from rag_assets.contracts.ir import TableData
from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.normalize.table_headers import (
    header_row_count,
    spread_spanning_labels,
    with_cut_heads,
)
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets.parsers.table_geometry import (
    heads_cut_at_columns,
    horizontal_segments,
    read_table_geometry,
    reread_cut_words,
    table_rules,
)
from rag_assets.templates.spec_parts.table_rows import parse_table, table_rows
from rag_assets_tests.support.pdf_pages import pages_ir, tables_of

FAIR_VALUE_ROWS = [
    ["", "Fair value hierarchy", "", "", "Netting", ""],
    ["March 31, 2024 (in millions)", "Level 1", "Level 2", "Level 3", "adjustments", "Total"],
    ["Securities borrowed", "—", "66,277", "—", "—", "66,277"],
    ["Trading assets", "12,504", "8,113", "1,927", "(3,020)", "19,524"],
    ["Loans", "—", "1,857", "303", "—", "2,160"],
    ["Mortgage servicing rights", "—", "—", "4,276", "—", "4,276"],
    ["Other assets", "9,823", "412", "370", "—", "10,605"],
    ["Total assets", "22,327", "76,659", "6,876", "(3,020)", "102,842"],
]


def _build_statement(path: Path, head_rule: bool = True) -> None:
    """A fair value note as statements set it: `Fair value hierarchy` centred over Levels 1
    to 3 (with a rule under it, or none), no grid, small type."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import letter
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    table = Table(FAIR_VALUE_ROWS, colWidths=[170, 60, 60, 60, 70, 80])
    table.setStyle(
        TableStyle(
            [
                ("SPAN", (1, 0), (3, 0)),
                ("ALIGN", (1, 0), (-1, -1), "CENTER"),
                ("FONTSIZE", (0, 0), (-1, -1), 8),
                *([("LINEBELOW", (1, 0), (3, 0), 0.6, colors.black)] if head_rule else []),
                ("LINEBELOW", (0, 1), (-1, 1), 0.6, colors.black),
                ("LINEBELOW", (0, -1), (-1, -1), 0.6, colors.black),
            ]
        )
    )
    styles = getSampleStyleSheet()
    story = [
        Paragraph("Note 3. Fair value measurement", styles["Heading2"]),
        Paragraph(
            "The following table presents assets measured at fair value on a recurring basis, "
            "by level of the fair value hierarchy.",
            styles["BodyText"],
        ),
        table,
        Paragraph("Transfers between levels are recognized at period end.", styles["BodyText"]),
    ]
    SimpleDocTemplate(str(path), pagesize=letter).build(story)


def _native_tables(parsed: ParsedDocument) -> list[dict]:
    """The table finder's tables as the parser keeps them (grid, boxes, rules, spans)."""
    return [
        box["table"]
        for page in parsed.native["layout"]["pages"]
        for box in page["boxes"]
        if box.get("table")
    ]


def _columns(table: TableData) -> list[str]:
    """Each column's heads, outermost first, as the markdown joins them."""
    grid = table.grid()
    heads = grid[: max(table.header_rows, 1)]
    return [" / ".join(row[c] for row in heads if row[c]) for c in range(table.num_cols)]


def test_a_ruled_head_names_every_column_under_it_though_the_finder_cut_it(tmp_path: Path) -> None:
    path = tmp_path / "fair-value.pdf"
    _build_statement(path)
    parsed = PyMuPDFParser().parse(path)
    (table,) = _native_tables(parsed)
    # The parser keeps the rule with the head set above it.
    assert any(rule[3] == "Fair value hierarchy" for rule in table["rules"])
    doc = pymupdf_to_ir(parsed, doc_id="t", source_sha256="0" * 64)
    (element,) = [e for e in doc.elements if e.table is not None]
    ir_table = element.table
    assert _columns(ir_table) == [
        "March 31, 2024 (in millions)",
        "Fair value hierarchy / Level 1",
        "Fair value hierarchy / Level 2",
        "Fair value hierarchy / Level 3",
        "Netting / adjustments",
        "Total",
    ]
    # Row chunks name each value by its column's heads.
    parsed_table = parse_table(element)
    assert parsed_table is not None
    rows = [row.text for row in table_rows(parsed_table, [])]
    borrowed = next(text for text in rows if "Securities borrowed" in text)
    assert "Fair value hierarchy / Level 2: 66,277" in borrowed


def test_a_head_with_no_rule_the_finder_cut_at_column_edges_names_the_columns_it_crosses(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fair-value-unruled.pdf"
    _build_statement(path, head_rule=False)
    parsed = PyMuPDFParser().parse(path)
    (table,) = _native_tables(parsed)
    assert not any(rule[3] for rule in table["rules"])
    # The finder's grid cut the head in three; the parser keeps the line whole.
    assert table["extract"][0][1:4] == ["F", "air value hierarch", "y"]
    assert table["spans"] == [[0, 1, 3, "Fair value hierarchy"]]
    doc = pymupdf_to_ir(parsed, doc_id="t", source_sha256="0" * 64)
    assert _columns(tables_of(doc)[0])[1:4] == [
        f"Fair value hierarchy / Level {n}" for n in (1, 2, 3)
    ]


def test_only_a_line_the_grid_split_over_cells_is_a_cut_head() -> None:
    row = [[x, 0, x + 50, 10] for x in (0, 50, 100, 150)]
    table = {
        "extract": [["", "Year", "Ended June 30,", "Notes"], ["", "2024", "2023", "1"]],
        "cells": [row, [[x, 10, x + 50, 20] for x in (0, 50, 100, 150)]],
    }
    words = [
        (60.0, 2.0, 80.0, 8.0, "Year", 0, 0, 0),  # one line over two cells, cut between words
        (83.0, 2.0, 105.0, 8.0, "Ended", 0, 0, 1),
        (108.0, 2.0, 122.0, 8.0, "June", 0, 0, 2),
        (124.0, 2.0, 140.0, 8.0, "30,", 0, 0, 3),
        (160.0, 2.0, 180.0, 8.0, "Notes", 0, 0, 4),  # the same line, set apart: its own head
        (60.0, 12.0, 80.0, 18.0, "2024", 1, 0, 0),
        (110.0, 12.0, 130.0, 18.0, "2023", 1, 0, 1),
    ]
    heads_cut_at_columns(table, words)
    assert table["spans"] == [[0, 1, 2, "Year Ended June 30,"]]
    # Cells holding other characters than the line (another text layer) are left as read.
    table = {"extract": [["", "Year", "Ended June 30, 2024", "Notes"]], "cells": [row]}
    heads_cut_at_columns(table, words)
    assert "spans" not in table


def test_a_cut_head_is_whole_before_the_heading_rows_are_counted() -> None:
    grid = [
        ["", "", "Year ended D", "ecember 31,", ""],
        ["", "2022", "", "202", "1"],
        ["", "Percent", "Per share", "Percent", "Per share"],
        ["Sales", "20.8 %", "$ 10.12", "22.3 %", "$ 9.36"],
    ]
    spans = [[0, 2, 3, "Year ended December 31,"], [1, 3, 4, "2021"]]
    whole = with_cut_heads(grid, spans)
    assert whole[0][2:4] == ["Year ended December 31,"] * 2 and whole[1][3:] == ["2021"] * 2
    # `1` cut from the year read as an amount: the table's heads ended at the first row.
    assert header_row_count(grid) == 1 and header_row_count(whole) == 3
    spread = spread_spanning_labels(whole, 3)
    assert spread[0] == ["", *["Year ended December 31,"] * 4]
    assert spread[1] == ["", "2022", "2022", "2021", "2021"]
    # A span the cells no longer hold, and values set close together, are left as they are.
    changed = [row[:] for row in grid]
    changed[0][2] = "Year ended Dec"
    assert with_cut_heads(changed, spans)[0] == changed[0]
    data_first = [["Ping An", "3,000", "2015-09-21", "2016-03-21"], ["Bank", "5,000", "x", "y"]]
    values = [[0, 1, 3, "3,000 2015-09-21 2016-03-21"]]
    assert with_cut_heads(data_first, values) == data_first


def test_a_head_spreads_only_over_the_columns_its_rule_covers() -> None:
    grid = [
        ["", "F", "air value hierarch", "y", "Netting", ""],
        ["(in millions)", "Level 1", "Level 2", "Level 3", "adjustments", "Total"],
        ["Loans", "1", "2", "3", "4", "10"],
    ]
    cells = [[[x, y, x + 60, y + 10] for x in (50, 220, 280, 340, 400, 470)] for y in (0, 10, 20)]
    rules = [[222.0, 398.0, 9.5, "Fair value hierarchy"]]
    spread = spread_spanning_labels(grid, 2, cells, rules)
    assert spread[0] == [
        "",
        "Fair value hierarchy",
        "Fair value hierarchy",
        "Fair value hierarchy",
        "Netting",
        "",
    ]


@pytest.mark.parametrize(
    ("top_row", "head"),
    [
        # The rule's head is not what the row holds: some other line's rule.
        (["", "Assets", "", "", "", ""], "Liabilities"),
        # Heads set apart on one line read as no head (a rule under a row of heads).
        (["", "Level 1", "Level 2", "Level 3", "", ""], ""),
    ],
)
def test_a_rule_whose_head_the_row_does_not_hold_spreads_nothing(
    top_row: list[str], head: str
) -> None:
    grid = [top_row, ["(in millions)", "a", "b", "c", "d", "e"], ["Loans", "1", "2", "3", "4", "5"]]
    cells = [[[x, y, x + 60, y + 10] for x in (50, 220, 280, 340, 400, 470)] for y in (0, 10, 20)]
    assert spread_spanning_labels(grid, 2, cells, [[222.0, 398.0, 9.5, head]]) == grid


def test_a_rule_reads_the_lines_set_right_above_it_within_its_width() -> None:
    words = [
        # Two lines centred over the rule, and a word beside it that is no part of the head.
        (300.0, 80.0, 340.0, 88.0, "Pension", 0, 0, 0),
        (343.0, 80.0, 380.0, 88.0, "Benefits", 0, 0, 1),
        (310.0, 89.0, 335.0, 97.0, "United", 1, 0, 0),
        (338.0, 89.0, 370.0, 97.0, "States", 1, 0, 1),
        (420.0, 89.0, 470.0, 97.0, "International", 2, 0, 0),
    ]
    rules = table_rules([50, 70, 560, 300], [(290.0, 390.0, 98.5)], words)
    assert rules == [[290.0, 390.0, 98.5, "Pension Benefits United States"]]
    # Heads set apart on one line: the rule heads a row of columns, no one head.
    apart = [
        (300.0, 89.0, 330.0, 97.0, "2021", 0, 0, 0),
        (360.0, 89.0, 390.0, 97.0, "2020", 0, 0, 1),
    ]
    assert table_rules([50, 70, 560, 300], [(290.0, 395.0, 98.5)], apart)[0][3] == ""


def test_only_partial_horizontal_rules_are_kept() -> None:
    drawings = [
        {"items": [("l", pymupdf.Point(60, 100), pymupdf.Point(200, 100))]},  # partial stroke
        {"items": [("l", pymupdf.Point(50, 150), pymupdf.Point(555, 150))]},  # whole width
        {"items": [("l", pymupdf.Point(80, 90), pymupdf.Point(80, 200))]},  # vertical
        {"items": [("re", pymupdf.Rect(300, 120, 420, 120.8))]},  # a thin bar
        {"items": [("re", pymupdf.Rect(300, 130, 420, 160))]},  # a shaded box
    ]
    segments = horizontal_segments(drawings)
    assert [s[2] for s in segments] == [100, 120.4, 150]
    assert [r[:3] for r in table_rules([50, 80, 560, 300], segments, [])] == [
        [60.0, 200.0, 100.0],
        [300.0, 420.0, 120.4],
    ]


def test_a_word_cut_at_a_rows_edge_is_read_again_whole() -> None:
    """The finder gave `Language`'s descenders to the row below (`Lanuae` over `gg`)."""
    table = {
        "extract": [["#", "Lanuae", "TEDs"], ["enc-layers", "gg", "simple"], ["6", "OTSL", "0.9"]],
        "cells": [
            [[0, 0, 50, 10], [50, 0, 100, 10], [100, 0, 150, 10]],
            [[0, 10, 50, 20], [50, 10, 100, 20], [100, 10, 150, 20]],
            [[0, 20, 50, 30], [50, 20, 100, 30], [100, 20, 150, 30]],
        ],
    }
    words = [
        (5.0, 2.0, 15.0, 8.0, "#", 0, 0, 0),
        (55.0, 5.0, 95.0, 13.0, "Language", 1, 0, 0),  # across the edge at y=10
        (105.0, 2.0, 130.0, 8.0, "TEDs", 2, 0, 0),
        (5.0, 12.0, 45.0, 18.0, "enc-layers", 3, 0, 0),
        (105.0, 12.0, 130.0, 18.0, "simple", 4, 0, 0),
    ]
    reread_cut_words(table, words)
    assert table["extract"][0][1] == "Language" and table["extract"][1][1] == ""
    assert table["reread"] == [[0, 1], [1, 1]]
    # Cells whose words were not cut are as the finder read them.
    assert table["extract"][1][2] == "simple" and table["extract"][0][2] == "TEDs"


def test_cells_read_again_are_kept_only_when_they_hold_the_same_characters() -> None:
    table = {
        "extract": [["Lanuae"], ["gg"]],
        "cells": [[[0, 0, 100, 10]], [[0, 10, 100, 20]]],
    }
    # The page's words say something else than the grid (another text layer): keep the grid.
    reread_cut_words(table, [(5.0, 5.0, 95.0, 13.0, "Languages", 0, 0, 0)])
    assert table["extract"] == [["Lanuae"], ["gg"]] and "reread" not in table


def test_a_quarterly_reports_ruled_heads_name_their_columns(
    shared_filings: Path, tmp_path: Path
) -> None:
    """JPMorgan's 10-Q for 2021 Q1, page 86: `Fair value hierarchy` over Levels 1 to 3, and
    `Derivative netting adjustments` whose `netting` the finder had cut (`tti` over `neng`)."""
    doc = pages_ir(shared_filings / "JPMORGAN_2021Q1_10Q.pdf", [85], tmp_path)
    table = tables_of(doc)[0]
    assert _columns(table) == [
        "March 31, 2021 (in millions)",
        "Fair value hierarchy / Level 1",
        "Fair value hierarchy / Level 2",
        "Fair value hierarchy / Level 3",
        "Derivative netting / adjustments(f)",
        "Total fair value",
    ]


def test_a_papers_head_keeps_its_descenders(shared_fixtures: Path) -> None:
    """Docling's 2305.03393v1-pg9: the results table's `Language` head, set across two rows."""
    doc = pymupdf_to_ir(
        PyMuPDFParser().parse(shared_fixtures / "pdf" / "2305.03393v1-pg9.pdf"),
        doc_id="p",
        source_sha256="0" * 64,
    )
    cells = {cell.text for e in doc.elements if e.table is not None for cell in e.table.cells}
    assert "Language" in cells and "Lanuae" not in cells and "gg" not in cells


def test_a_filings_selected_data_heads_cut_at_column_edges_are_whole(
    shared_filings: Path, tmp_path: Path
) -> None:
    """Netflix's 2017 10-K, page 19: five years under heads centred over them with no rule,
    which the finder cut in a word (`Yea | r ended December | 31,`, `A | s of December 31,`)
    and between words (`Year | Ended December 31,`)."""
    doc = pages_ir(shared_filings / "NETFLIX_2017_10K.pdf", [18], tmp_path)
    heads = [_columns(table) for table in tables_of(doc)]
    years = ("2017", "2016", "2015", "2014", "2013")
    assert [head[1] for head in heads] == [
        "Year ended December 31, / 2017",
        "Year Ended December 31, / 2017",
        "As of December 31, / 2017",
    ]
    for head in heads:
        assert [h.split(" / ")[1] for h in head[1:]] == list(years)
        assert not any(piece in h for h in head for piece in ("Yea /", "thous /", "A /"))


def test_a_page_whose_geometry_cannot_be_read_keeps_its_tables_as_found() -> None:
    class BrokenPage:
        def get_drawings(self) -> list:
            raise ValueError("bad content stream")

    class Layout:
        page_number = 2
        boxes = [type("Box", (), {"table": {"bbox": [0, 0, 10, 10], "extract": [["a"]]}})()]

    failures = read_table_geometry({1: BrokenPage()}, [Layout()])
    assert failures == ["page 2: ValueError: bad content stream"]
    assert Layout.boxes[0].table == {"bbox": [0, 0, 10, 10], "extract": [["a"]]}
