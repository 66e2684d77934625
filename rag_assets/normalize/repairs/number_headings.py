"""A chapter number set apart from its title: the two headings become one.

Chapter openings print the number large on a line of its own (`1`, `CHAPTER 3`, `Part II`,
`第三章`) and the title under it, and parsers read them as two headings: `# 1`, then
`## Securing and protecting IBM DB2 data`. Every section of the chapter would then sit under a
bare `1`, and the title would open a section of its own holding only the chapter's first
paragraphs. A heading that is only a number, followed (page furniture aside) by a heading
without one, takes that title: `# 1 Securing and protecting IBM DB2 data`, at the number's level.
A label between them that only restates the number (`**Chapter 1.**`) goes into the heading's
metadata (`number_labels`).

Headings whose level the source states (Markdown `#`, DOCX styles, HTML `h1`-`h6`) are the
author's structure: `# Appendix A` over `## Table 4 Notes` stays two headings.
"""

from __future__ import annotations

import re

from rag_assets.contracts.ir import DocumentElement
from rag_assets.normalize.repairs.furniture import FURNITURE_TYPES
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED
from rag_assets.templates.base import (
    HEADING_TYPES,
    decimal_number,
    heading_level,
    heading_title,
)

_NUMBER_ONLY = re.compile(
    r"^(?:(?i:chapter|part|section|appendix|annex)\s+)?"
    r"(?:\d{1,3}(?:\.\d{1,3})*|[IVXLC]{1,7}|[A-Z])\.?$"
    r"|^第\s*[\d〇零一二三四五六七八九十百两]+\s*(?:编|部分|章|节)$"
)


def join_number_headings(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    out: list[DocumentElement] = []
    joined = 0
    pending: int | None = None  # index in `out` of a number-only heading awaiting its title
    labels: list[DocumentElement] = []  # `Chapter 1.` printed beside the number, held back
    for element in elements:
        if element.type in FURNITURE_TYPES:
            out.append(element)
            continue
        guessed = element.type in HEADING_TYPES and not element.metadata.get(LEVEL_STATED)
        title = heading_title(element) if guessed else ""
        if pending is not None and title and is_words_title(title):
            out[pending] = _joined(out[pending], element, title, labels)
            joined += 1
            pending, labels = None, []
            continue
        if pending is not None and element.type == "paragraph" and _is_label(element.text):
            labels.append(element)
            continue
        out.extend(labels)
        labels = []
        pending = len(out) if title and is_number_only(title) else None
        out.append(element)
    out.extend(labels)
    return out, joined


def is_number_only(title: str) -> bool:
    return bool(_NUMBER_ONLY.match(title.strip()))


def is_words_title(title: str) -> bool:
    """A heading of words: neither a number of its own nor a numbered heading."""
    return not is_number_only(title) and decimal_number(title) is None


def _is_label(text: str) -> bool:
    return is_number_only(" ".join(text.replace("*", "").replace("_", " ").split()))


def _joined(
    number: DocumentElement, title: DocumentElement, words: str, labels: list[DocumentElement]
) -> DocumentElement:
    metadata = {**title.metadata, **number.metadata}
    if labels:
        metadata["number_labels"] = [label.text for label in labels]
    return number.model_copy(
        update={
            "text": f"{'#' * heading_level(number)} {heading_title(number)} {words}",
            "page_end": max(number.page_end, title.page_end),
            "metadata": metadata,
        }
    )
