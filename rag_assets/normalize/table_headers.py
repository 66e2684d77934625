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
they are, as they may be the first line of one column's own head, unless a rule drawn under
the label says which columns it heads (`Fair value hierarchy` over Levels 1 to 3): each column
whose centre the rule covers takes the head the parser read above the rule, also where the
grid cut the head into pieces (`United | States`). A head with no rule that the grid cut at
column edges (`Yea | r ended December | 31,`, `202 | 1`) is whole again in each column it
crosses, as the parser read it (its `spans`), before the heading rows are counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rag_assets.text.normalize import sorted_characters

# A cell's box, a rule and a head cut at column edges as the parser writes them (JSON
# lists): [x0, y0, x1, y1], [x0, x1, y, head] and [row, first column, last column, head].
Box = Sequence[float]
Rule = Sequence[Any]
Span = Sequence[Any]

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


def spread_spanning_labels(
    grid: list[list[str]],
    header_rows: int,
    cells: Sequence[Sequence[Box | None]] = (),
    rules: Sequence[Rule] = (),
) -> list[list[str]]:
    """`grid` with the labels of each upper heading row spread over the cells they head: over
    the columns a rule under the label spans, given the grid's cell boxes and the table's
    rules (parsers/table_geometry.py); then, for cells still empty over a labelled column, the
    nearest label when that label names a period (the first column, the rows' labels, aside)."""
    out = [list(row) for row in grid]
    for r in range(min(header_rows - 1, len(cells))):
        for col, text in ruled_heads(grid, r, cells[r], rules):
            out[r][col] = text
    for r in range(header_rows - 1):
        row = grid[r]
        labels = [col for col, cell in enumerate(row) if col and cell.strip()]
        for col in range(1, len(row)):
            if row[col].strip() or not _labelled_below(grid[r + 1 : header_rows], col):
                continue
            nearest = min(labels, key=lambda label: (abs(label - col), label > col), default=None)
            # Other labels over empty neighbours may be first lines of one column's own head
            # (`Earnings` over `per diluted share`): only periods spread.
            if nearest is not None and _PERIOD.search(row[nearest]) and not out[r][col].strip():
                out[r][col] = row[nearest]
    return out


def ruled_heads(
    grid: list[list[str]], r: int, boxes: Sequence[Box | None], rules: Sequence[Rule]
) -> list[tuple[int, str]]:
    """(column, text) for the cells of heading row `r` under a ruled head: of the columns whose
    centre a rule covers (two or more, the rows' labels aside), those with anything under
    them take the head set above the rule, the others are emptied, when the row's cells over
    them hold that head's characters and no others (the head in one cell, or cut into pieces
    over several)."""
    row = grid[r]
    found = []
    for left, right, _y, head in (rule for rule in rules if len(rule) > 3 and rule[3]):
        covered = [
            col
            for col, box in enumerate(boxes)
            if col
            and col < len(row)
            and box is not None
            and left - 1 <= (box[0] + box[2]) / 2 <= right + 1
        ]
        headed = [col for col in covered if _labelled_below(grid[r + 1 :], col)]
        if len(headed) > 1 and sorted_characters(row[c] for c in covered) == sorted_characters(
            [head]
        ):
            found.extend((col, head if col in headed else "") for col in covered)
    return found


def with_cut_heads(grid: list[list[str]], spans: Sequence[Span]) -> list[list[str]]:
    """`grid` with each head the parser found cut at column edges (its spans, from a table's
    first rows) whole in the columns it crosses that have anything under them, the others
    emptied; before the heading rows are counted, as a `202 | 1` cut from `2021` is no
    amount. The rows' labels aside (a span from the first column is a title across the
    table, left as it is); a span the grid no longer matches (the cells changed since), or
    whose words are half or more numbers other than years (`3,000 2015-09-21`: values of a
    first row that is data, set close together), is left out."""
    out = [list(row) for row in grid]
    for r, first, last, text in (s for s in spans if len(s) == 4):
        if not (r < len(grid) and 0 < first < last < len(grid[r])):
            continue
        covered = range(first, last + 1)
        words = text.split()
        numbers = sum(any(c.isdigit() for c in w) and not _YEAR.match(w) for w in words)
        if 2 * numbers >= len(words) or sorted_characters(
            grid[r][c] for c in covered
        ) != sorted_characters([text]):
            continue
        for c in covered:
            out[r][c] = text if _labelled_below(grid[r + 1 :], c) else ""
    return out


def _labelled_below(rows: list[list[str]], col: int) -> bool:
    return any(col < len(row) and row[col].strip() for row in rows)


def _has_amount(row: list[str]) -> bool:
    return any(_is_amount(cell) for cell in row[1:])


def _is_amount(cell: str) -> bool:
    text = " ".join(cell.split())
    return bool(_AMOUNT.match(text)) and not _YEAR.match(text)
