"""Tables that continue on the next page, merged into one table element spanning both pages.

Parsers see a page at a time, so a long table comes back as one table per page; the later parts
often lose their header row (or repeat it), and a parser that guesses headers takes the first
data row of a part for one. Two parts merge when nothing but page furniture and captions lies
between them, the second starts on the page after the first ends, the columns agree, and the
second part's first row is either the first part's header again or a row like its data.
"""

from __future__ import annotations

import re

from rag_assets.contracts.ir import FURNITURE_TYPES, DocumentElement, TableCell, TableData
from rag_assets.normalize.table_markdown import table_to_markdown

# What may sit between two parts of one table: running headers/footers and a repeated caption.
_BETWEEN_TYPES = FURNITURE_TYPES | {"caption"}
_TABLE_NUMBER = re.compile(r"^(?:Table|TABLE|表)\s*([A-Z]?[\d.\-]+)")
# A cell that reads as a value (number, date, amount) rather than a column label.
_VALUE = re.compile(r"^[\s\d.,:;/%()+\-$€£¥]*\d[\s\d.,:;/%()+\-$€£¥]*$")
# Parts laid out side by side are not a continuation: their columns must overlap this much.
_MIN_HORIZONTAL_OVERLAP = 0.5


def merge_continued_tables(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """Merge continued tables; returns the elements and how many parts were appended."""
    out: list[DocumentElement] = []
    grown: dict[int, TableData] = {}  # tables (by index in `out`) that took a continuation
    merged = 0
    last_table: int | None = None  # index in `out` of the table a continuation would extend
    for element in elements:
        if element.type == "table" and element.table is not None and last_table is not None:
            between = out[last_table + 1 :]
            joined = _merge(out[last_table], between, element)
            if joined is not None and joined.table is not None:
                out[last_table] = joined
                grown[last_table] = joined.table
                merged += 1
                continue
        if element.type == "table" and element.table is not None:
            last_table = len(out)
        elif element.type not in _BETWEEN_TYPES:
            last_table = None
        out.append(element)
    for i, table in grown.items():  # rendered once, after all of a table's parts are in
        metadata = dict(out[i].metadata)
        metadata["line_pages"] = _line_pages(metadata.pop("row_pages"), table)
        out[i] = out[i].model_copy(update={"text": table_to_markdown(table), "metadata": metadata})
    return out, merged


def _line_pages(row_pages: list[list[int]], table: TableData) -> list[list[int]]:
    """Where each part's rows start, as lines of the table's markdown (`table_to_markdown`:
    one header line and the rule, then a line per body row)."""
    header = max(table.header_rows, 1)
    return [[0 if row < header else 2 + row - header, page] for row, page in row_pages]


def _merge(
    first: DocumentElement, between: list[DocumentElement], second: DocumentElement
) -> DocumentElement | None:
    """`first` with `second` appended, or None when `second` is not its continuation."""
    head, tail = first.table, second.table
    if head is None or tail is None:
        return None
    if second.page_start != first.page_end + 1 or head.num_cols != tail.num_cols:
        return None
    if not _same_column_band(first, second):
        return None
    # A caption left on the first page is the first part's own; one on the next page is the
    # second part's, and must not name another table.
    own = [e.text for e in between if e.type == "caption" and e.page_start == first.page_end]
    later = [e.text for e in between if e.type == "caption" and e.page_start == second.page_start]
    reference = head.caption or next(iter(own), None)
    if not _captions_agree(reference, [*later, *filter(None, [tail.caption])]):
        return None
    skip = _repeated_header_rows(head, tail)
    if skip == 0 and tail.header_rows and not _reads_as_data(head, tail):
        return None  # the second part has a header of its own: another table
    table = _append(head, tail, skip)
    # The grid row each part starts at, and its page: chunks of the rows cite their own page.
    row_pages = first.metadata.get("row_pages", [[0, first.page_start]])
    return first.model_copy(
        update={
            "table": table,
            "page_end": second.page_end,
            "metadata": {
                **first.metadata,
                "row_pages": [*row_pages, [head.num_rows, second.page_start]],
                "continued_on_pages": [
                    *first.metadata.get("continued_on_pages", []),
                    *range(second.page_start, second.page_end + 1),
                ],
            },
        }
    )


def _same_column_band(first: DocumentElement, second: DocumentElement) -> bool:
    if first.bbox is None or second.bbox is None:
        return True
    left, right = max(first.bbox[0], second.bbox[0]), min(first.bbox[2], second.bbox[2])
    narrower = min(first.bbox[2] - first.bbox[0], second.bbox[2] - second.bbox[0])
    return narrower <= 0 or (right - left) >= _MIN_HORIZONTAL_OVERLAP * narrower


def _captions_agree(caption: str | None, later: list[str]) -> bool:
    """A caption naming another table number starts another table; "(continued)" does not."""
    number = _table_number(caption)
    for text in later:
        other = _table_number(text)
        if other is not None and other != number:
            return False
    return True


def _table_number(caption: str | None) -> str | None:
    match = _TABLE_NUMBER.match(caption.strip()) if caption else None
    return match[1].rstrip(".") if match else None


def _row(table: TableData, index: int) -> list[str]:
    """One row of the grid (spanning cells repeated), without building the whole grid."""
    row = [""] * table.num_cols
    for cell in table.cells:
        if cell.row <= index < cell.row + cell.row_span:
            for col in range(cell.col, min(cell.col + cell.col_span, table.num_cols)):
                row[col] = cell.text
    return row


def _norm_row(row: list[str]) -> list[str]:
    return [" ".join(cell.split()).casefold() for cell in row]


def _repeated_header_rows(head: TableData, tail: TableData) -> int:
    """How many leading rows of `tail` repeat `head`'s header rows (0 or head.header_rows)."""
    count = head.header_rows
    if count == 0 or tail.num_rows < count:
        return 0
    same = all(_norm_row(_row(head, r)) == _norm_row(_row(tail, r)) for r in range(count))
    return count if same else 0


def _reads_as_data(head: TableData, tail: TableData) -> bool:
    """`tail`'s first row holds values where `head`'s last row does: a data row, not a header.

    Columns empty on either side say nothing; at least one value must line up with a value.
    """
    first, last = _row(tail, 0), _row(head, head.num_rows - 1)
    kinds = [(_kind(a), _kind(b)) for a, b in zip(first, last, strict=True)]
    filled = [(a, b) for a, b in kinds if a != "empty" and b != "empty"]
    return ("value", "value") in filled and all(a == b for a, b in filled)


def _kind(cell: str) -> str:
    if not cell.strip():
        return "empty"
    return "value" if _VALUE.match(cell) else "text"


def _append(head: TableData, tail: TableData, skip: int) -> TableData:
    """`tail`'s rows after its first `skip` under `head`'s; only `head`'s header rows are headers."""
    offset = head.num_rows - skip
    cells = [
        *head.cells,
        *(
            TableCell(
                row=cell.row + offset,
                col=cell.col,
                text=cell.text,
                row_span=cell.row_span,
                col_span=cell.col_span,
                is_header=False,
            )
            for cell in tail.cells
            if cell.row >= skip
        ),
    ]
    return TableData(
        num_rows=head.num_rows + tail.num_rows - skip,
        num_cols=head.num_cols,
        cells=cells,
        header_rows=head.header_rows,
        caption=head.caption or tail.caption,
        footnotes=[*head.footnotes, *tail.footnotes],
    )
