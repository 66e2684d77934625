"""The pieces of a value a table finder cut at a column boundary go back together."""

from __future__ import annotations

from pathlib import Path

from rag_assets.normalize.cut_values import values_rejoined
from rag_assets_tests.support.pdf_pages import pages_ir, table_rows

# Comma thousands elsewhere in the table: a cut group cannot be a decimal there.
US_ROWS = [[f"Line {n}", "1,234", "5,678", "9,012"] for n in range(3)]


def test_a_trailing_sign_moves_to_the_value_it_opens() -> None:
    row = ["Q4 GAAP", "$ 7,990", "22.4 % $", "1,672", "$", "(13)", "68.6 % €", "—"]
    assert values_rejoined([row]) == [
        ["Q4 GAAP", "$ 7,990", "22.4 %", "$ 1,672", "", "$ (13)", "68.6 %", "€ —"]
    ]


def test_a_sign_stays_where_no_value_follows_or_the_value_has_its_own() -> None:
    row = ["Cost in $", "Notes", "12 $", "$ 4", "Total $", ""]
    assert values_rejoined([row]) == [row]


def test_a_percent_sign_goes_back_to_the_number_before_it() -> None:
    row = ["Revenues", "$ 44,538", "19", "% $ 39,117", "-4 %"]
    assert values_rejoined([row]) == [["Revenues", "$ 44,538", "19 %", "$ 39,117", "-4 %"]]


def test_a_footnote_marker_alone_in_a_cell_joins_the_value_it_marks() -> None:
    row = ["Securities borrowed", "175,019", "(77)", "(0.18)", "(h)", "136,127", "*", "(2)"]
    assert values_rejoined([row]) == [
        ["Securities borrowed", "175,019", "(77)", "(0.18) (h)", "", "136,127 *", "", "(2)"]
    ]


def test_a_cut_thousands_group_is_joined_in_a_table_of_comma_thousands() -> None:
    rows = [["Sales", "$ 8,42", "1", "$ 8,597"], ["Alabama", "23", ",022", "1,17", "8"]]
    assert values_rejoined([*US_ROWS, *rows])[3:] == [
        ["Sales", "$ 8,421", "", "$ 8,597"],
        ["Alabama", "23,022", "", "1,178", ""],
    ]
    # Whole values side by side stay apart.
    whole = ["Total", "1,234", "56", "2,5", "5"]
    assert values_rejoined([*US_ROWS, whole])[3] == whole


def test_a_comma_decimal_table_keeps_its_decimals() -> None:
    prices = [["Item", "Price", "Qty"], ["Seal", "12,55", "3"], ["Ring", "4,10", "12"]]
    assert values_rejoined(prices) == prices


def test_a_filings_non_gaap_table_keeps_each_amount_whole(
    shared_filings: Path, tmp_path: Path
) -> None:
    """3M's 2018 10-K, page 20: the finder's column boundaries fall between `$` and digits."""
    rows = table_rows(pages_ir(shared_filings / "3M_2018_10K.pdf", [19], tmp_path))
    q4 = next(row for row in rows if row[0] == "Q4 2017 GAAP")
    assert q4[:9] == [
        "Q4 2017 GAAP", "$ 7,990", "$ 1,789", "22.4 %", "$ 1,672", "$ 1,147", "68.6 %", "$ 523",
        "$ 0.85",
    ]  # fmt: skip
    assert not any(cell.endswith(" $") for row in rows for cell in row)
