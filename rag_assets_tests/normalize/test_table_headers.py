"""Heading rows and periods spanning columns in table grids that mark neither."""

from __future__ import annotations

import pytest

from rag_assets.normalize.table_headers import header_row_count, spread_spanning_labels

AVERAGE_BALANCES = [
    ["", "", "2022", "", "", "2021", ""],
    ["Years Ended December 31,", "Average Balance", "Interest Income", "Average Yield",
     "Average Balance", "Interest Income", "Average Yield"],
    ["Interest-earning assets", "", "", "", "", "", ""],
    ["U.S.", "$ 22,022", "$ 462", "2.1 %", "$ 25,583", "$ 34", "0.1 %"],
]  # fmt: skip


def test_a_statements_heads_take_their_rows_and_each_period_spans_its_columns() -> None:
    assert header_row_count(AVERAGE_BALANCES) == 2
    spread = spread_spanning_labels(AVERAGE_BALANCES, 2)
    # Each year is centred over its three columns: each of them is headed by it.
    assert spread[0] == ["", "2022", "2022", "2022", "2021", "2021", "2021"]
    assert spread[1:] == AVERAGE_BALANCES[1:]


def test_rows_with_a_unit_note_or_a_period_head_the_table() -> None:
    grid = [
        ["", "Three months ended March 31,", "", ""],
        ["", "", "2021", "2020"],
        ["(in millions)", "Fixed Income Markets", "Equity Markets", "Total Markets"],
        ["Principal transactions", "$ 3,564", "$ 2,482", "$ 6,046"],
    ]
    assert header_row_count(grid) == 3
    spread = spread_spanning_labels(grid, 3)
    assert spread[0][1:] == ["Three months ended March 31,"] * 3
    assert spread[1][1:] == ["2021", "2021", "2020"]


@pytest.mark.parametrize(
    "grid",
    [
        # A register: no row holds an amount until `5 | ... | 0`, but every row has a label.
        [
            ["Bits", "Field", "Access", "Reset"],
            ["31:16", "Reserved", "RO", "0x0000"],
            ["15:8", "Timeout Counter Value", "RW", "0x0E"],
            ["5", "High Speed Enable", "RW", "0"],
        ],
        # A table of text: nothing to tell a head from.
        [["Term", "Meaning"], ["NPSH", "net positive suction head"], ["BEP", "best point"]],
        # A section row (`Assets`) starts the body.
        [["(in millions)", "2022", "2021"], ["Assets", "", ""], ["Cash", "$ 3,655", "$ 4,564"]],
    ],
)
def test_the_first_row_alone_heads_tables_whose_next_rows_are_body(grid) -> None:
    assert header_row_count(grid) == 1


def test_a_head_that_names_no_period_stays_over_its_own_column() -> None:
    # `Earnings` is the first line of the last column's head, not a label over all of them.
    grid = [
        ["", "", "", "Earnings"],
        ["(Dollars in millions)", "Net Sales", "Operating Income", "per diluted share change"],
        ["Q4 2018 GAAP", "$ 7,945", "$ 1,783", "167.1 %"],
    ]
    assert header_row_count(grid) == 2
    assert spread_spanning_labels(grid, 2) == grid
