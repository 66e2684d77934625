"""Rows a table finder stacked into one: each cell holds several rows' items, line under line.

Without a rule between them, a table finder may read two or more rows as one: every cell then
holds one item per row, one under the other (`Equity\\nCommodity` beside `69,570\\n23,387`; a
rule's cost table with `Stabilizer wiring change ....\\nAOA sensor system test ....`). A row
is split back when its label cell and every other filled cell hold the same number of items
and the items read as rows of their own: they end with dot leaders, or every item beside the
label is a value (a number, an amount, a dash). A currency sign on a line of its own belongs
to the value under it (`$\\n1,127\\n640` holds two values). A label wrapped over two lines
beside one value, a header's `Net\\nSales` or a cell of bullets stays as it is.
"""

from __future__ import annotations

import re

from rag_assets.normalize.leaders import LEADER, without_leaders

# A value a statement or schedule sets in a cell: `$ (1,234)`, `12.5 %`, `$ —`, `Up to $3,790.`
_VALUE = re.compile(
    r"^(?:up\s+to\s+)?[$€£¥]?\s*[(\-–−]?\s*[$€£¥]?\s*\d[\d,.]*\s*\)?\s*%?\.?$|^[$€£¥]?\s*[—–\-]+$",
    re.I,
)
# What ends a line that the next line continues (`... $85 per hour =`, `verification, INOP`).
_CONTINUED_END = re.compile(r"(?:[=×+*/,&(-]|\b(?:and|or|of|per|to|the|in|for))\s*$", re.I)
_LEADER_END = re.compile(rf"{LEADER.pattern}$")
_CURRENCY_SIGN = re.compile(r"^[$€£¥]$")


def split_stacked_rows(grid: list[list[str]], header_rows: int) -> list[list[str]]:
    """`grid` with each stacked body row split into the rows it holds; other rows unchanged."""
    out = grid[:header_rows]
    for row in grid[header_rows:]:
        out.extend(_split_row(row) or [row])
    return out


def cell_items(cell: str) -> list[str]:
    """The items a cell holds, one per row it covers, leaders removed: a line ended by a dot
    leader ends an item; a line continues the item before when that one ends mid-phrase
    (`... per hour =`) or the line starts in lower case (a wrapped item)."""
    items: list[str] = []
    for line in _lines(cell):
        wrapped = _CONTINUED_END.search(items[-1]) or line[0].islower() if items else False
        if wrapped and not _LEADER_END.search(items[-1]):
            items[-1] = f"{items[-1]} {line}"
        else:
            items.append(line)
    return [without_leaders(item) for item in items]


def _split_row(row: list[str]) -> list[list[str]] | None:
    label = row[0] if row else ""
    if "\n" not in label:
        return None
    has_leaders = any(LEADER.search(cell) for cell in row)
    items = [_items(cell, has_leaders) for cell in row]
    count = len(items[0])
    filled = [cell for cell in items[1:] if cell]
    if count < 2 or not filled or any(len(cell) != count for cell in filled):
        return None
    if not has_leaders and not all(_VALUE.match(item) for cell in filled for item in cell):
        return None
    return [[cell[n] if cell else "" for cell in items] for n in range(count)]


def _items(cell: str, by_leaders: bool) -> list[str]:
    """With leaders in the row, items as `cell_items` reads them; without, a line each (the
    values beside must then all be values, which do not wrap)."""
    if by_leaders:
        return cell_items(cell)
    return _lines(cell)


def _lines(cell: str) -> list[str]:
    """The cell's lines, a currency sign alone on one joined to the line under it."""
    lines: list[str] = []
    for line in (part.strip() for part in cell.splitlines()):
        if not line:
            continue
        if lines and _CURRENCY_SIGN.match(lines[-1]):
            lines[-1] = f"{lines[-1]} {line}"
        else:
            lines.append(line)
    return lines
