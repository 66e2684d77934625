"""Which rule reads each element: its page's role from the page ranges, and its section.

Page roles, first match wins: `toc` pages feed the TOC tree and give no chunks, `glossary`
pages go to the glossary rule, pages outside `body_pages` (when given) are skipped, the
rest is body. Headings on glossary pages stay headings, so header paths stay whole.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.templates.base import (
    HEADING_TYPES,
    SKIPPED_TYPES,
    has_words,
    header_path_for,
    heading_level,
    heading_title,
    open_ancestors,
)
from rag_assets.templates.spec_parts.glossary import is_glossary_heading
from rag_assets.text.numbering import SECTION_NUMBER_END, section_number_pattern

PageRole = Literal["toc", "glossary", "body", "skip"]

_RANGE = re.compile(r"^\s*(\d+)\s*(?:[-–]\s*(\d+)\s*)?$")
# "7.4.1 Timing", "A.1 Deep", "3. Scope": the number then a blank or the end of the title.
# Parts of any length: the number labels a placed heading (section ids, cross-reference
# targets, TOC depth), so a year-led title reads as its number (`2024 Report` -> 2024).
_SECTION_NUMBER = re.compile(
    rf"^({section_number_pattern(bounded=False, appendix=True)}){SECTION_NUMBER_END}"
)


@dataclass(frozen=True)
class Placed:
    """A content element with its position in the IR and the headings open above it."""

    index: int  # in doc.elements
    element: DocumentElement
    role: PageRole
    stack: tuple[DocumentElement, ...]  # open heading elements, innermost last

    @property
    def headings(self) -> list[str]:
        return [heading_title(heading) for heading in self.stack]

    @property
    def header_path(self) -> str:
        return header_path_for(self.headings[:-1])

    @property
    def section_number(self) -> str | None:
        return section_number(self.headings[-1]) if self.stack else None

    @property
    def in_glossary_section(self) -> bool:
        # The document title names the whole document, not a glossary section of it.
        return any(
            h.type == "heading" and is_glossary_heading(heading_title(h)) for h in self.stack
        )


# Larger than any document's page count; a range past it is a typo, not a page list to expand.
MAX_PAGE_NUMBER = 100_000


def parse_pages(value: object) -> tuple[int, ...] | None:
    """`"1-3,7"`, `5` or `[1, 2, 3]` as sorted page numbers (1-based); None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        parts: Sequence[object] = [part for part in value.split(",") if part.strip()]
    elif isinstance(value, Sequence):
        parts = value
    else:
        parts = [value]
    pages = {page for part in parts for page in _page_span(part)}
    if not pages or min(pages) < 1:
        raise ValueError(f"page range {value!r} must hold pages numbered from 1")
    return tuple(sorted(pages))


def _page_span(part: object) -> range:
    if isinstance(part, int) and not isinstance(part, bool):
        if part > MAX_PAGE_NUMBER:
            raise ValueError(f"page {part} is past page {MAX_PAGE_NUMBER:,}")
        return range(part, part + 1)
    match = _RANGE.match(part) if isinstance(part, str) else None
    if not match:
        raise ValueError(f"not a page or page range: {part!r}")
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if last < first:
        raise ValueError(f"page range {part!r} runs backwards")
    if last > MAX_PAGE_NUMBER:  # a range is expanded page by page
        raise ValueError(f"page range {part!r} goes past page {MAX_PAGE_NUMBER:,}")
    return range(first, last + 1)


def page_role(
    page: int,
    toc_pages: Collection[int] | None,
    glossary_pages: Collection[int] | None,
    body_pages: Collection[int] | None,
) -> PageRole:
    if toc_pages and page in toc_pages:
        return "toc"
    if glossary_pages and page in glossary_pages:
        return "glossary"
    if body_pages is not None and page not in body_pages:
        return "skip"
    return "body"


def place(
    doc: StandardizedDocument,
    toc_pages: Collection[int] | None = None,
    glossary_pages: Collection[int] | None = None,
    body_pages: Collection[int] | None = None,
) -> list[Placed]:
    """Body and glossary elements in reading order with their open headings.

    Page furniture, TOC pages and skipped pages are left out, their headings included, so
    every rule sees the same heading tree as the body text.
    """
    placed: list[Placed] = []
    stack: list[DocumentElement] = []
    for index, element in enumerate(doc.elements):
        # A figure is kept without words of its own: its caption makes its placeholder chunk.
        if element.type in SKIPPED_TYPES or not (
            element.type in HEADING_TYPES or element.type == "figure" or has_words(element.text)
        ):
            continue
        role = page_role(element.page_start, toc_pages, glossary_pages, body_pages)
        if role in ("toc", "skip"):
            continue
        if element.type in HEADING_TYPES and heading_title(element):
            # Same rules as HeadingStack: a heading closes every open one at its level or
            # deeper, and numbered ones its number does not extend.
            level = heading_level(element)
            while stack and heading_level(stack[-1]) >= level:
                stack.pop()
            del stack[open_ancestors([heading_title(h) for h in stack], heading_title(element)) :]
            stack.append(element)
        placed.append(Placed(index, element, role, tuple(stack)))
    return placed


def section_number(title: str) -> str | None:
    match = _SECTION_NUMBER.match(title)
    return match.group(1) if match else None
