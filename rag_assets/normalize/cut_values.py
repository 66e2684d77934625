"""Values a table finder cut apart at a column boundary, put back together.

Where a column boundary falls inside a value, a piece of it lands in the next or the previous
cell: a currency sign ends the cell before its digits (`22.4 % $` beside `1,672`), a percent
sign opens the cell after them (`19` beside `% $ 39,117`), a footnote marker sits alone in
the cell after (`(0.18)` beside `(h)`), or the digits themselves are cut (`$ 8,42` beside `1`,
`23` beside `,022`). The value then reads as another, and its
neighbour as holding what it does not. Each piece goes back to the value it belongs to; a
number is joined only where its thousands group is cut (a group of fewer than three digits
completed by the next cell's), so two whole values side by side never merge, and only in a
table that writes thousands with commas (`1,234`), where `8,42` cannot be a decimal.
"""

from __future__ import annotations

import re

_TRAILING_SIGN = re.compile(r"\s*([$€£¥])$")
_LEADING_PERCENT = re.compile(r"^%(?=\s|$)\s*")
_ENDS_NUMBER = re.compile(r"\d\)?$")
# A thousands group cut short at the end of a cell, and the digits that complete it.
_CUT_GROUP = re.compile(r"\d,(\d{1,2})$")
_GROUP_REST = re.compile(r"^(\d{1,2})(?=\s|$)")
_GROUP_OPENING = re.compile(r"^,\d{3}(?=[\s,.)%]|$)")
_ENDS_DIGITS = re.compile(r"(?:^|[\s$€£¥(])\d{1,3}$")
# A footnote marker alone in a cell: `(h)`, `*`, `†`; `(2)` would be a negative value.
_MARKER = re.compile(r"^(?:\([a-z]{1,2}\)|[*†‡]{1,3})$")
_COMMA_THOUSANDS = re.compile(r"\d,\d{3}(?![\d,])")
_COMMA_DECIMAL = re.compile(r"\d,\d{1,2}(?!\d)")
_OPENS_VALUE = re.compile(r"^[(\-–—]?\s*\d|^[—–\-]$")
_SIGN = re.compile(r"[$€£¥]")


def values_rejoined(grid: list[list[str]]) -> list[list[str]]:
    """`grid` with the pieces of values cut at its column boundaries put back together."""
    cells = [cell for row in grid for cell in row]
    thousands = sum(1 for cell in cells if _COMMA_THOUSANDS.search(cell))
    decimals = sum(1 for cell in cells if _COMMA_DECIMAL.search(cell))
    numbers = thousands >= 3 and thousands > 3 * decimals
    out = [list(row) for row in grid]
    for row in out:
        for i in range(len(row) - 1):
            _rejoin(row, i, numbers)
    return out


def _rejoin(row: list[str], i: int, numbers: bool) -> None:
    left, right = row[i].rstrip(), row[i + 1].strip()
    if numbers and _rejoin_number(row, i, left, right):
        return
    if left and _MARKER.match(right):
        row[i], row[i + 1] = f"{left} {right}", ""
        return
    if _ENDS_NUMBER.search(left) and (percent := _LEADING_PERCENT.match(right)):
        row[i], row[i + 1] = f"{left} %", right[percent.end() :]
        left, right = row[i], row[i + 1]
    sign = _TRAILING_SIGN.search(left)
    if sign and _OPENS_VALUE.match(right) and not _SIGN.search(right):
        row[i], row[i + 1] = left[: sign.start()].rstrip(), f"{sign[1]} {right}"


def _rejoin_number(row: list[str], i: int, left: str, right: str) -> bool:
    """Join a number whose thousands group the boundary cut; True when it did."""
    cut, rest = _CUT_GROUP.search(left), _GROUP_REST.match(right)
    if cut and rest and len(cut[1]) + len(rest[1]) == 3:
        row[i], row[i + 1] = left + rest[1], right[rest.end() :].strip()
        return True
    if _ENDS_DIGITS.search(left) and (group := _GROUP_OPENING.match(right)):
        row[i], row[i + 1] = left + group[0], right[group.end() :].strip()
        return True
    return False
