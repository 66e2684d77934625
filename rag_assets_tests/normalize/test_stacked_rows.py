"""Rows a table finder stacked into one cell line under line come back as the rows they are;
wrapped labels, headers and bullet cells stay whole; leaders never stay in a cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.normalize.stacked_rows import cell_items, split_stacked_rows
from rag_assets_tests.support.pdf_pages import pages_ir, table_rows

HEADER = ["Action", "Labor cost", "Parts cost", "Cost per product", "Cost on U.S. operators"]


def test_a_cost_tables_stacked_row_is_split_at_its_leaders_and_wrapped_items_kept_whole() -> None:
    # As a rule's cost table comes from the table finder: two actions in one row, each
    # column's items ended by leaders, the labor cost wrapped over two lines per item.
    stacked = [
        HEADER,
        [
            "Stabilizer wiring change ........................\nAOA sensor system test ........",
            "Up to 79 work-hours × $85 per hour = \nUp to $6,715.\n40 work-hours × $85 per hour = "
            "\n$3,400.",
            "Up to $3,790 .........\n$0 ..........................",
            "Up to $10,505 .......\n$3,400 ...................",
            "Up to $766,865. \n$248,200.",
        ],
    ]
    assert split_stacked_rows(stacked, header_rows=1) == [
        HEADER,
        [
            "Stabilizer wiring change",
            "Up to 79 work-hours × $85 per hour = Up to $6,715.",
            "Up to $3,790",
            "Up to $10,505",
            "Up to $766,865.",
        ],
        [
            "AOA sensor system test",
            "40 work-hours × $85 per hour = $3,400.",
            "$0",
            "$3,400",
            "$248,200.",
        ],
    ]


def test_a_label_ending_without_a_leader_is_an_item_of_its_own() -> None:
    assert cell_items(
        "AFM revisions ..........\nMDS installation and verification, INOP\nmarker removal."
    ) == [
        "AFM revisions",
        "MDS installation and verification, INOP marker removal.",
    ]


def test_a_statements_stacked_values_become_rows_under_their_columns() -> None:
    stacked = [
        ["", "Level 1", "Level 2", "Level 3", "Netting", "Total"],
        ["Equity\nCommodity", "—   \n—", "69,570  \n   \n23,387", "4,008  \n292", "(53,825)\n(15,021)", "19,753\n8,658"],
    ]  # fmt: skip
    assert split_stacked_rows(stacked, header_rows=1)[1:] == [
        ["Equity", "—", "69,570", "4,008", "(53,825)", "19,753"],
        ["Commodity", "—", "23,387", "292", "(15,021)", "8,658"],
    ]


def test_a_currency_sign_on_a_line_of_its_own_opens_the_value_under_it() -> None:
    # A cash flow statement's supplement: two rows stacked, each column's `$` a line above
    # its first value only.
    stacked = [
        ["(in millions)", "2021", "2020"],
        ["Cash interest paid\nCash income taxes paid, net", "$ \n1,127 \n640", "$ \n—\n763"],
    ]  # fmt: skip
    assert split_stacked_rows(stacked, header_rows=1)[1:] == [
        ["Cash interest paid", "$ 1,127", "$ —"],
        ["Cash income taxes paid, net", "640", "763"],
    ]


@pytest.mark.parametrize(
    "row",
    [
        # A label wrapped over two lines beside one value per column.
        ["Property, plant and\nequipment, net", "8,738", "8,866"],
        # A currency sign the finder left at the end of the cell before its value.
        ["Net sales\n(millions)", "$ 12,372\n$", "9,809\n$"],
        # Column heads in a body row: dates, not values.
        ["Average amount\n(in millions)", "March 31,\n2021", "December 31,\n2020"],
        # A cell of bullets beside a wrapped label: a list, not rows.
        [
            "Market trends or\nopportunities",
            "• Personal safety\n• Connected bodyshop",
            "• Wound care\n• IT",
        ],
        # No label to tell the rows apart.
        ["", "2020\n2019", "2020\n2019"],
        # One value under its currency sign beside a wrapped label.
        ["Net income\nattributable", "$\n14,300", "$\n2,865"],
        # Values of unequal counts: the lines do not line up.
        ["Equity\nCommodity", "69,570\n23,387", "4,008"],
    ],
)
def test_rows_that_are_not_stacked_stay_whole(row: list[str]) -> None:
    grid = [["Item", *[f"Column {n}" for n in range(1, len(row))]], row]
    assert split_stacked_rows(grid, header_rows=1) == grid


def test_the_header_is_never_split() -> None:
    grid = [["Equity\nCommodity", "1\n2"], ["Total", "3"]]
    assert split_stacked_rows(grid, header_rows=1) == grid


def test_a_table_without_leader_rows_loses_its_leaders_in_the_ir() -> None:
    """One row of leaders in a grid is no leader table; its leaders go all the same."""
    grid = [
        ["Item", "Cost"],
        ["Seal kit ..........", "$85"],
        ["Bearing", "$120"],
        ["Coupling", "$40"],
    ]
    box = {
        "x0": 50, "y0": 100, "x1": 500, "y1": 200, "boxclass": "table", "textlines": None,
        "table": {"bbox": [50, 100, 500, 200], "row_count": 4, "col_count": 2, "extract": grid},
    }  # fmt: skip
    from rag_assets.parsers.base import ParsedDocument

    native = {
        "layout": {"pages": [{"page_number": 1, "width": 600, "height": 800, "boxes": [box]}]},
        "pages": [
            {"metadata": {"page": 1}, "text": "", "page_boxes": [{"class": "table", "pos": [0, 0]}]}
        ],
        "document_info": {},
    }
    parsed = ParsedDocument(
        parser="pymupdf", parser_version="test", source_path="t.pdf", file_format="pdf",
        page_count=1, native=native,
    )  # fmt: skip
    (table,) = [
        e
        for e in pymupdf_to_ir(parsed, doc_id="t", source_sha256="0" * 64).elements
        if e.type == "table"
    ]
    assert table.table is not None and table.table.grid()[1] == ["Seal kit", "$85"]


def test_a_quarterly_reports_fair_value_table_keeps_each_row_apart(
    shared_filings: Path, tmp_path: Path
) -> None:
    """JPMorgan's 10-Q for 2021 Q1 sets its fair value hierarchy without rules between rows:
    the table finder stacks two or three rows into each row of its grid (pages 86-87)."""
    rows = table_rows(pages_ir(shared_filings / "JPMORGAN_2021Q1_10Q.pdf", [85, 86], tmp_path))
    assert ["Equity", "—", "69,570", "4,008", "(53,825)", "19,753"] in rows
    assert ["Commodity", "—", "23,387", "292", "(15,021)", "8,658"] in rows
    labels = {row[0] for row in rows}
    assert "Loans" in labels and "Mortgage servicing rights" in labels
    # Rows whose nil values keep their currency sign on a line above them (`$\n—\n—`).
    assert {"Securities borrowed", "Deposits"} <= labels
    assert not any("\n" in cell or "...." in cell for row in rows for cell in row)


def test_a_cash_flow_supplements_stacked_rows_keep_their_values_apart(
    shared_filings: Path, tmp_path: Path
) -> None:
    """The same 10-Q's cash flow statement (page 83) ends with interest and taxes paid in one
    grid row, each column's `$` on a line above the first value."""
    rows = table_rows(pages_ir(shared_filings / "JPMORGAN_2021Q1_10Q.pdf", [82], tmp_path))
    assert ["Cash interest paid", "$ 1,127", "$ 4,374"] in rows
    assert ["Cash income taxes paid, net", "640", "763"] in rows
