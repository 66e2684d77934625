"""Whether a financial statement's values stay under their periods, row by row.

A statement's grid (`TableData.grid()`: rows x columns of cell text) has its line items in the
first column, the stub, and a column per period (`2022 | 2021`). Its parts, as read here:

- amount: digits (thousands commas, decimals) with a currency sign, parentheses for a
  negative, a minus or a percent sign as the case may be (`$ 16,388`, `(112)`, `10.13`,
  `12.5 %`), a range of two (`0.75 - 5.82`, `2019-2040`), or a dash standing for nil (`—`, `–`,
  `-`).
- value cell: a cell made of amounts, beside which only a stray currency sign (one the table
  finder cut off its amount) or a footnote marker (`1,123 (e)`; `$ 705 (1)`: a `(1)` ending a
  cell after an amount) may stand. A cell with other text (`NM`, a piece of a label) holds no
  value.
- cut cell: a cell of amount characters only (digits, `$ , . ( ) %`) that reads as no amounts:
  a piece of a value whose rest went to another cell (`$ 8,42` then `1`).
- footnote marker: a cell holding nothing but `(a)`, `(ab)`, `*`, `†`, `‡`, `§`, or `(1)` to
  `(99)` in a bare column (below) whose cells below the header are all markers (elsewhere
  `(1)` is the amount minus one, as under a year or in a change column).
- period: a cell naming one year 19xx/20xx (not inside an amount: `2,018`, `$2018`) or a date
  (`March 31`, `Dec. 31`, `3/31/2021`), and no comparison (a second year, `change`, `vs`, `%`:
  `2022 vs. 2021` heads a change column).
- header: the rows above the first row with an amount that is neither a period nor a marker
  (a row of years under `Years ended December 31,` is header, whatever the parser's
  `header_rows` says).
- period columns: the columns, the stub aside, with a period in the header's last row that has
  one: the finest split (`Three months ended March 31,` spans the years below it). Headed
  columns: the other columns, the stub aside, whose header holds text (`% change`, `Shares`).
  Bare columns: the rest.
- scored row: a row below the header whose stub holds a label (text that is no value or
  marker) and that has a value cell.

A scored row is kept when each of its value cells holds one amount and sits in a period or a
headed column (under its own head, so under no wrong period), and it has no cut cell. It is
shifted otherwise, for one of three reasons: a value cell in a bare column (with `2022 | | 2021`
over `$ 4,236 | 5 | $ 3,844`, a value slid off its period); a cell holding two amounts (one of
them stands under a period that is not its own: `2022` over `$ 1,127 640`); a cut cell. A
footnote marker in any column but the stub is detached from its row's label (`Other income |
(a) | 1,123`, or a marker on a row of its own): counted over every row below the header, apart
from the rows' scores.

A grid without period columns (an equity statement whose columns are its components) has no
scored rows and no markers counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

Grid = Sequence[Sequence[str]]

_CURRENCY = r"[$€£¥]"
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+"
_SIGNED = rf"\(?\s*{_CURRENCY}?\s*\(?\s*[-−]?(?:{_NUMBER})\s*%?\s*\)?\s*%?"
_AMOUNT = rf"{_SIGNED}(?:\s*[-–]\s*{_SIGNED})?|[—–-]+\s*%?"
_ONE_AMOUNT = re.compile(_AMOUNT)
_LETTER_MARK = r"\([a-z]{1,2}\)|[*†‡§]+"
_VALUE_CELL = re.compile(rf"\s*(?:(?:{_AMOUNT}|{_CURRENCY}|{_LETTER_MARK})\s*)+", re.I)
_TRAILING_MARK = re.compile(r"(?<=[\d)%—–-])\s+\(\d{1,2}\)\s*$")  # after an amount
_AMOUNT_CHARS = re.compile(r"[\d\s$€£¥,.()%—–-]*\d[\d\s$€£¥,.()%—–-]*")
_MARKERS = re.compile(rf"\s*(?:(?:{_LETTER_MARK}|\(\d{{1,2}}\))\s*)+", re.I)
_LETTER_MARKERS = re.compile(rf"\s*(?:(?:{_LETTER_MARK})\s*)+", re.I)
_YEAR = re.compile(r"(?<![\d$])(?<!\d[,.])(?:19|20)\d{2}(?![\d%]|[,.]\d)")
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(rf"\b{_MONTH}\s+\d{{1,2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b", re.I)
_COMPARISON = re.compile(r"change|\bvs\b|versus|compared|variance|%", re.I)


def amounts(cell: str) -> int:
    """How many amounts a value cell holds; 0 for any other cell."""
    if not _VALUE_CELL.fullmatch(cell) or is_marker(cell, digits=False):
        return 0
    return len(_ONE_AMOUNT.findall(_TRAILING_MARK.sub("", cell)))


def is_cut(cell: str) -> bool:
    return bool(_AMOUNT_CHARS.fullmatch(cell)) and not amounts(cell) and not is_marker(cell)


def is_marker(cell: str, digits: bool = True) -> bool:
    """A cell of footnote markers only; `(1)` counts only with `digits`."""
    return bool((_MARKERS if digits else _LETTER_MARKERS).fullmatch(cell))


def is_period(cell: str) -> bool:
    if _COMPARISON.search(cell):
        return False
    years = set(_YEAR.findall(cell))
    return len(years) == 1 or (not years and bool(_DATE.search(cell)))


def header_end(grid: Grid) -> int:
    """The first row below the header (len(grid) when no row holds an amount)."""
    for index, row in enumerate(grid):
        if any(amounts(cell) and not is_period(cell) and not is_marker(cell) for cell in row):
            return index
    return len(grid)


@dataclass(frozen=True)
class Columns:
    """The header's reading of a grid's columns; the stub, column 0, is in none of the sets."""

    header_end: int
    periods: frozenset[int]
    headed: frozenset[int]
    markers: frozenset[int]  # bare columns whose cells below the header are all markers


def read_columns(grid: Grid) -> Columns:
    end = header_end(grid)
    header, body = grid[:end], grid[end:]
    periods: frozenset[int] = frozenset()
    for row in reversed(header):
        periods = frozenset(c for c, cell in enumerate(row) if c > 0 and is_period(cell))
        if periods:
            break
    headed = frozenset(
        c
        for row in header
        for c, cell in enumerate(row)
        if c > 0 and c not in periods and cell.strip() and not is_marker(cell)
    )
    width = max((len(row) for row in grid), default=0)
    markers = frozenset(
        c
        for c in range(1, width)
        if c not in periods
        and c not in headed
        and (cells := [row[c] for row in body if c < len(row) and row[c].strip()])
        and all(is_marker(cell) for cell in cells)
    )
    return Columns(end, periods, headed, markers)


def _is_marker_in(cell: str, column: int, columns: Columns) -> bool:
    return is_marker(cell, digits=column in columns.markers)


@dataclass(frozen=True)
class RowScore:
    row: int  # index in the grid
    bare: tuple[int, ...]  # bare columns holding a value
    crowded: tuple[int, ...]  # columns whose cell holds more than one amount
    cut: tuple[int, ...]  # columns holding a piece of a value

    @property
    def kept(self) -> bool:
        return not (self.bare or self.crowded or self.cut)


def score_row(index: int, row: Sequence[str], columns: Columns) -> RowScore | None:
    """The row's score, or None when it is not a scored row (no label, or no value)."""
    if not row or not row[0].strip() or amounts(row[0]) or is_marker(row[0]):
        return None
    bare, crowded, cut = [], [], []
    values = False
    for c, cell in enumerate(row[1:], start=1):
        if _is_marker_in(cell, c, columns):
            continue
        if is_cut(cell):
            cut.append(c)
        count = amounts(cell)
        if not count:
            continue
        values = True
        if count > 1:
            crowded.append(c)
        if c not in columns.periods and c not in columns.headed:
            bare.append(c)
    if not values:
        return None
    return RowScore(index, tuple(bare), tuple(crowded), tuple(cut))


def detached_markers(row: Sequence[str], columns: Columns) -> int:
    return sum(_is_marker_in(cell, c, columns) for c, cell in enumerate(row) if c > 0)


@dataclass(frozen=True)
class TableScore:
    columns: Columns
    rows: list[RowScore]
    markers: int  # detached footnote markers below the header


def score_statement(grid: Grid) -> TableScore:
    """Every scored row of a statement's grid and its detached footnote markers; none for a
    grid without period columns."""
    columns = read_columns(grid)
    if not columns.periods:
        return TableScore(columns, [], 0)
    body = range(columns.header_end, len(grid))
    rows = [score for i in body if (score := score_row(i, grid[i], columns)) is not None]
    markers = sum(detached_markers(grid[i], columns) for i in body)
    return TableScore(columns, rows, markers)
