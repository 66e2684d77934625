"""A table's heading rows, and labels that span several columns, in grids that mark neither.

A layout model's table grid says nothing of headers: a statement's heads come as two or three
rows (`Three months ended March 31,` over `2021` and `2020`, over `Fixed Income Markets`), and
a label that spans columns sits in one of them, the others left empty. Heading rows are the
leading rows that set labels over the value columns, hold no amount (years and dates are
labels) and have no row label of their own (only a unit note such as `(in millions)`) unless
they name a period; a row with amounts, a row label (`31:16 | Reserved`) or a label alone
(`Assets`, a section of the body) starts the body. In a heading row above another, an empty cell over a labelled
column takes the nearest period its row names (`2021`, `Year ended December 31,`): a period
spans the columns around it, as typesetters centre it over them. Other labels stay where
they are, as they may be the first line of one column's own head.
"""

from __future__ import annotations

import re

# An amount in a cell: `$ 1,234`, `(56)`, `12.5 %`, `0.85`; a year or a date is a label.
_AMOUNT = re.compile(r"^(?:[$€£¥]\s*)?[(\-–−]?\s*[$€£¥]?\s*\d[\d,.]*\s*\)?\s*%?$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
# A label naming a period (`Year ended December 31,`, `2022`, `Three months ended`).
_PERIOD = re.compile(
    r"\b(?:19|20)\d\d\b|\b(?:ended|months?|quarters?|years?|weeks?)\b"
    r"|\b(?:january|february|march|april|may|june|july|august|september|october|november"
    r"|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b",
    re.I,
)
# A note on the rows' units in the first column: `(in millions)`, `(Dollars in millions)`.
_UNIT_NOTE = re.compile(r"^\(.*\)$")
# Heading rows above the body; more is a table whose body holds no amounts at all.
MAX_HEADER_ROWS = 4


def header_row_count(grid: list[list[str]]) -> int:
    """How many leading rows head the table: at least the first, at most MAX_HEADER_ROWS,
    and none of the rows when no later row holds an amount (a table of text)."""
    if not any(_has_amount(row) for row in grid[1:]):
        return min(1, len(grid))
    count = 1
    for row in grid[1 : MAX_HEADER_ROWS + 1]:
        if _has_amount(row) or not any(cell.strip() for cell in row[1:]):
            break
        # A body row of text (a register's `31:16 | Reserved`) also holds no amount: a head
        # has no row label of its own, only a unit note, or names a period.
        label = " ".join(row[0].split()) if row else ""
        if label and not _UNIT_NOTE.match(label) and not any(map(_PERIOD.search, row)):
            break
        count += 1
    return min(count, len(grid) - 1) if len(grid) > 1 else count


def spread_spanning_labels(grid: list[list[str]], header_rows: int) -> list[list[str]]:
    """`grid` with the periods of each upper heading row spread over the empty cells around
    them that head a labelled column: an empty cell takes its nearest label when that label
    names a period (the first column, the rows' labels, aside)."""
    out = [list(row) for row in grid]
    for r in range(header_rows - 1):
        row = grid[r]
        labels = [col for col, cell in enumerate(row) if col and cell.strip()]
        for col in range(1, len(row)):
            if row[col].strip() or not _labelled_below(grid[r + 1 : header_rows], col):
                continue
            nearest = min(labels, key=lambda label: (abs(label - col), label > col), default=None)
            # Other labels over empty neighbours may be first lines of one column's own head
            # (`Earnings` over `per diluted share`): only periods spread.
            if nearest is not None and _PERIOD.search(row[nearest]):
                out[r][col] = row[nearest]
    return out


def _labelled_below(rows: list[list[str]], col: int) -> bool:
    return any(col < len(row) and row[col].strip() for row in rows)


def _has_amount(row: list[str]) -> bool:
    return any(_is_amount(cell) for cell in row[1:])


def _is_amount(cell: str) -> bool:
    text = " ".join(cell.split())
    return bool(_AMOUNT.match(text)) and not _YEAR.match(text)
