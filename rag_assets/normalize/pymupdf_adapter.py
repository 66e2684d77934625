"""Layer 2: pymupdf4llm layout output -> StandardizedDocument.

Works from ``ParsedDocument.native`` alone (see parsers/pymupdf.py for its shape).
What it fixes on the way:
- heading levels: pymupdf4llm ranks header font sizes over the whole document, so one
  big cover font pushes every real section to level 6; levels come from the section
  number (``1.3.1`` is 3) and unnumbered headings are placed by font size relative to
  the numbered ones;
- table/figure captions the layout model calls section headers become captions;
- list items (one layout box each) become one list element per list, also across a
  page break;
- tables get their cells from the layout's table grid; a table or paragraph made of
  dot-leader lines ("Preface . . . . xi") is a table of contents, any other leader table
  ("Stair lift ........ Up to $9,900") is split back into one row per leader line
  (normalize/leaders.py); a grid row holding several rows line under line is split into
  them (normalize/stacked_rows.py); leaders never stay in a cell, and the pieces of a value
  cut at a column boundary go back together (normalize.cut_values.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rag_assets.contracts.ir import (
    BBox,
    DocumentElement,
    ElementType,
    StandardizedDocument,
    TableCell,
    TableData,
)
from rag_assets.normalize.cut_values import values_rejoined
from rag_assets.normalize.document import adapted_document
from rag_assets.normalize.leaders import (
    has_leader,
    is_leader_table,
    leader_lines_as_rows,
    split_leader_rows,
    without_leaders,
)
from rag_assets.normalize.stacked_rows import split_stacked_rows
from rag_assets.normalize.table_headers import (
    header_row_count,
    spread_spanning_labels,
    with_cut_heads,
)
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.normalize.wrapped_labels import join_wrapped_labels
from rag_assets.parsers.base import ParsedDocument
from rag_assets.text.numbering import SECTION_NUMBER_END, section_number_pattern

_TYPES: dict[str, ElementType] = {
    "text": "paragraph",
    "title": "heading",
    "section-header": "heading",
    "list-item": "list",
    "table": "table",
    "picture": "figure",
    "caption": "caption",
    "footnote": "footnote",
    "formula": "formula",
    "page-header": "page_header",
    "page-footer": "page_footer",
}
_FURNITURE = ("page-header", "page-footer")
_HEADING_CLASSES = ("title", "section-header")
# "1", "1.2.", "4.10.3", "A.1": a section number followed by the heading's words; its depth is
# the heading's level, so it is bounded (no level for `2024 Report`) and appendices count.
_SECTION_NUMBER = re.compile(rf"^({section_number_pattern(appendix=True)}){SECTION_NUMBER_END}")
# A label then a number: "Table 2-1", "Figure 3-5", "表 7.5". Case kept on purpose so
# that a heading such as "Table of contents" is not taken for a caption.
_CAPTION = re.compile(r"^(?:Table|TABLE|Figure|FIGURE|Fig\.|表|图|圖)\s*(?:\d|[A-Z][-.\d])")
_TABLE_CAPTION = re.compile(r"^(?:Table|TABLE|表)\s*(?:\d|[A-Z][-.\d])")
# "Security fundamentals . . . . . . 2", "Preface ..... xi"
_TOC_ENTRY = re.compile(r"(?:\.\s?){4,}\s*(?:\d+|[ivxlcdm]+)$", re.IGNORECASE)
_TOC_LEADER = re.compile(r"\s*(?:\.\s?){4,}\s*")
_FIGURE_PLACEHOLDER = "<!-- image -->"
_FORMULA_PLACEHOLDER = "<!-- formula -->"


@dataclass
class _Box:
    """One layout box joined with its slice of pymupdf4llm's page markdown."""

    page: int
    cls: str
    bbox: BBox
    markdown: str  # unstripped: a nested list item's indentation is at its start
    lines: list[str]
    plain: str
    font_size: int
    ocr: bool
    table: dict | None


def pymupdf_to_ir(
    parsed: ParsedDocument, *, doc_id: str, source_sha256: str
) -> StandardizedDocument:
    native = parsed.native
    boxes = _boxes(native)
    for box in boxes:
        if box.cls in _HEADING_CLASSES and _CAPTION.match(box.plain):
            box.cls = "caption"
    title = _title_index(boxes)
    elements = _elements(boxes, _heading_levels(boxes), title)
    return adapted_document(
        parsed,
        elements,
        doc_id=doc_id,
        source_sha256=source_sha256,
        page_count=parsed.page_count,
        title=_document_title(boxes[title] if title is not None else None, native, elements),
        metadata=_document_metadata(native),
    )


def _boxes(native: dict) -> list[_Box]:
    ocr_font = native.get("ocr_font")
    boxes = []
    for layout_page, md_page in zip(native["layout"]["pages"], native["pages"], strict=True):
        page_text = md_page["text"]
        for box, md_box in zip(layout_page["boxes"], md_page["page_boxes"], strict=True):
            start, stop = md_box["pos"]
            textlines = box.get("textlines") or []
            lines = [_collapse(" ".join(s["text"] for s in line["spans"])) for line in textlines]
            spans = [span for line in textlines for span in line["spans"]]
            boxes.append(
                _Box(
                    page=layout_page["page_number"],
                    cls=box["boxclass"],
                    bbox=(box["x0"], box["y0"], box["x1"], box["y1"]),
                    markdown=page_text[start:stop],
                    lines=[line for line in lines if line],
                    plain=_collapse(" ".join(lines)),
                    font_size=box.get("max_fontsize") or 0,
                    ocr=bool(ocr_font) and any(span["font"] == ocr_font for span in spans),
                    table=box.get("table"),
                )
            )
    return boxes


def _collapse(text: str) -> str:
    return " ".join(text.split())


# --- headings --------------------------------------------------------------------------


def _section_depth(text: str) -> int | None:
    match = _SECTION_NUMBER.match(text)
    return match.group(1).count(".") + 1 if match else None


def _heading_levels(boxes: list[_Box]) -> dict[int, int]:
    """Level of every heading box by index: numbered ones first, then the rest by font size."""
    headings = {i: box for i, box in enumerate(boxes) if box.cls in _HEADING_CLASSES}
    levels: dict[int, int] = {}
    by_size: dict[int, int] = {}  # font size -> shallowest numbered level at that size
    for i, box in headings.items():
        depth = _section_depth(box.plain)
        if depth is not None:
            levels[i] = min(depth, 6)
            by_size[box.font_size] = min(by_size.get(box.font_size, 6), levels[i])
    unnumbered = {i: box for i, box in headings.items() if i not in levels}
    ranks = sorted({box.font_size for box in unnumbered.values()}, reverse=True)
    for i, box in unnumbered.items():
        if by_size:
            levels[i] = _level_by_size(box.font_size, by_size)
        else:
            levels[i] = min(ranks.index(box.font_size) + 1, 6)
    return levels


def _level_by_size(size: int, by_size: dict[int, int]) -> int:
    """Same size as a numbered heading: its level; smaller: one below the next larger one."""
    if size in by_size:
        return by_size[size]
    larger = [s for s in by_size if s > size]
    if not larger:
        return 1
    return min(by_size[min(larger)] + 1, 6)


def _title_index(boxes: list[_Box]) -> int | None:
    """The document title: the layout's title, else the first page's dominant unnumbered heading.

    On page 1 the largest unnumbered heading is the title only when it is set larger than
    every section-numbered heading and every other heading on that page.
    """
    headings = [(i, box) for i, box in enumerate(boxes) if box.cls in _HEADING_CLASSES]
    for i, box in headings:
        if box.cls == "title" and _section_depth(box.plain) is None:
            return i
    first_page = [(i, box) for i, box in headings if box.page == 1]
    candidates = [(i, box) for i, box in first_page if _section_depth(box.plain) is None]
    if not candidates:
        return None
    best, best_box = max(candidates, key=lambda item: item[1].font_size)
    numbered = [box.font_size for _, box in headings if _section_depth(box.plain) is not None]
    others = [box.font_size for i, box in first_page if i != best]
    if all(best_box.font_size > size for size in numbered + others):
        return best
    return None


def _document_title(
    title_box: _Box | None, native: dict, elements: list[DocumentElement]
) -> str | None:
    if title_box is not None:
        return title_box.plain
    pdf_title = (native["layout"].get("metadata") or {}).get("title", "").strip()
    if pdf_title:
        return pdf_title
    for element in elements:
        if element.type == "heading" and element.level == 1:
            return element.text.lstrip("#").strip()
    return None


# --- elements --------------------------------------------------------------------------


def _elements(
    boxes: list[_Box], levels: dict[int, int], title: int | None
) -> list[DocumentElement]:
    """Boxes in reading order; list items gathered into lists, page furniture kept."""
    elements: list[DocumentElement] = []
    items: list[_Box] = []
    held: list[DocumentElement] = []  # furniture met inside an open list (a page break)
    for index, box in enumerate(boxes):
        if box.cls == "list-item":
            items.append(box)
            continue
        if items and box.cls in _FURNITURE:
            held.extend(_element(boxes, index, levels, title))
            continue
        if items:
            elements.append(_list_element(items))
            elements.extend(held)
            items, held = [], []
        elements.extend(_element(boxes, index, levels, title))
    if items:
        elements.append(_list_element(items))
        elements.extend(held)
    return elements


def _element(
    boxes: list[_Box], index: int, levels: dict[int, int], title: int | None
) -> list[DocumentElement]:
    """The element for one non-list box; none when the box carries no text."""
    box = boxes[index]
    kind, text, table = _content(boxes, index, title)
    if not text.strip():
        return []
    metadata: dict[str, Any] = {"layout_class": box.cls}
    if kind == "figure" and box.plain:
        metadata["text_in_picture"] = box.plain
    if box.ocr:
        metadata["ocr"] = True
    level = levels[index] if kind == "heading" else None
    if level:
        text = f"{'#' * level} {text}"
    element = DocumentElement(
        type=kind,
        text=text,
        level=level,
        page_start=box.page,
        page_end=box.page,
        bbox=box.bbox,
        table=table,
        metadata=metadata,
    )
    return [element]


def _content(
    boxes: list[_Box], index: int, title: int | None
) -> tuple[ElementType, str, TableData | None]:
    """Element type, text (a heading's without its #s) and table structure of one box."""
    box = boxes[index]
    kind = _TYPES.get(box.cls, "paragraph")
    if index == title:
        return "title", f"# {box.plain}" if box.plain else "", None
    if kind in ("heading", "caption", "page_header", "page_footer"):
        return kind, box.plain, None  # plain: styling markup only gets in the way here
    if kind == "table":
        return _table_content(boxes, index)
    if kind == "figure":
        return kind, _FIGURE_PLACEHOLDER, None
    if kind == "formula":
        return kind, box.plain or _FORMULA_PLACEHOLDER, None
    if kind == "footnote":
        # pymupdf4llm renders footnotes as "> " quotes; a footnote is not a quotation.
        blocks = _blocks(box.markdown)
        return kind, "\n".join(block.removeprefix("> ").strip() for block in blocks), None
    if _is_toc(box.lines):
        return "toc", _toc_text(box.lines), None
    if kind == "paragraph" and (rows := leader_lines_as_rows(box.lines)):
        # Leader lines the layout model took for a paragraph: key-value rows, no header.
        table = _table_data([["", ""], *rows], None)
        return "table", table_to_markdown(table), table
    text = box.markdown.strip()
    return ("code" if text.startswith("```") else kind), text, None


def _table_content(boxes: list[_Box], index: int) -> tuple[ElementType, str, TableData | None]:
    native = boxes[index].table or {}
    grid = [[text or "" for text in row] for row in native.get("extract") or []]
    if not grid:
        return "table", "", None  # a table box without a grid: pymupdf4llm emits nothing either
    rows = [_collapse(" ".join(row)) for row in grid]
    if _is_toc(rows):
        return "toc", _toc_text(rows), None
    # A first row set with a leader is data: the table gets an empty header above it.
    headed = not has_leader(grid[0])
    if headed:
        grid = with_cut_heads(grid, native.get("spans") or [])
    header_rows = header_row_count(grid) if headed else 0
    grid = split_stacked_rows(grid, header_rows)
    if is_leader_table(grid):
        grid = split_leader_rows(grid)
    grid = join_wrapped_labels(grid, header_rows)
    if not headed:
        grid, header_rows = [[""] * len(grid[0]), *grid], 1
    # Leaders are layout: none stays in a cell, whatever the table.
    grid = values_rejoined([[without_leaders(cell) for cell in row] for row in grid])
    # The finder's cell boxes line up with the grid's rows unless an empty head was added.
    cells = (native.get("cells") or []) if headed else []
    grid = spread_spanning_labels(grid, header_rows, cells, native.get("rules") or [])
    table = _table_data(grid, _table_caption(boxes, index), header_rows)
    return "table", table_to_markdown(table), table


def _is_toc(lines: list[str]) -> bool:
    """Mostly "entry . . . . page" lines (at least three)."""
    entries = sum(1 for line in lines if _TOC_ENTRY.search(line.strip()))
    return entries >= 3 and entries >= 0.6 * len(lines)


def _toc_text(lines: list[str]) -> str:
    return "\n".join(_TOC_LEADER.sub(" ... ", line.strip()) for line in lines if line.strip())


def _blocks(markdown: str) -> list[str]:
    """pymupdf4llm separates items inside one box with blank lines."""
    return [block.rstrip() for block in markdown.split("\n\n") if block.strip()]


def _list_element(items: list[_Box]) -> DocumentElement:
    # pymupdf4llm already wrote "- item" / "1. item" lines, indented 3 spaces per level.
    lines: list[str] = []
    line_pages: list[list[int]] = []  # where the list goes on to the next page
    for item in items:
        if not line_pages or item.page != line_pages[-1][1]:
            line_pages.append([len(lines), item.page])
        lines.extend(_blocks(item.markdown))
    first_page = [item.bbox for item in items if item.page == items[0].page]
    metadata: dict[str, Any] = {"layout_class": "list-item", "items": len(lines)}
    if len(line_pages) > 1:
        metadata["line_pages"] = line_pages
    if any(item.ocr for item in items):
        metadata["ocr"] = True
    return DocumentElement(
        type="list",
        text="\n".join(lines),
        page_start=items[0].page,
        page_end=items[-1].page,
        bbox=(
            min(b[0] for b in first_page),
            min(b[1] for b in first_page),
            max(b[2] for b in first_page),
            max(b[3] for b in first_page),
        ),
        metadata=metadata,
    )


# --- tables ----------------------------------------------------------------------------


def _table_caption(boxes: list[_Box], index: int) -> str | None:
    """A "Table N" caption right before or after the table on the same page."""
    for neighbour in (index - 1, index + 1):
        if 0 <= neighbour < len(boxes):
            box = boxes[neighbour]
            same_page = box.page == boxes[index].page
            if same_page and box.cls == "caption" and _TABLE_CAPTION.match(box.plain):
                return box.plain
    return None


def _table_data(rows: list[list[str]], caption: str | None, header_rows: int = 1) -> TableData:
    """Cells from the layout's table grid (``extract``: rows of cell text); the grid carries
    no header flag, so `header_rows` is read from its rows (table_headers.py)."""
    header_rows = min(header_rows, len(rows) - 1) if len(rows) > 1 else 0
    cells = [
        TableCell(row=r, col=c, text=_collapse(text), is_header=r < header_rows)
        for r, row in enumerate(rows)
        for c, text in enumerate(row)
    ]
    return TableData(
        num_rows=len(rows),
        num_cols=max(len(row) for row in rows),
        cells=cells,
        header_rows=header_rows,
        caption=caption,
    )


def _document_metadata(native: dict) -> dict:
    metadata: dict[str, Any] = {}
    if native.get("ocr_pages"):
        metadata["ocr_pages"] = native["ocr_pages"]
    outline = native["layout"].get("toc")
    if outline:
        metadata["pdf_outline"] = outline  # [level, title, page] rows from the PDF bookmarks
    return metadata
