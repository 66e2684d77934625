"""The map of a specification: a TOC tree and a cross-reference map, both from the IR.

The TOC tree comes from the document's own table of contents when it has one (the
`toc_pages`, or elements the adapter marked as a TOC), else from its headings. Printed
page numbers are kept as printed; `page` is where the heading really is in the file,
found by matching the entry's title to a heading.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Literal

from pydantic import BaseModel, Field

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.templates.base import HEADING_TYPES, SKIPPED_TYPES, heading_level, heading_title
from rag_assets.templates.spec_parts.figures import find_figure
from rag_assets.templates.spec_parts.labels import plain, table_caption
from rag_assets.templates.spec_parts.parts import Placed, place, section_number
from rag_assets.text.markdown import DASHED_LINE

# "2.1 Host Control Register ..... 12", "Preface . . . xi", "Scope 3" (a TOC as a table
# arrives with its cells joined by spaces).
_TOC_LINE = re.compile(
    r"^(?P<title>.*?[^\W\d_].*?)\s*(?:(?:\.\s?){2,}|…+|\s)\s*(?P<page>\d{1,4}|[ivxlcdm]{1,7})$"
)
_LINE_MARKER = re.compile(r"^\s*(?:#{1,6}|[-*+•])?\s*")


class TocNode(BaseModel):
    level: int
    title: str
    page: int | None = None  # where the heading is in the file; None when no heading matched
    printed_page: str | None = None  # the number a printed TOC gives, e.g. "12" or "xi"
    children: list[TocNode] = Field(default_factory=list)


TargetKind = Literal["table", "figure", "section"]


class CrossRef(BaseModel):
    kind: TargetKind
    title: str  # the caption, or the section heading's title
    page: int | None  # None for formats without pages
    section: str | None  # the heading the target sits under (a section's own heading)
    element_index: int


class SpecStructure(BaseModel):
    toc: list[TocNode]
    toc_source: Literal["toc", "headings"]
    xrefs: dict[str, CrossRef]  # "Table 3", "Figure 7-1", "Section 2.1.1", in reading order

    def section_labels(self) -> set[str]:
        return {label for label, ref in self.xrefs.items() if ref.kind == "section"}


def build_structure(
    doc: StandardizedDocument, toc_pages: Collection[int] | None = None
) -> SpecStructure:
    placed = place(doc, toc_pages)
    headings = [p for p in placed if p.element.type in HEADING_TYPES and heading_title(p.element)]
    printed = _printed_toc(doc, toc_pages, headings)
    entries = printed or [
        TocNode(level=heading_level(p.element), title=heading_title(p.element), page=_page(doc, p))
        for p in headings
    ]
    return SpecStructure(
        toc=_tree(entries), toc_source="toc" if printed else "headings", xrefs=_xrefs(doc, placed)
    )


def _page(doc: StandardizedDocument, placed: Placed) -> int | None:
    return placed.element.page_start if doc.page_count is not None else None


def _printed_toc(
    doc: StandardizedDocument, toc_pages: Collection[int] | None, headings: list[Placed]
) -> list[TocNode]:
    """Entries of the document's own TOC: lines ending in a page number."""
    by_title: dict[str, Placed] = {}
    for p in headings:
        by_title.setdefault(_key(heading_title(p.element)), p)
    entries = []
    for element in doc.elements:
        on_toc_page = bool(toc_pages) and element.page_start in toc_pages
        if element.type in SKIPPED_TYPES or not (on_toc_page or element.type == "toc"):
            continue
        for line in _toc_lines(element):
            match = _TOC_LINE.match(line)
            if not match:
                continue
            title = match.group("title")
            heading = by_title.get(_key(title))
            entries.append(
                TocNode(
                    level=_toc_level(title),
                    title=title,
                    page=_page(doc, heading) if heading else None,
                    printed_page=match.group("page"),
                )
            )
    return entries


def _toc_level(title: str) -> int:
    """The depth of the entry's section number (`2.1` is 2); unnumbered entries are level 1.

    Only the TOC's own numbering is used: levels borrowed from matched headings would mix
    two sources in one tree.
    """
    number = section_number(title)
    return number.count(".") + 1 if number else 1


def _toc_lines(element: DocumentElement) -> list[str]:
    lines = []
    for line in element.text.split("\n"):
        if DASHED_LINE.match(line):
            continue
        if "|" in line:
            line = " ".join(cell.strip() for cell in line.split("|") if cell.strip())
        lines.append(plain(_LINE_MARKER.sub("", line, count=1)))
    return [line for line in lines if line]


def _key(title: str) -> str:
    return " ".join(title.casefold().split()).rstrip(".:")


def _tree(entries: list[TocNode]) -> list[TocNode]:
    """Nest a flat list by level: an entry closes every open one at its level or deeper."""
    roots: list[TocNode] = []
    stack: list[TocNode] = []
    for node in entries:
        while stack and stack[-1].level >= node.level:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _xrefs(doc: StandardizedDocument, placed: list[Placed]) -> dict[str, CrossRef]:
    """Numbered sections, captioned tables and figures; the first of a label wins."""
    xrefs: dict[str, CrossRef] = {}
    for p in placed:
        target = _target(doc, p)
        if target and target[1] not in xrefs:
            kind, label, title = target
            xrefs[label] = CrossRef(
                kind=kind,
                title=title,
                page=_page(doc, p),
                section=p.headings[-1] if p.stack else None,
                element_index=p.index,
            )
    return xrefs


def _target(doc: StandardizedDocument, p: Placed) -> tuple[TargetKind, str, str] | None:
    """Kind, label and title of what an element defines, if anything."""
    if p.element.type in HEADING_TYPES and p.stack and p.stack[-1] is p.element:
        number = section_number(p.headings[-1])
        return ("section", f"Section {number}", p.headings[-1]) if number else None
    if p.element.type == "table":
        caption, _ = table_caption(doc, p.index)
        return ("table", caption.label, caption.text) if caption and caption.label else None
    if p.element.type == "figure":
        figure = find_figure(doc, p.index)
        return ("figure", figure.label, figure.caption.text) if figure else None
    return None
