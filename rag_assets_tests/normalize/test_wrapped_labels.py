"""A row label wrapped onto a second line that the table finder made a row of its own is one
row again, its values beside it; rows that hold values of their own, and lists, stay apart."""

from __future__ import annotations

from pathlib import Path

from rag_assets.normalize.wrapped_labels import join_wrapped_labels
from rag_assets_tests.support.pdf_pages import pages_ir, table_rows, tables_of

HEAD = ["(in millions)", "2022", "2021"]


def test_a_statements_label_joins_the_line_its_values_stand_beside() -> None:
    grid = [
        HEAD,
        ["Foreign exchange and precious metals lease", "", ""],
        ["contracts (1)", "$ 419", "$ 780"],
        ["Interest rate contracts", "12", "9"],
    ]
    assert join_wrapped_labels(grid, 1) == [
        HEAD,
        ["Foreign exchange and precious metals lease contracts (1)", "$ 419", "$ 780"],
        ["Interest rate contracts", "12", "9"],
    ]


def test_a_schedules_label_takes_back_the_line_below_its_values() -> None:
    grid = [
        ["System organ class", "Adults", "Children"],
        ["Eye haemorrhage (including", "Rare", "Common"],
        ["conjunctival haemorrhage)", "", ""],
        ["Vascular disorders", "", ""],
    ]
    assert join_wrapped_labels(grid, 1)[1:] == [
        ["Eye haemorrhage (including conjunctival haemorrhage)", "Rare", "Common"],
        ["Vascular disorders", "", ""],
    ]


def test_a_word_hyphenated_at_the_break_keeps_its_hyphen() -> None:
    grid = [HEAD, ["Earnings before income taxes and after-", "", ""], ["tax earnings", "5", "6"]]
    assert (
        join_wrapped_labels(grid, 1)[1][0] == "Earnings before income taxes and after-tax earnings"
    )


def test_rows_that_are_rows_of_their_own_stay_apart() -> None:
    grid = [
        HEAD,
        # Both lines hold values: two rows, whatever the case of the second label.
        ["Total assets", "10", "9"],
        ["of which pledged", "2", "1"],
        # The label above ends a sentence or leads a list.
        ["Amounts recognized:", "", ""],
        ["net of tax", "3", "4"],
        # The label opens in capitals: a row of its own.
        ["Cash", "", ""],
        ["Receivables", "7", "8"],
    ]
    assert join_wrapped_labels(grid, 1) == grid


def test_the_header_and_a_list_set_as_a_table_are_left_alone() -> None:
    header = [["Fiscal", "2022", "2021"], ["year ended", "May", "May"], ["Sales", "1", "2"]]
    assert join_wrapped_labels(header, 2) == header
    listed = [["Name", ""], ["Tools", ""], ["hammer", ""], ["saw", ""]]
    assert join_wrapped_labels(listed, 1) == listed


def test_a_pension_notes_wrapped_labels_keep_their_values(
    shared_filings: Path, tmp_path: Path
) -> None:
    """General Mills' 2020 10-K, page 81: `Amortization of prior` over `service costs
    (credits)`, whose values stand beside the second line."""
    rows = table_rows(pages_ir(shared_filings / "GENERALMILLS_2020_10K.pdf", [80], tmp_path))
    row = next(r for r in rows if r[0].startswith("Amortization of prior"))
    assert row[:4] == ["Amortization of prior service costs (credits)", "1.6", "1.5", "1.9"]
    assert not any(r[0] == "service costs (credits)" for r in rows)


def test_a_drug_labels_table_has_the_rows_pdfplumber_expects(
    shared_corpus: Path, tmp_path: Path
) -> None:
    """pdfplumber's table-curves example: 33 rows, four of them labels wrapped over two lines
    whose second line the finder set as a row of its own."""
    pdf = shared_corpus / "pdfplumber" / "tests__pdfs__table-curves-example.pdf"
    (table,) = tables_of(pages_ir(pdf, [0], tmp_path))
    assert table.num_rows == 33
    labels = [row[0] for row in table.grid()]
    assert "Eye haemorrhage (including conjunctival haemorrhage)" in labels
