"""A table's body rows as key-value text, headers flattened and footnotes attached.

Where the rows come from: the table element's text first. It holds the markdown chosen
for the table (the parser's structure, or a vision model's reading once
`with_table_markdown` ran), which is the best table there is. Only when that text is not
a markdown table (empty, HTML, prose) are rows taken from `TableData.grid()`.

Markdown keeps one header line, into which the structure path already folded a
multi-level header (`Size / Bytes`); a parser or a vision model may also leave the second
header level as the first body row. So the header depth is re-detected for both sources:
a row stays in the header while the row above it groups columns (a blank or a repeated
cell), it holds no number and the row below it does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Literal

from rag_assets.contracts.ir import DocumentElement
from rag_assets.text.markdown import RULE_CELL, row_cells

_BOLD = re.compile(r"\*\*|__")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_NUMBER = r"[-+±~<>≤≥]?\s*(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d,.:/]*%?)"
_NUMERIC = re.compile(rf"^{_NUMBER}(?:\s+{_NUMBER})*$")
_MAX_HEADER_ROWS = 3
_RESERVED = re.compile(r"^(?:reserved|rsvd|rsv|保留|预留|預留)(?![a-z])", re.IGNORECASE)
_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_FROM_SUPERSCRIPT = str.maketrans(_SUPERSCRIPTS, "0123456789")
# A footnote opens with its marker: "1 ...", "* ...", "a) ...", "[2] ...", "<sup>b</sup> ...",
# "¹ ...", "Note 1: ..."; set as a list item ("- (1) ...") too, as parsers often render notes.
_FOOTNOTE = re.compile(
    r"^\s*(?:[-*+•]\s+)?"
    r"(?:(?i:note)\s+(?P<note>\w{1,3})\s*[:.]|<sup>(?P<sup>[^<\s]{1,3})</sup>"
    rf"|(?P<uni>[{_SUPERSCRIPTS}]{{1,2}})"
    r"|\^(?P<caret>\w{1,3})|\[(?P<bracket>[^\]\s]{1,3})\]|\((?P<paren>[^)\s]{1,3})\)"
    r"|(?P<bare>\d{1,2}|[a-z]|\*{1,3}|[†‡§¶])(?:[.):]\s*|\s+))\s*(?P<text>\S.*)$",
    re.DOTALL,
)
# A marker at the end of a cell, before any closing punctuation ("… clocks (1)."). A bare
# digit counts only right after a lowercase letter or a closing parenthesis ("Value1"), so
# that names such as "ADMA2", "CMD12" or "Figure 1" keep their digits.
_CELL_MARKER = re.compile(
    r"(?:<sup>(?P<sup>[^<\s]{1,3})</sup>|\^(?P<caret>\w{1,3})|\[(?P<bracket>[^\]\s]{1,3})\]"
    rf"|(?P<uni>[{_SUPERSCRIPTS}]{{1,2}})"
    r"|\((?P<paren>[a-z0-9*†‡§]{1,2})\)|(?P<symbol>\*{1,3}|[†‡§¶])|(?<=[a-z)])(?P<digit>\d{1,2}))"
    r"\s*(?P<tail>[.,;:。，；]?)\s*$"
)
_MARKER_GROUPS = ("note", "sup", "uni", "caret", "bracket", "paren", "bare", "symbol", "digit")


@dataclass(frozen=True)
class ParsedTable:
    rows: list[list[str]]  # header rows first, every row as wide as the table
    header_depth: int
    spans: list[tuple[int, int] | None]  # each row's line in the element's text (markdown only)
    notes: list[str]  # lines after a markdown table: its footnotes
    source: Literal["markdown", "structure"]


@dataclass(frozen=True)
class TableRow:
    row_index: int  # among the body rows, 0-based
    text: str  # "Bits: 15:8 | Field: Timeout Counter Value | ..."
    reserved: bool
    span: tuple[int, int] | None


def parse_table(element: DocumentElement) -> ParsedTable | None:
    """The table's rows: its markdown when that is a table, else its structure, else None."""
    parsed = _from_markdown(element.text)
    if parsed is None and element.table is not None and element.table.num_cols:
        grid = [[_clean(cell) for cell in row] for row in element.table.grid()]
        depth = max(element.table.header_rows, 1) if len(grid) > 1 else 0
        parsed = ParsedTable(grid, depth, [None] * len(grid), [], "structure")
    if parsed is None or not parsed.rows:
        return None
    return replace(parsed, header_depth=_header_depth(parsed.rows, parsed.header_depth))


def table_rows(table: ParsedTable, footnotes: Sequence[str]) -> list[TableRow]:
    """Body rows as `key: value` pairs; a marked cell gets its footnote as `(Note: ...)`."""
    notes = _notes([*footnotes, *table.notes])
    header = table.rows[: table.header_depth]
    keys, column_notes = _keys(header, len(table.rows[0]), notes)
    rows: list[TableRow] = []
    for offset, cells in enumerate(table.rows[table.header_depth :]):
        if header and cells == header[-1]:
            continue  # a header repeated where a table continues on the next page
        pairs = []
        for key, cell, column_note in zip(keys, cells, column_notes, strict=True):
            value, note = _split_marker(cell, notes)
            value = _with_notes(value, [n for n in (note, column_note) if n])
            if value:
                pairs.append(f"{key}: {value}" if key else value)
        if pairs:
            rows.append(
                TableRow(
                    row_index=offset,
                    text=" | ".join(pairs),
                    reserved=any(_RESERVED.match(cell) for cell in cells),
                    span=table.spans[table.header_depth + offset],
                )
            )
    return rows


def _clean(cell: str) -> str:
    return " ".join(_BOLD.sub("", _BREAK.sub(" ", cell)).split())


def _cells(line: str) -> list[str]:
    return [_clean(cell.replace("\\|", "|")) for cell in row_cells(line)]


def _from_markdown(text: str) -> ParsedTable | None:
    """Rows of a markdown table: a header line, a rule, body lines; then only footnote lines."""
    lines: list[tuple[int, int, str]] = []
    start = 0
    for line in text.split("\n"):
        if line.strip():
            lines.append((start, start + len(line.rstrip()), line))
        start += len(line) + 1
    table_lines = 0
    while table_lines < len(lines) and "|" in lines[table_lines][2]:
        table_lines += 1
    if table_lines < 2 or any("|" in line for *_, line in lines[table_lines:]):
        return None
    header = _cells(lines[0][2])
    rule = _cells(lines[1][2])
    if len(rule) != len(header) or not all(RULE_CELL.match(cell) for cell in rule):
        return None
    width = len(header)
    rows, spans = [header], [(lines[0][0], lines[0][1])]
    for line_start, line_end, line in lines[2:table_lines]:
        cells = _cells(line)
        rows.append((cells + [""] * width)[:width])  # GFM: missing cells are empty, extra ignored
        spans.append((line_start, line_end))
    notes = [line.strip() for *_, line in lines[table_lines:]]
    return ParsedTable(rows, 1, spans, notes, "markdown")


def _header_depth(rows: list[list[str]], depth: int) -> int:
    while depth < min(len(rows) - 1, _MAX_HEADER_ROWS) and _continues_header(
        rows[depth - 1], rows[depth], rows[depth + 1]
    ):
        depth += 1
    return depth


def _continues_header(above: list[str], row: list[str], below: list[str]) -> bool:
    groups = any(not cell for cell in above) or any(a and a == b for a, b in pairwise(above))
    return (
        groups
        and any(row)
        and not any(_NUMERIC.match(cell) for cell in row if cell)
        and any(_NUMERIC.match(cell) for cell in below if cell)
    )


def _keys(
    header: list[list[str]], width: int, notes: dict[str, str]
) -> tuple[list[str], list[str | None]]:
    """One composite key per column (`Size / Bytes`) and the footnote a header cell marks."""
    keys: list[str] = []
    column_notes: list[str | None] = []
    for column in range(width):
        labels: list[str] = []
        column_note = None
        for row in header:
            label, note = _split_marker(row[column], notes)
            column_note = column_note or note
            if label and label not in labels:
                labels.append(label)
        keys.append(" / ".join(labels))
        column_notes.append(column_note)
    return keys, column_notes


def is_footnote(line: str) -> bool:
    """A line that opens with a footnote marker."""
    return _FOOTNOTE.match(line) is not None


def _marker(match: re.Match[str]) -> str:
    """The marker however it was written: `¹`, `<sup>1</sup>`, `(1)` and `1` are all "1"."""
    found = next(match.group(g) for g in _MARKER_GROUPS if match.groupdict().get(g))
    return found.translate(_FROM_SUPERSCRIPT)


def _notes(footnotes: Sequence[str]) -> dict[str, str]:
    """Footnote text by marker; the first footnote with a marker wins."""
    notes: dict[str, str] = {}
    for footnote in footnotes:
        match = _FOOTNOTE.match(footnote)
        if match:
            notes.setdefault(_marker(match), " ".join(match.group("text").split()))
    return notes


def _split_marker(cell: str, notes: dict[str, str]) -> tuple[str, str | None]:
    """The cell without a trailing footnote marker (its closing punctuation kept), and that
    footnote; markers without a footnote are left alone (more likely part of the value)."""
    match = _CELL_MARKER.search(cell)
    if not match:
        return cell, None
    marker = _marker(match)
    if marker not in notes:
        return cell, None
    return cell[: match.start()].rstrip() + match.group("tail"), notes[marker]


def _with_notes(value: str, notes: list[str]) -> str:
    if not value:
        return value
    return value + "".join(f" (Note: {note})" for note in dict.fromkeys(notes))
