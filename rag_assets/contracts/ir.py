"""Layer 2 output: one standardized document, whatever parser saw it.

Adapters build it, repairs fix it, templates read it. Templates never look at
`parser`; it is recorded for provenance only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

ElementType = Literal[
    "title",
    "heading",
    "paragraph",
    "list",
    "table",
    "code",
    "figure",
    "caption",
    "footnote",
    "formula",
    "page_header",
    "page_footer",
    "toc",
]
# Running page headers and footers: kept in the IR, skipped by every template and check.
FURNITURE_TYPES: frozenset[str] = frozenset({"page_header", "page_footer"})

BBox = tuple[float, float, float, float]


class TableCell(BaseModel):
    row: int
    col: int
    text: str
    row_span: int = 1
    col_span: int = 1
    is_header: bool = False


class TableData(BaseModel):
    """A table's structure as the parser saw it; markdown is derived from it."""

    num_rows: int
    num_cols: int
    cells: list[TableCell]
    header_rows: int = 0
    caption: str | None = None
    footnotes: list[str] = Field(default_factory=list)

    def grid(self) -> list[list[str]]:
        """Rows x cols of cell text, spanning cells repeated in every slot they cover."""
        grid = [["" for _ in range(self.num_cols)] for _ in range(self.num_rows)]
        for cell in self.cells:
            for r in range(cell.row, min(cell.row + cell.row_span, self.num_rows)):
                for c in range(cell.col, min(cell.col + cell.col_span, self.num_cols)):
                    grid[r][c] = cell.text
        return grid


class DocumentElement(BaseModel):
    """One semantic unit in reading order."""

    type: ElementType
    text: str  # markdown for this element: a list keeps its items, a table is a markdown table
    level: int | None = None  # headings: 1..6
    page_start: int = 1  # 1-based
    page_end: int = 1
    bbox: BBox | None = None  # on page_start, in PDF points, top-left origin
    table: TableData | None = None
    # Free-form, by adapter and repair. `line_pages`: for an element that runs over pages (a
    # table merged across a page break, a list continued on the next page), [[line, page], ...]:
    # from that 0-based line of `text` on, the element is on that page.
    metadata: dict = Field(default_factory=dict)
    # Offsets of this element's text inside StandardizedDocument.markdown.
    start_char: int = 0
    end_char: int = 0

    def pages_of(self, start: int, end: int) -> tuple[int, int]:
        """The pages that the text's [start, end) lies on: by `line_pages` when the element has
        them, else the element's own."""
        breaks = self.metadata.get("line_pages")
        if not breaks:
            return self.page_start, self.page_end
        first = self.text.count("\n", 0, start)
        last = self.text.count("\n", 0, max(start, end - 1))

        def page_at(line: int) -> int:
            return next((page for at, page in reversed(breaks) if at <= line), self.page_start)

        return page_at(first), page_at(last)

    @model_validator(mode="after")
    def _check(self) -> DocumentElement:
        if self.type == "heading" and not (self.level and 1 <= self.level <= 6):
            raise ValueError(f"heading needs a level 1..6, got {self.level!r}")
        if self.page_start < 1 or self.page_end < self.page_start:
            raise ValueError(f"bad page span {self.page_start}..{self.page_end}")
        return self


class StandardizedDocument(BaseModel):
    doc_id: str
    source_path: str
    source_sha256: str
    parser: str
    parser_version: str
    page_count: int | None = None
    language: str | None = None
    title: str | None = None
    markdown: str = ""  # the whole document as structured markdown
    elements: list[DocumentElement] = Field(default_factory=list)
    metadata: dict = Field(default_factory=dict)  # adapter/repair notes, fallbacks taken

    def headings(self) -> list[DocumentElement]:
        return [e for e in self.elements if e.type in ("title", "heading")]

    def tables(self) -> list[tuple[int, DocumentElement]]:
        return [(i, e) for i, e in enumerate(self.elements) if e.type == "table"]
