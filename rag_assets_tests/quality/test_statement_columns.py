"""Statement rows kept under their periods or shifted off them, on hand-built grids
(bench/tables.py --statements)."""

from __future__ import annotations

import pytest

from rag_assets.quality.statement_columns import amounts, is_period, read_columns, score_statement

YEARS = ["", "2022", "2021"]


def only_row(grid):
    score = score_statement(grid)
    assert len(score.rows) == 1
    return score.rows[0]


@pytest.mark.parametrize(
    ("cell", "count"),
    [
        ("$ 16,388", 1),
        ("(112)", 1),
        ("$ (1,084)", 1),
        ("12.5 %", 1),
        ("—", 1),
        ("$ 13,364.5 $", 1),  # a currency sign cut off the next amount is no amount
        ("1,123 (e)", 1),  # a letter marker stays with its value
        ("0.75 - 5.82", 1),  # a range
        ("2019-2040", 1),
        ("$ 705 (1)", 1),  # a footnote marker ending the cell
        ("(151) (2)", 1),
        ("(1)", 1),  # alone, the amount minus one
        ("$ (26)", 1),
        ("$ 1,127 640", 2),
        ("2022 2021", 2),
        ("$ 8,42", 0),  # a piece of an amount
        ("NM", 0),
        ("(a)", 0),
        ("Note 5", 0),
    ],
)
def test_amounts_in_a_cell(cell, count):
    assert amounts(cell) == count


@pytest.mark.parametrize(
    ("cell", "period"),
    [
        ("2022", True),
        ("December 2, 2022", True),
        ("Fiscal 2021", True),
        ("March 31,", True),
        ("(dollars in millions) 2019", True),
        ("2022 vs. 2021", False),  # a change column
        ("% Change", False),
        ("Years ended December 31, 2021, 2020 and 2019", False),  # spans every period
        ("2,018", False),
        ("Shares", False),
    ],
)
def test_period_heads(cell, period):
    assert is_period(cell) is period


def test_a_row_with_every_value_under_its_year_is_kept():
    row = only_row([YEARS, ["Revenue", "$ 1,234", "(56)"]])
    assert row.kept and (row.bare, row.crowded, row.cut) == ((), (), ())


def test_the_header_runs_down_to_the_first_value_and_its_last_period_row_splits_it():
    grid = [
        ["", "Years ended December 31,", "Years ended December 31,"],
        ["(in millions)", "2022", "2021"],
        ["Revenue:", "", ""],
        ["Subscription", "$ 16,388", "$ 14,573"],
    ]
    columns = read_columns(grid)
    assert (columns.header_end, columns.periods, columns.headed) == (3, {1, 2}, set())
    assert [r.row for r in score_statement(grid).rows] == [3]


def test_values_moved_one_column_right_are_shifted():
    # 2022's value left empty, 2021's under 2022, and one in a column without a head.
    row = only_row([["", "2022", "2021", ""], ["Cash", "", "4,236", "3,844"]])
    assert not row.kept and row.bare == (3,)


def test_two_amounts_in_one_cell_are_shifted():
    row = only_row([YEARS, ["Cash interest paid", "$ 1,127 640", "$ 4,374 763"]])
    assert not row.kept and row.crowded == (1, 2)


def test_a_value_cut_over_two_cells_is_shifted():
    row = only_row([["", "2022", "", "2021"], ["Sales", "$ 8,42", "1", "$ 8,597"]])
    assert not row.kept and (row.cut, row.bare) == ((1,), (2,))


def test_a_dollar_column_beside_the_period_column_holds_no_value():
    grid = [["", "", "2022", "", "2021"], ["Cash", "$", "4,236", "$", "3,844"]]
    assert only_row(grid).kept


def test_years_over_the_dollar_columns_leave_the_values_beside_them():
    grid = [["", "2022", "", "2021", ""], ["Cash", "$", "4,236", "$", "3,844"]]
    row = only_row(grid)
    assert not row.kept and row.bare == (2, 4)


def test_a_dash_is_a_value():
    assert only_row([YEARS, ["Deposits", "—", "2,772"]]).kept
    assert only_row([YEARS, ["Preferred stock", "—", "—"]]).kept
    row = only_row([["", "2022", "2021", ""], ["Deposits", "—", "2,772", "—"]])
    assert not row.kept and row.bare == (3,)


def test_a_value_under_a_head_of_its_own_is_kept():
    grid = [["", "2021", "2020", "% change"], ["Revenue", "5", "4", "25 %"]]
    assert only_row(grid).kept
    grid = [["", "", "2021", "", "2020"], ["", "Shares", "Amount", "Shares", "Amount"]]
    grid.append(["Balance", "4,291,434", "$ 429", "4,291,434", "$ 429"])
    assert only_row(grid).kept


def test_a_footnote_marker_in_a_value_column_is_detached_and_the_row_still_scored():
    grid = [["", "", "2022", "2021"], ["Other income", "(a)", "1,123", "1,250"], ["", "*", "", ""]]
    score = score_statement(grid)
    assert score.markers == 2
    assert [(r.row, r.kept) for r in score.rows] == [(1, True)]


def test_a_parenthesized_digit_is_an_amount_unless_its_column_holds_only_markers():
    grid = [YEARS, ["Other", "(1)", "2"], ["Total", "(8)", "(9)"]]
    score = score_statement(grid)
    assert score.markers == 0 and all(r.kept for r in score.rows)
    grid = [["", "", "2022", "2021"], ["Revenue", "(1)", "10", "9"], ["Costs", "", "4", "3"]]
    score = score_statement(grid)
    assert score.markers == 1 and all(r.kept for r in score.rows)


def test_rows_without_a_label_or_a_value_are_not_scored():
    grid = [YEARS, ["Current assets:", "", ""], ["", "$ 6,906", "$ 6,710"], ["Cash", "1", "2"]]
    assert [r.row for r in score_statement(grid).rows] == [3]


def test_a_table_without_period_columns_scores_nothing():
    grid = [["", "Common Stock", "Retained Earnings"], ["Balance", "(1)", "(a)"], ["Net", "5", "6"]]
    score = score_statement(grid)
    assert (score.columns.periods, score.rows, score.markers) == (frozenset(), [], 0)
