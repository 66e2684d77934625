"""Running page headers and footers the parser left as body text, retyped so templates skip them.

A line is furniture when it sits at the very top or bottom of its page (no body element of the
page entirely above it, or none entirely below) and either repeats at the same height on many
pages or, inside the page margin, is a page label (`E-2`, `- 3 -`, `Page 3 of 10`, `3`) or a
date line right under (or above) other furniture, and other body text is left on its page.
Elements are retyped, never deleted: their text stays in the IR.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from rag_assets.contracts.ir import FURNITURE_TYPES, BBox, DocumentElement, ElementType

# Untyped furniture comes back as text, or as a heading when the layout model is fooled.
_CANDIDATE_TYPES = frozenset({"paragraph", "heading"})
_MAX_LINE_CHARS = 120
# Share of pages a line must repeat on (at the same height) to be running furniture.
_REPEAT_SHARE = 0.4
_SAME_HEIGHT_PT = 8.0
_EDGE_TOLERANCE_PT = 1.0
# A date line belongs to the label or header it sits right under (or above, in a footer).
_NEXT_LINE_PT = 18.0
# Labels and dates sit in the page margins: the outer tenth of the page, top or bottom (a
# chapter number or a section badge just above the body is not a page number).
_MARGIN = 0.1
_ATX_MARKER = re.compile(r"^\s*#{1,6}\s+")

_PAGE_LABEL = re.compile(
    r"^(?:"
    r"[-\u2013\u2014]\s*\d{1,4}\s*[-\u2013\u2014]"  # - 3 -
    r"|(?i:page|p\.)\s*\d{1,4}(?:\s*(?i:of|/)\s*\d{1,4})?"  # Page 3, Page 3 of 10
    r"|\d{1,4}(?:\s*/\s*\d{1,4})?"  # 3, 3/10
    r"|[A-Z]{1,2}\s?-\s?\d{1,4}"  # E-2 (appendix E, page 2)
    r"|[ivxlc]{1,7}"  # front-matter page numbers: iii, xi
    r"|第\s*\d{1,4}\s*页(?:\s*共\s*\d{1,4}\s*页)?"
    r")$"
)
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_DATE = re.compile(
    r"^(?:"
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"  # 2026-05-15
    r"|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}"  # 15.05.2026, 05/15/2026
    rf"|{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}"  # May 15, 2026
    rf"|\d{{1,2}}\s+{_MONTH}\s+\d{{4}}"  # 15 May 2026
    r"|\d{4}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*日)?"  # 2026年5月15日
    r")$"
)


def restore_lone_furniture(
    elements: list[DocumentElement],
) -> tuple[list[DocumentElement], int]:
    """Parser-typed headers/footers back to paragraphs on pages that hold no other text.

    Layout models type a page's lone line as its header: on a document of one line per page
    (a log, a scanned slip) that would be every word. A bare page label or date stays furniture.
    """
    body_pages = {
        e.page_start for e in elements if e.type not in FURNITURE_TYPES and e.text.strip()
    }
    restored = {
        i
        for i, e in enumerate(elements)
        if e.type in FURNITURE_TYPES
        and e.page_start not in body_pages
        and e.text.strip()
        and not _PAGE_LABEL.match(" ".join(e.text.split()))
        and not _DATE.match(" ".join(e.text.split()))
    }
    out = [
        e.model_copy(update={"type": "paragraph"}) if i in restored else e
        for i, e in enumerate(elements)
    ]
    return out, len(restored)


def retype_furniture(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """Retype untyped running headers/footers; returns the elements and how many were retyped."""
    boxes: dict[int, BBox] = {i: e.bbox for i, e in enumerate(elements) if e.bbox is not None}
    if not boxes:
        return elements, 0  # no layout (Markdown, HTML, DOCX): no pages to repeat on
    pages = max(elements[i].page_start for i in boxes)
    height = max(box[3] for box in boxes.values())  # the lowest box: about the page height
    needed = max(2, math.ceil(_REPEAT_SHARE * pages))
    repeated = {i for i, count in _repeat_pages(elements, boxes).items() if count >= needed}
    kinds: dict[int, ElementType] = {
        i: elements[i].type for i in boxes if elements[i].type in FURNITURE_TYPES
    }
    retyped: dict[int, ElementType] = {}
    # Peel the page edges: once a page label is furniture, the date line under it is the edge.
    while True:
        found: dict[int, ElementType] = {}
        for i in _edge_candidates(elements, boxes, kinds):
            side: ElementType = "page_header" if _centre(boxes[i]) < height / 2 else "page_footer"
            in_margin = boxes[i][3] <= _MARGIN * height or boxes[i][1] >= (1 - _MARGIN) * height
            # Bare numbers and dates repeat by chance (section badges), running words do not.
            runs = i in repeated and (in_margin or _has_words(elements[i].text))
            if runs or (in_margin and _is_label(elements, boxes, i, side, kinds)):
                found[i] = side
        found = _keep_body(elements, found, kinds)
        if not found:
            break
        kinds |= found
        retyped |= found
    out = [
        e.model_copy(update={"type": retyped[i], "level": None, "text": _plain(e.text)})
        if i in retyped
        else e
        for i, e in enumerate(elements)
    ]
    return out, len(retyped)


def _keep_body(
    elements: list[DocumentElement], found: dict[int, ElementType], kinds: dict[int, ElementType]
) -> dict[int, ElementType]:
    """Drop the finds of pages they would leave without body text: a page holding one line
    (or only lines that repeat) is content, not a running header over nothing."""
    emptied = {elements[i].page_start for i in found}
    for i, element in enumerate(elements):
        if i not in found and i not in kinds and element.text.strip():
            emptied.discard(element.page_start)
    return {i: side for i, side in found.items() if elements[i].page_start not in emptied}


def _plain(text: str) -> str:
    """A retyped heading's text without its `#` marks: furniture is not a markdown heading."""
    return _ATX_MARKER.sub("", text, count=1)


def _words(text: str) -> str:
    return " ".join(_plain(text).split()).casefold()


def _shape(text: str) -> str:
    """Text with digits masked and headings' `#` dropped: "Page 3" and "Page 4" repeat."""
    return re.sub(r"\d+", "#", _words(text))


def _has_words(text: str) -> bool:
    return any(ch.isalpha() for ch in _plain(text))


def _centre(box: BBox) -> float:
    return (box[1] + box[3]) / 2


def _repeat_pages(elements: list[DocumentElement], boxes: dict[int, BBox]) -> dict[int, int]:
    """For each short boxed line: on how many pages the same line sits at the same height.

    Digits may differ ("Page 3", "Page 4") except in headings: "Chapter 2" and "Chapter 4"
    opening their pages at the same height are two chapters, not a running header.
    """
    by_shape: dict[str, list[int]] = defaultdict(list)
    for i in boxes:
        if len(elements[i].text) <= _MAX_LINE_CHARS:
            by_shape[_shape(elements[i].text)].append(i)

    def same_line(i: int, j: int) -> bool:
        if abs(_centre(boxes[i]) - _centre(boxes[j])) > _SAME_HEIGHT_PT:
            return False
        return elements[i].type != "heading" or _words(elements[i].text) == _words(elements[j].text)

    return {
        i: len({elements[j].page_start for j in group if same_line(i, j)})
        for group in by_shape.values()
        for i in group
    }


def _edge_candidates(
    elements: list[DocumentElement], boxes: dict[int, BBox], kinds: dict[int, ElementType]
) -> list[int]:
    """Short text lines with no body element of their page entirely above, or entirely below."""
    body: dict[int, list[int]] = defaultdict(list)
    for i in boxes:
        if i not in kinds:
            body[elements[i].page_start].append(i)
    edges = []
    for members in body.values():
        for i in members:
            element = elements[i]
            if element.type not in _CANDIDATE_TYPES or len(element.text) > _MAX_LINE_CHARS:
                continue
            _, top, _, bottom = boxes[i]
            others = [boxes[j] for j in members if j != i]
            above = any(box[3] <= top + _EDGE_TOLERANCE_PT for box in others)
            below = any(box[1] >= bottom - _EDGE_TOLERANCE_PT for box in others)
            if not (above and below):
                edges.append(i)
    return edges


def _is_label(
    elements: list[DocumentElement],
    boxes: dict[int, BBox],
    index: int,
    side: ElementType,
    kinds: dict[int, ElementType],
) -> bool:
    """A page label, or a date line right next to furniture on the same edge of its page."""
    element = elements[index]
    if element.type != "paragraph":
        return False  # a heading that is only a number ("1") is a chapter number, not a label
    text = " ".join(element.text.split())
    if _PAGE_LABEL.match(text):
        return True
    if not _DATE.match(text):
        return False
    _, top, _, bottom = boxes[index]
    return any(
        kind == side
        and j in boxes
        and elements[j].page_start == element.page_start
        and max(boxes[j][1] - bottom, top - boxes[j][3]) <= _NEXT_LINE_PT
        for j, kind in kinds.items()
    )
