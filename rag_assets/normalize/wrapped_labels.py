"""Row labels a table finder split over two rows: a label wrapped onto a second line becomes a
row of its own when the grid draws a row per line of text.

A statement sets a long label's values beside its last line (`Foreign exchange and precious
metals lease` over `contracts (1) | $ 419 | $ 780`); a schedule beside its first (`Eye
haemorrhage (including` over `conjunctival haemorrhage)`, nothing beside it). The second line
of a wrapped label opens in lower case. A body row whose label does is joined to the row above
when one of the two holds nothing but its label; two rows that both hold values stay apart,
as does a label after one that ends a sentence or a list's lead (`.`, `:`).
"""

from __future__ import annotations

import re

# A label that ends here is complete: the next line is a row of its own.
_COMPLETE = re.compile(r"[.:;!?]\s*$")


def join_wrapped_labels(grid: list[list[str]], header_rows: int) -> list[list[str]]:
    """`grid` with each wrapped label's rows joined into one; the header untouched, and a
    grid with no value beside any label (a list set as a table) as it is."""
    if not any(_has_values(row) for row in grid[header_rows:]):
        return grid
    out = [list(row) for row in grid[:header_rows]]
    for row in grid[header_rows:]:
        above = out[-1] if len(out) > header_rows else None
        if above is not None and _continues(above, row):
            values = row if _has_values(row) else above
            out[-1] = [_joined(above[0].strip(), row[0].strip()), *values[1:]]
        else:
            out.append(list(row))
    return out


def _joined(first: str, second: str) -> str:
    """A label's two lines as one: a word hyphenated at the break (`after-` `tax`) keeps its
    hyphen and no space."""
    return f"{first}{second}" if first.endswith("-") else f"{first} {second}"


def _continues(above: list[str], row: list[str]) -> bool:
    label, previous = row[0].strip() if row else "", above[0].strip() if above else ""
    if not label or not previous or not label[0].islower() or _COMPLETE.search(previous):
        return False
    return not (_has_values(above) and _has_values(row))


def _has_values(row: list[str]) -> bool:
    return any(cell.strip() for cell in row[1:])
