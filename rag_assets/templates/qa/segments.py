"""The document as slices of its IR elements: lines to read markers from, blocks to render.

A segment is always an exact slice of one element's text, so a chunk's markdown offsets
stay exact; page furniture and dropped internal notes are left out by cutting around them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.templates.base import HEADING_TYPES, body_elements, has_words
from rag_assets.templates.qa.markers import (
    BRACKET_OPEN,
    BRACKETS,
    INTERNAL_NOTE,
    is_furniture,
)

# Elements read line by line; any other (tables, code, figures) is one segment.
_LINE_TYPES = frozenset({"paragraph", "list", "caption", "footnote"})


@dataclass(frozen=True, eq=False)  # identity: two equal slices are still two places
class Segment:
    """The part [start, end) of one element's text: a line, or a whole table or code block."""

    index: int  # the element's position among the body elements
    element: DocumentElement
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.element.text[self.start : self.end]

    @property
    def is_heading(self) -> bool:
        return self.element.type in HEADING_TYPES

    def cut(self, start: int, end: int) -> Segment | None:
        """The part [start, end) of this segment's text, trimmed; None when blank."""
        piece = self.text[start:end]
        if not piece.strip():
            return None
        lead = len(piece) - len(piece.lstrip())
        at = self.start + start
        return Segment(self.index, self.element, at + lead, at + len(piece.rstrip()))


def document_segments(doc: StandardizedDocument) -> list[Segment]:
    """Body elements in reading order, text elements as lines, furniture lines left out."""
    segments: list[Segment] = []
    for index, element in enumerate(body_elements(doc)):
        if element.type in _LINE_TYPES:
            segments.extend(_lines(index, element))
        elif has_words(element.text):  # an empty table's grid is nothing to find
            segments.append(Segment(index, element, 0, len(element.text)))
    return segments


def _lines(index: int, element: DocumentElement) -> Iterator[Segment]:
    start = 0
    for line in element.text.split("\n"):
        # A line keeps its indentation: it tells a nested bullet from its parent.
        if line.strip() and not is_furniture(line):
            yield Segment(index, element, start, start + len(line.rstrip()))
        start += len(line) + 1


def blocks(segments: Sequence[Segment]) -> list[DocumentElement]:
    """Segments as elements of their own, neighbours with only whitespace between merged."""
    runs: list[list[Segment]] = []
    for segment in segments:
        previous = runs[-1][-1] if runs else None
        if (
            previous is not None
            and previous.index == segment.index
            and not segment.element.text[previous.end : segment.start].strip()
        ):
            runs[-1].append(segment)
        else:
            runs.append([segment])
    return [_slice(run[0].element, run[0].start, run[-1].end) for run in runs]


def _slice(element: DocumentElement, start: int, end: int) -> DocumentElement:
    if (start, end) == (0, len(element.text)):
        return element
    return element.model_copy(
        update={
            "text": element.text[start:end],
            "start_char": element.start_char + start,
            "end_char": element.start_char + end,
        }
    )


def drop_internal_notes(segments: Sequence[Segment]) -> list[Segment]:
    """The segments without bracketed internal notes ([內部參考…], [內部補充資料…]).

    A note may span lines and paragraphs and hold brackets of its own; it ends at its
    matching closing bracket, or, left unclosed, at the end of the segments given.
    """
    kept: list[Segment] = []
    depth = 0  # brackets open inside the current note; 0 outside any note
    for segment in segments:
        text = segment.text
        cursor: int | None = 0 if depth == 0 else None  # start of the text being kept
        for match in BRACKETS.finditer(text):
            opening = match.group() in BRACKET_OPEN
            if depth == 0:
                if opening and INTERNAL_NOTE.match(text, match.start()):
                    kept.extend(_cut(segment, cursor, match.start()))
                    cursor, depth = None, 1
            else:
                depth += 1 if opening else -1
                if depth == 0:
                    cursor = match.end()
        kept.extend(_cut(segment, cursor, len(text)))
    return kept


def _cut(segment: Segment, start: int | None, end: int) -> list[Segment]:
    if start is None:
        return []
    if (start, end) == (0, len(segment.text)):
        return [segment]  # untouched: keeps a nested bullet's indentation
    piece = segment.cut(start, end)
    return [piece] if piece else []


def has_internal_note(text: str) -> bool:
    return bool(INTERNAL_NOTE.search(text))
