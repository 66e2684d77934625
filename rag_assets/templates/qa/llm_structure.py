"""A briefing paper's or FAQ's structure read by an LLM, where the markers of structure.py fail.

The model sees the document's body (page furniture left out) with `[page N]` markers, cut
to a character budget, and lists its sections as JSON. None of its words reach a chunk:
each section is found in the IR's text by the words it quotes (whitespace, markdown
emphasis, letter case and full-width forms ignored) and becomes the unit
`structure.read_units` would give, cut from the IR's own segments, so pages and offsets
stay exact. A question that is not in the text (invented, paraphrased, out of order) is
dropped and counted.

A section runs from the line its quote starts on to the next section's line. Heading lines
(the model's `headings` found in the text, and the IR's headings) are never content: they
become the units' `headings`, and a narrative section starting on or right after one is
rendered beneath it, as the regex path does. Text before the first section, and after the
budget cut, becomes narrative under the IR's headings.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.llm import LLMClient
from rag_assets.templates.base import body_elements, heading_title
from rag_assets.templates.qa.markers import clean, narrative_label
from rag_assets.templates.qa.segments import Segment, document_segments
from rag_assets.templates.qa.structure import (
    DEFAULT_ID_PREFIX,
    Bullet,
    Heading,
    Narrative,
    Pair,
    Unit,
)

# Bump with any change to the prompt or the answer's schema: the template's version says it.
PROMPT_VERSION = "1"
DEFAULT_MAX_CHARS = 24_000
# Only the start of a long quote is compared: models drift from the text late in a quote.
ANCHOR_CHARS = 40
TRUNCATED_NOTE = "[… the rest of the document is not shown]"
# Markdown a model may add or leave out when it quotes a line.
_IGNORED = frozenset("*_`#>")

PROMPT = """\
Below is a document (a briefing paper, an FAQ or similar) as markdown; a line [page N] \
marks where page N begins. List its sections in reading order:
- "qa": one question and its answer. "question": the question's words exactly as written, \
without a marker such as 問 A1：, Q1 or Question:. "question_id": the id written with the \
question (A1, Q3), else null. "answer": the answer's first sentence exactly as written, \
with its marker (答 A1：, Reply:) if it has one.
- "speaking_notes": one top-level bullet of speaking notes (發言要點), with its sub-bullets.
- "narrative": prose that is neither a question nor a speaking note.
- "table": a table standing on its own, not part of an answer.
- "toc": a table of contents.
For a section that is not "qa", "start": its first line exactly as written.
For every section, "headings": the heading lines it sits under, outermost first, exactly \
as written (a narrative section's own heading last); "pages": the pages it is on.
Copy text character for character: never translate, correct or invent it, and do not \
copy whole answers.

Document:
"""

SectionType = Literal["qa", "narrative", "speaking_notes", "table", "toc"]


class LLMSection(BaseModel):
    model_config = ConfigDict(coerce_numbers_to_str=True)  # a question_id of 3 is "3"

    type: SectionType
    headings: list[str] = Field(
        default_factory=list, description="heading lines above the section, outermost first"
    )
    question_id: str | None = Field(default=None, description="qa: the id written, e.g. A1")
    question: str | None = Field(default=None, description="qa: the question, verbatim")
    answer: str | None = Field(default=None, description="qa: the answer's first sentence")
    start: str | None = Field(default=None, description="other types: the first line, verbatim")
    pages: list[int] = Field(default_factory=list)

    @model_validator(mode="after")
    def _quoted(self) -> LLMSection:
        if not self.quote.strip():
            field = "question" if self.type == "qa" else "start"
            raise ValueError(f"a {self.type} section needs its {field}")
        return self

    @property
    def quote(self) -> str:
        """The words that locate the section in the text."""
        return (self.question if self.type == "qa" else self.start) or ""


class LLMStructure(BaseModel):
    sections: list[LLMSection]


@dataclass(frozen=True)
class LLMUnits:
    units: list[Unit]
    dropped_questions: int  # questions the model gave that are not in the text
    truncated: bool  # the model saw only the first `max_chars` of the document


def llm_units(
    doc: StandardizedDocument, client: LLMClient, max_chars: int = DEFAULT_MAX_CHARS
) -> LLMUnits:
    """The document's units as the model reads them; raises LLMError when the call fails."""
    shown = prompt_document(doc, max_chars)
    messages = [{"role": "user", "content": PROMPT + shown.text}]
    answer = client.chat_json(messages, LLMStructure)
    text = _Text(document_segments(doc))
    # Sections are looked for only in what the model saw; the rest becomes narrative.
    end = next((n for n, s in enumerate(text.segments) if s.index >= shown.elements), text.size)
    located, dropped = _locate(answer.sections, text, end)
    return LLMUnits(_units(located, text, end), dropped, shown.truncated)


class Shown(NamedTuple):
    text: str
    elements: int  # body elements shown, the last one possibly cut
    truncated: bool


def prompt_document(doc: StandardizedDocument, max_chars: int) -> Shown:
    """The body as the model sees it: `[page N]` before each page's first element."""
    elements = body_elements(doc)
    paged = doc.page_count is not None
    parts: list[str] = []
    size, page = 0, None
    for number, element in enumerate(elements):
        marker = f"[page {element.page_start}]\n" if paged and element.page_start != page else ""
        page = element.page_start
        part = f"{marker}{element.text}\n\n"
        if size + len(part) > max_chars:
            parts.append(part[: max_chars - size])
            return Shown("".join(parts) + "\n" + TRUNCATED_NOTE, number + 1, True)
        parts.append(part)
        size += len(part)
    return Shown("".join(parts), len(elements), False)


# --- the text, normalized for finding quotes ------------------------------------------------

Point = tuple[int, int]  # (segment number, offset in the segment's text)


def _normalized(text: str) -> Iterator[tuple[int, str]]:
    """(offset, char) of the text as quotes are compared: NFKC, casefolded, no spaces or markup."""
    for offset, char in enumerate(text):
        for folded in unicodedata.normalize("NFKC", char).casefold():
            if not folded.isspace() and folded not in _IGNORED:
                yield offset, folded


def _key(text: str) -> str:
    return "".join(char for _, char in _normalized(text))


def _line_title(segment: Segment) -> str:
    return heading_title(segment.element) if segment.is_heading else clean(segment.text)


class _Text:
    """The segments' normalized text in one string, each character mapped back to its place."""

    def __init__(self, segments: list[Segment]) -> None:
        self.segments = segments
        self.size = len(segments)
        chars: list[str] = []
        self.owner: list[int] = []  # per character: its segment's number
        self.offset: list[int] = []  # per character: its offset in the segment's text
        self.starts: list[int] = []  # per segment, and one past the last: first character
        self._lines: dict[str, list[int]] = {}  # a whole line's key -> its segment numbers
        for number, segment in enumerate(segments):
            self.starts.append(len(chars))
            for offset, char in _normalized(segment.text):
                chars.append(char)
                self.owner.append(number)
                self.offset.append(offset)
            self._lines.setdefault(_key(_line_title(segment)), []).append(number)
        self.starts.append(len(chars))
        self.flat = "".join(chars)

    def find(self, quote: str, start: int, stop: int, pages: list[int]) -> int | None:
        """Where the quote first occurs in [start, stop), on one of `pages` if it occurs there."""
        first = None
        at = self.flat.find(quote, start, stop)
        while at >= 0:
            element = self.segments[self.owner[at]].element
            if not pages or any(element.page_start <= p <= element.page_end for p in pages):
                return at
            first = at if first is None else first
            at = self.flat.find(quote, at + 1, stop)
        return first

    def headings(self, titles: list[str], last: int) -> list[tuple[int, str]]:
        """(segment number, title as written) of the heading lines found at or before
        segment `last`, innermost nearest, in document order."""
        found: list[tuple[int, str]] = []
        for title in reversed(titles):
            key = _key(title)
            numbers = self._lines.get(key, []) if key else []
            at = bisect_right(numbers, last)
            if at:
                last = numbers[at - 1]
                found.append((last, _line_title(self.segments[last])))
                last -= 1
        return found[::-1]

    def between(
        self, start: Point, end: Point, skip: frozenset[int] = frozenset()
    ) -> list[Segment]:
        """The text from `start` up to `end`, as segments; whole lines keep their identity."""
        pieces: list[Segment] = []
        for number in range(start[0], min(end[0] + 1, self.size)):
            if number in skip:
                continue
            segment = self.segments[number]
            begin = start[1] if number == start[0] else 0
            stop = end[1] if number == end[0] else len(segment.text)
            if (begin, stop) == (0, len(segment.text)):
                pieces.append(segment)  # untouched: keeps a nested bullet's indentation
            elif piece := segment.cut(begin, stop):
                pieces.append(piece)
        return pieces

    def after(self, char: int) -> Point:
        """The point just past the character at `char`."""
        return self.owner[char], self.offset[char] + 1


# --- sections to units ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Located:
    section: LLMSection
    first: int  # the segment the section starts on
    quote: tuple[int, int]  # where its quote is in the normalized text, [start, end)
    headings: list[tuple[int, str]]  # (segment number, title) of its headings found


def _locate(sections: list[LLMSection], text: _Text, end: int) -> tuple[list[_Located], int]:
    """The sections found in the text in order, and how many questions were not found."""
    located: list[_Located] = []
    dropped, cursor = 0, 0
    for section in sections:
        quote = _key(section.quote)
        if section.type != "qa":
            quote = quote[:ANCHOR_CHARS]  # a question is matched whole: it is the question text
        at = text.find(quote, cursor, text.starts[end], section.pages) if quote else None
        if at is None:
            if section.type == "qa":
                dropped += 1
            continue
        first, last = text.owner[at], text.owner[at + len(quote) - 1]
        headings = text.headings(section.headings, first)
        located.append(_Located(section, first, (at, at + len(quote)), headings))
        cursor = text.starts[last + 1]  # the next section starts on a later line
    return located, dropped


def _units(located: list[_Located], text: _Text, end: int) -> list[Unit]:
    named = frozenset(number for item in located for number, _ in item.headings)
    # A section's content holds no heading line: its headings say where it sits.
    skip = named | {number for number, segment in enumerate(text.segments) if segment.is_heading}
    starts = [item.first for item in located]
    units = _narratives(text.between((0, 0), (starts[0] if starts else end, 0), named))
    questions = 0
    for item, stop in zip(located, [*starts, end][1:], strict=True):
        if item.section.type == "qa":
            units.append(_pair(item, stop, text, skip, questions))
            questions += 1
        elif unit := _section_unit(item, stop, text, skip):
            units.append(unit)
    return units + _narratives(text.between((end, 0), (text.size, 0), named))


def _narratives(segments: list[Segment]) -> list[Unit]:
    """Text no section covers: a narrative under each of the IR's headings in it."""
    groups: list[tuple[Heading | None, list[Segment]]] = [(None, [])]
    for segment in segments:
        if segment.is_heading:
            groups.append((Heading(_line_title(segment), segment), []))
        else:
            groups[-1][1].append(segment)
    return [
        Narrative(heading, content, [heading.title] if heading else [])
        for heading, content in groups
        if content
    ]


def _pair(item: _Located, stop: int, text: _Text, skip: frozenset[int], index: int) -> Pair:
    start, end = item.quote
    split = _answer_start(item, stop, text)
    question = text.between((item.first, 0), split)  # with its marker, as the line shows it
    answer = text.between(split, (stop, 0), skip)
    words = text.between((text.owner[start], text.offset[start]), text.after(end - 1))
    question_text = clean(" ".join(segment.text for segment in words))
    headings = [title for _, title in item.headings]
    question_id = _question_id(item.section.question_id, question[0], index)
    return Pair(index, question_id, question_text, question, answer, headings)


def _question_id(written: str | None, line: Segment, index: int) -> str:
    """The model's id where the question's line shows it; otherwise one by position."""
    key = _key(written or "")
    if written and key and key in _key(line.text):
        return written.strip()
    return f"{DEFAULT_ID_PREFIX}{index + 1}"


def _answer_start(item: _Located, stop: int, text: _Text) -> Point:
    """Where the answer begins: at the line the model's quote of it is on, when that is a
    later line than the question's end; else right after the question's words."""
    end = item.quote[1]
    quote = _key(item.section.answer or "")[:ANCHOR_CHARS]
    at = text.find(quote, end, text.starts[stop], []) if quote else None
    if at is not None and text.owner[at] != text.owner[end - 1]:
        return text.owner[at], 0
    return text.after(end - 1)


def _section_unit(item: _Located, stop: int, text: _Text, skip: frozenset[int]) -> Unit | None:
    """A bullet or a narrative section, beneath its own heading line when it has one."""
    headings = [title for _, title in item.headings]
    own = _own_heading(item, text, skip)
    heading = None
    if own is not None:
        title = _line_title(text.segments[own])
        heading = Heading(title, text.segments[own], narrative_label(title))
        if headings[-1:] != [title]:
            headings.append(title)
    # Heading lines are in `skip`: the section's own is rendered as its heading, not content.
    content = text.between((item.first, 0), (stop, 0), skip)
    if not content:
        return None
    if item.section.type == "speaking_notes" and headings:
        return Bullet(content, headings)  # rendered beneath its topic, headings[-1]
    return Narrative(heading, content, headings)


def _own_heading(item: _Located, text: _Text, skip: frozenset[int]) -> int | None:
    """The section's heading line: its first line when that is a heading, else a heading
    line right before it (none between, so no earlier section has taken it)."""
    innermost = item.headings[-1][0] if item.headings else None
    if text.segments[item.first].is_heading or innermost == item.first:
        return item.first
    return item.first - 1 if item.first - 1 in skip else None
