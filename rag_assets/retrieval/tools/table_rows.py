"""`table_rows`: rows of table and table_row chunks as key/value cells, with the table's name,
caption, footnotes and page."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, Field

from rag_assets.index.rows import SearchHit
from rag_assets.retrieval.inputs import Keywords, Term, TopK, tool_arguments
from rag_assets.retrieval.search import SearchFilters
from rag_assets.retrieval.tools.tool import Found, Tool
from rag_assets.retrieval.tools.toolbox import Source, Toolbox, fold

_ROW_PREFIX = re.compile(r"^\[(?P<name>[^\]]*)\]\s*")
_NOTE = re.compile(r"\(Note: ([^)]*)\)")  # how the spec template attaches a footnote to a cell
_MARKS = re.compile(r"<sup>[^<]*</sup>|\s*\(Note: [^)]*\)|[*†‡§¶]+$")


class TableRowsArgs(BaseModel):
    keywords: Keywords = Field(description="names of the register, field, table or row")
    attribute: Term | None = Field(None, description="a column the rows must have, e.g. Offset")


class TableRow(BaseModel):
    table: str  # the table's name ("Table 3: Host Control Register (Offset 0x04)")
    caption: str | None
    footnotes: list[str]
    page: int | None
    cells: dict[str, str]  # column -> value, as the document writes them
    score: float
    source: Source


@tool_arguments
def table_rows(
    box: Toolbox, keywords: Keywords, attribute: Term | None = None, top_k: TopK = 8
) -> list[TableRow]:
    """Rows of the best-matching table and table_row chunks (a row chunk over the same row of
    its whole-table chunk, as it carries the footnotes); with `attribute`, only rows that
    have that column (case- and width-insensitive). Rows sharing more keywords with their
    table's name and values come first ("bits 15:8" picks the 15:8 row over its neighbours,
    which the analyzer may not tell apart), search order breaking ties."""
    query = " ".join(keywords)
    filters = SearchFilters(chunk_types=["table", "table_row"])
    rows: list[TableRow] = []
    seen: set[tuple[str, str]] = set()
    for hit in box.hits(query, top_k, filters):
        for cells in _hit_rows(hit, keywords):
            if attribute and fold(attribute) not in {fold(k) for k in cells}:
                continue
            key = (hit.doc_id, json.dumps(cells, sort_keys=True))
            if key in seen:
                continue
            seen.add(key)
            rows.append(_row(hit, cells))
    # A table's row chunks carry its footnotes and cleaned cells: the whole-table chunk's copy
    # of the same row ("20 us<sup>1</sup>", no notes) is dropped.
    split = {_row_key(r) for r in rows if r.source.chunk_type == "table_row"}
    rows = [r for r in rows if r.source.chunk_type == "table_row" or _row_key(r) not in split]
    words = {w for k in keywords for w in fold(k).split()}
    rows.sort(
        key=lambda r: -len(words & set(fold(f"{r.table} {' '.join(r.cells.values())}").split()))
    )
    return rows[:top_k]


def _row_key(row: TableRow) -> tuple[str, str, str, str]:
    """A row by its table and first cell, footnote marks and notes removed."""
    column, value = next(iter(row.cells.items()), ("", ""))
    return (row.source.doc_id, row.table, column, fold(_MARKS.sub("", value)))


def _row(hit: SearchHit, cells: dict[str, str]) -> TableRow:
    metadata = hit.metadata
    name = metadata.get("table_name") or (
        _ROW_PREFIX.match(hit.text).group("name") if _ROW_PREFIX.match(hit.text) else ""
    )
    return TableRow(
        table=name or hit.header_path,
        caption=metadata.get("table_caption"),
        footnotes=sorted({n for value in cells.values() for n in _NOTE.findall(value)}),
        page=hit.page_start,
        cells=cells,
        score=hit.score,
        source=Source.from_hit(hit),
    )


def _hit_rows(hit: SearchHit, keywords: list[str]) -> list[dict[str, str]]:
    """A table_row chunk is one row (`[Name] Key: value | Key: value`); a whole table gives
    the rows that share a word with the keywords, or every row when none does."""
    if hit.chunk_type == "table_row":
        cells = parse_row_text(hit.text)
        return [cells] if cells else []
    rows = parse_markdown_rows(hit.text)
    words = {w for k in keywords for w in fold(k).split()}
    matching = [r for r in rows if words & set(fold(" ".join(r.values())).split())]
    return matching or rows


def parse_row_text(text: str) -> dict[str, str]:
    """`[Table 3: X] Bits: 15:8 | Field: Timeout` -> {"Bits": "15:8", "Field": "Timeout"}."""
    body = _ROW_PREFIX.sub("", text.strip(), count=1)
    cells = {}
    for part in body.split(" | "):
        key, sep, value = part.partition(": ")
        if sep and key.strip():
            cells[key.strip()] = value.strip()
    return cells


def parse_markdown_rows(text: str) -> list[dict[str, str]]:
    """Body rows of the first markdown table in `text`, keyed by its header row."""
    lines = [line.strip() for line in text.split("\n")]
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and re.fullmatch(r"\|[\s:|-]*-[\s:|-]*", lines[i + 1]):
            header = _cells(line)
            rows = []
            for body in lines[i + 2 :]:
                if not body.startswith("|"):
                    break
                values = _cells(body)
                rows.append(dict(zip(header, values, strict=False)))
            return rows
    return []


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _show(row: TableRow) -> str:
    cells = "\n".join(f"    {k}: {v}" for k, v in row.cells.items())
    notes = "".join(f"\n    note: {n}" for n in row.footnotes)
    return f"{row.table} ({row.source.citation})\n{cells}{notes}"


def _found(row: TableRow) -> list[Found]:
    cells = " | ".join(f"{k}: {v}" for k, v in row.cells.items())
    return [Found(text=f"[{row.table}] {cells}", kind="table row", source=row.source)]


TOOL = Tool(
    name="table_rows",
    description="Find table rows (registers, fields, values) as key/value cells.",
    summary="table rows matching the keywords, as key/value cells",
    arguments=TableRowsArgs,
    function=table_rows,
    show=_show,
    found=_found,
)
