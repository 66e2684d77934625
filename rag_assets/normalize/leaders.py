"""Dot-leader tables ("Stabilizer wiring change ........ Up to $3,790") back into rows.

Government and standards PDFs set price lists and schedules as leader lines. A table finder
sees the columns, but may merge consecutive lines into one row (each cell then holds two
rows' values, one line after the other) or split a wrapped description into a row of its
own. The leaders say where each row's key ends, the line breaks inside the other cells
where each value does; the leaders themselves are layout, not content, and go.
"""

from __future__ import annotations

import re

# Four or more dots (or middle dots, ellipses), spaced or not.
LEADER = re.compile(r"[ \t]*(?:[.·•․‥…][ \t]?){4,}[ \t]*")
_LEADER_VALUE = re.compile(r"^(?P<key>.*?\S)(?:[ \t]*(?:[.·•․‥…][ \t]?){4,}[ \t]*)(?P<value>\S.*)$")
_NUMBER = re.compile(r"[-+(]?[$€£¥]?\d[\d,.]*%?\)?[.,;]?(?=\s|$)")


def has_leader(row: list[str]) -> bool:
    return any(LEADER.search(cell) for cell in row)


def is_leader_table(rows: list[list[str]]) -> bool:
    """Most rows hold a leader: a list set with dot leaders, not a grid."""
    with_leader = sum(1 for row in rows if has_leader(row))
    return with_leader >= 2 and with_leader >= 0.5 * len(rows)


def split_leader_rows(rows: list[list[str]]) -> list[list[str]]:
    """Rows of a leader table, one per leader line, leaders stripped; cells keep their lines."""
    out: list[list[str]] = []
    wrapped: list[str] = []  # a key's first lines, set as a row of their own
    for row in rows:
        key_column = next((c for c, cell in enumerate(row) if LEADER.search(cell)), None)
        if key_column is None:
            if row and row[0].strip() and not any(cell.strip() for cell in row[1:]):
                wrapped.append(row[0].strip())  # only the first cell: a wrapped key
                continue
            if wrapped:  # it was no key after all
                out.append([" ".join(wrapped), *[""] * (len(row) - 1)])
                wrapped = []
            out.append(row)
            continue
        keys = _keys(row[key_column])
        values = [_split(cell, len(keys)) for cell in row]
        for n, key in enumerate(keys):
            line = [parts[n] for parts in values]
            line[key_column] = key
            if n == 0 and wrapped:
                line[key_column] = " ".join([*wrapped, key])
                wrapped = []
            out.append(line)
    if wrapped:
        out.append([" ".join(wrapped), *[""] * (len(rows[0]) - 1)])
    return out


def _keys(cell: str) -> list[str]:
    """The keys a cell holds, each ended by its leader. Text after the last leader means the
    cell is one row's key and value ("Stair lift .... $9,900"): one key, leader removed."""
    parts = [" ".join(part.split()) for part in LEADER.split(cell)]
    if parts[-1]:
        return [" ".join(" ".join(parts).split())]
    return parts[:-1]


def _split(cell: str, count: int) -> list[str]:
    """The cell as `count` values: at its own leaders (a value column set with leaders too:
    `Up to $3,790 ...... $0 ....`), else by its lines, else after each of `count` numbers, else
    the whole text with the first row. Leaders never stay in a value."""
    if count == 1:
        return [without_leaders(cell)]
    items = [part for part in map(without_leaders, LEADER.split(cell)) if part]
    if LEADER.search(cell) and len(items) == count:
        return items
    lines = [without_leaders(line) for line in cell.splitlines() if line.strip()]
    if len(lines) == count:
        return lines
    text = without_leaders(cell)
    ends = [match.end() for match in _NUMBER.finditer(text)]
    if len(ends) == count:
        starts = [0, *ends[:-1]]
        return [text[a:b].strip() for a, b in zip(starts, ends, strict=True)]
    return [text, *[""] * (count - 1)]


def without_leaders(text: str) -> str:
    return " ".join(LEADER.sub(" ", text).split())


def leader_lines_as_rows(lines: list[str]) -> list[list[str]] | None:
    """Lines of text set as `key ........ value` (a paragraph to the layout model) as
    [key, value] rows; a line without a leader before one is the start of its key."""
    matches = [_LEADER_VALUE.match(line.strip()) for line in lines]
    if sum(1 for m in matches if m) < max(2, len(lines) // 2):
        return None
    rows: list[list[str]] = []
    wrapped: list[str] = []
    for line, match in zip(lines, matches, strict=True):
        if match is None:
            wrapped.append(" ".join(line.split()))
            continue
        rows.append([" ".join([*wrapped, match["key"]]), without_leaders(match["value"])])
        wrapped = []
    if wrapped:
        rows.append([" ".join(wrapped), ""])
    return rows
