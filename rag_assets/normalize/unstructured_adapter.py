"""Layer 2: Unstructured elements (Layer 1 native output) -> StandardizedDocument.

Heading levels: Unstructured's `category_depth` is 0-based, so level = depth + 1 (<h1> / `#` is
level 1, as in the Docling adapter). DOCX differs: Unstructured gives Word's "Title" and
"Heading 1" both depth 0, so there the "Title" paragraph (named by the parser) is the level-1
document title and "Heading N" is level N + 1, as Docling has it. PDF `fast` and text files give
no depth: every Title is level 1. Levels from markup (HTML, Markdown, DOCX and RTF styles) are the
source's own (`LEVEL_STATED`): the numbering repair leaves them alone.

Pages come from `page_number` (an element without one inherits the page before it); boxes from
`coordinates`, scaled to the PDF page size in points with a top-left origin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lxml import html as lxml_html

from rag_assets.contracts.ir import (
    BBox,
    DocumentElement,
    ElementType,
    StandardizedDocument,
    TableCell,
    TableData,
)
from rag_assets.normalize.document import adapted_document
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.parsers.base import ParsedDocument

_TEXT_TYPES: dict[str, ElementType] = {
    "FigureCaption": "caption",
    "Header": "page_header",
    "Footer": "page_footer",
    "PageNumber": "page_footer",
}
_FIGURE_TYPES = frozenset({"Image", "Figure", "Picture"})
_TABLE_TYPES = frozenset({"Table", "TableChunk"})
_DROPPED_TYPES = frozenset({"PageBreak"})
# Coordinate systems whose y axis points up (Unstructured's CARTESIAN orientation).
_Y_UP_SYSTEMS = frozenset({"PointSpace", "RelativeCoordinateSystem"})
_IMAGE_PLACEHOLDER = "<!-- image -->"
_LIST_INDENT = "    "
_NUMBERED_ITEM = re.compile(r"(\d+)[.)]\s+(.*)", re.DOTALL)
# RTF reaches Unstructured as pandoc's HTML, whose <h1>-<h6> come from the RTF heading styles.
_STATED_FORMATS = frozenset({"md", "html", "docx", "rtf"})


def unstructured_to_ir(
    parsed: ParsedDocument, *, doc_id: str, source_sha256: str
) -> StandardizedDocument:
    walker = _Walker(parsed)
    elements = walker.walk()
    page_count = None
    if parsed.file_format == "pdf":
        page_count = parsed.page_count or max((e.page_end for e in elements), default=1)
    return adapted_document(
        parsed,
        elements,
        doc_id=doc_id,
        source_sha256=source_sha256,
        page_count=page_count,
        title=walker.title,
        metadata={
            "file_format": parsed.file_format,
            "parser_notes": parsed.notes,
            **({"pdf_strategy": parsed.native["strategy"]} if "strategy" in parsed.native else {}),
        },
    )


@dataclass
class _Walker:
    """Walks the elements in order, grouping consecutive list items into one list."""

    parsed: ParsedDocument
    elements: list[DocumentElement] = field(default_factory=list)
    page: int = 1  # the page of the last element that had one
    has_title: bool = False  # a DOCX "Title" paragraph was seen
    title: str | None = None  # the first level-1 heading

    def walk(self) -> list[DocumentElement]:
        items: list[dict] = []
        for element in self.parsed.native.get("elements", []):
            if element["type"] == "ListItem":
                items.append(element)
                continue
            if items:
                self._list(items)
                items = []
            self._visit(element)
        if items:
            self._list(items)
        return self.elements

    def _visit(self, element: dict) -> None:
        kind = element["type"]
        text = element.get("text", "").strip()
        if kind in _DROPPED_TYPES:
            return
        if kind == "Title":
            self._heading(element, text)
        elif kind in _TABLE_TYPES:
            self._table(element, text)
        elif kind in _FIGURE_TYPES:
            self._add("figure", text or _IMAGE_PLACEHOLDER, [element])
        elif kind == "CodeSnippet":
            self._add("code", _fence(element.get("text", "")) if text else "", [element])
        elif kind == "Formula":
            self._add("formula", f"$${text}$$" if text else "", [element])
        else:
            self._add(_TEXT_TYPES.get(kind, "paragraph"), text, [element])

    def _heading(self, element: dict, text: str) -> None:
        text = " ".join(text.split())
        if not text:
            return
        depth = element["metadata"].get("category_depth") or 0
        kind: ElementType = "heading"
        if self.parsed.file_format != "docx":
            level = depth + 1
        elif text in self.parsed.native.get("title_style_texts", []):
            level = 1
            kind = "heading" if self.has_title else "title"
            self.has_title = True
        else:
            level = depth + 2
        level = min(level, 6)
        if level == 1 and self.title is None:
            self.title = text
        # Markup states its levels; PDF and text levels are the parser's guess.
        stated = {LEVEL_STATED: True} if self.parsed.file_format in _STATED_FORMATS else {}
        self._add(kind, f"{'#' * level} {text}", [element], level=level, **stated)

    def _table(self, element: dict, text: str) -> None:
        html = element["metadata"].get("text_as_html")
        data = _table_from_html(html) if html else None
        if data is None or not data.cells:
            # No cell structure (PDF hi_res without a table model): keep the text and its box.
            self._add("table", text, [element], structure=False)
            return
        self._add("table", table_to_markdown(data), [element], table=data)

    def _list(self, items: list[dict]) -> None:
        depths = [item["metadata"].get("category_depth") or 0 for item in items]
        lines = [
            _item_line(item.get("text", ""), depth - min(depths))
            for item, depth in zip(items, depths, strict=True)
        ]
        self._add("list", "\n".join(line for line in lines if line), items)

    def _add(
        self,
        kind: ElementType,
        text: str,
        sources: list[dict],
        *,
        level: int | None = None,
        table: TableData | None = None,
        **metadata: Any,
    ) -> None:
        if not text:
            return
        page_start, page_end, bbox = self._provenance(sources)
        ids = [source.get("element_id") for source in sources]
        self.elements.append(
            DocumentElement(
                type=kind,
                text=text,
                level=level,
                page_start=page_start,
                page_end=page_end,
                bbox=bbox,
                table=table,
                metadata={
                    "category": sources[0]["type"],
                    **({"element_ids": ids} if len(ids) > 1 else {"element_id": ids[0]}),
                    **metadata,
                },
            )
        )

    def _provenance(self, sources: list[dict]) -> tuple[int, int, BBox | None]:
        """Page span over the sources; the box around their boxes on the first page."""
        pages = []
        for source in sources:
            self.page = source["metadata"].get("page_number") or self.page
            pages.append(self.page)
        boxes = [
            box
            for source, page in zip(sources, pages, strict=True)
            if page == pages[0] and (box := self._bbox(source, page)) is not None
        ]
        if not boxes:
            return pages[0], max(pages), None
        bbox = (
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        )
        return pages[0], max(pages), bbox

    def _bbox(self, source: dict, page: int) -> BBox | None:
        """The element's box in PDF points, top-left origin.

        PDF `fast` reports pdfminer's boxes in points under the name PixelSpace, and hi_res real
        pixels of the rendered page: scaling the layout to the page's size in points fits both.
        """
        coordinates = source["metadata"].get("coordinates") or {}
        points = coordinates.get("points")
        width, height = coordinates.get("layout_width"), coordinates.get("layout_height")
        if not points or not width or not height:
            return None
        page_sizes = self.parsed.native.get("page_sizes") or []
        page_width, page_height = (
            page_sizes[page - 1] if page <= len(page_sizes) else (width, height)
        )
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        top, bottom = min(ys), max(ys)
        if coordinates.get("system") in _Y_UP_SYSTEMS:
            top, bottom = height - bottom, height - top
        sx, sy = page_width / width, page_height / height
        return (
            round(min(xs) * sx, 2),
            round(top * sy, 2),
            round(max(xs) * sx, 2),
            round(bottom * sy, 2),
        )


def _item_line(text: str, depth: int) -> str:
    """One markdown list line; a leading "3." or "3)" stays the item's own number."""
    text = " ".join(text.split())  # one line, or the list would break
    if not text:
        return ""
    numbered = _NUMBERED_ITEM.fullmatch(text)
    marker, body = (f"{numbered[1]}.", numbered[2]) if numbered else ("-", text)
    return f"{_LIST_INDENT * depth}{marker} {body}"


def _fence(code: str) -> str:
    """A fenced block; the fence outgrows any backtick run inside, so `#` lines stay code."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code.strip(chr(10))}\n{fence}"


def _table_from_html(html: str) -> TableData:
    """Cells, spans and header rows of the first <table> in Unstructured's `text_as_html`."""
    root = lxml_html.fragment_fromstring(html, create_parent="div")
    tables = root.xpath(".//table")
    if not tables:
        return TableData(num_rows=0, num_cols=0, cells=[])
    rows = tables[0].xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
    cells: list[TableCell] = []
    taken: set[tuple[int, int]] = set()
    header_rows = 0
    for r, row in enumerate(rows):
        row_cells = row.xpath("./td | ./th")
        in_head = row.getparent().tag == "thead"
        if header_rows == r and row_cells and (in_head or all(c.tag == "th" for c in row_cells)):
            header_rows += 1
        col = 0
        for cell in row_cells:
            while (r, col) in taken:
                col += 1
            row_span = min(_span(cell, "rowspan"), len(rows) - r)
            col_span = _span(cell, "colspan")
            taken.update(
                (rr, cc) for rr in range(r, r + row_span) for cc in range(col, col + col_span)
            )
            cells.append(
                TableCell(
                    row=r,
                    col=col,
                    text=" ".join(cell.text_content().split()),
                    row_span=row_span,
                    col_span=col_span,
                    is_header=in_head or cell.tag == "th",
                )
            )
            col += col_span
    return TableData(
        num_rows=len(rows),
        num_cols=max((c for _, c in taken), default=-1) + 1,
        cells=cells,
        header_rows=header_rows,
    )


def _span(cell: Any, attribute: str) -> int:
    value = cell.get(attribute, "1").strip()
    return int(value) if value.isdigit() and int(value) > 0 else 1
