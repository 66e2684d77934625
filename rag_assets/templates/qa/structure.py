"""A briefing paper's or FAQ's structure: sections, then Q&A pairs, bullets and narrative.

Sections open at part headings (發言要點, 備用問答, Others, ...), topic headings
("(A) 排水系統") and the IR's own headings. A section is read
- as Q&A when it holds question markers (問 A1：, Q1, ??? question "…"): a 問 question runs
  to its 答, a Q1 or admonition question is its own line, and an answer runs to the next
  question or the section's end;
- as Q&A without markers in a Q&A part (an "Others" part): a line ending in a question mark
  is a question, what follows it until the next one is its answer;
- as speaking-note bullets in a 發言要點 part;
- as narrative otherwise.
A narrative heading such as "(1) 住戶的安置補償" opens a sub-section wherever no question
is open. Inside an answer's brackets ([如被追問：…]) no question starts. Once a question is
asked, every line up to the next question or section belongs to its pair, across pages:
a line the parser set as a heading opens a section only when it reads as one (short, not a
sentence or a bracketed note), since an answer's continuation on the next page is often
taken for a heading.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.templates.base import HeadingStack, heading_level, heading_title
from rag_assets.templates.qa.markers import (
    Part,
    PartKind,
    QuestionStart,
    answer_marker,
    bracket_depth,
    bullet_mark,
    clean,
    heading_like,
    is_bare_question,
    narrative_label,
    part,
    question_start,
    topic_label,
)
from rag_assets.templates.qa.segments import Segment, document_segments

# Ranks in the heading stack; the IR's own headings rank by their level.
PART_RANK = 1
TOPIC_RANK = 2
# The id prefix of questions that carry no id and sit under no lettered topic.
DEFAULT_ID_PREFIX = "Q"


@dataclass(frozen=True)
class Heading:
    title: str  # the line as found in the text, decorations removed
    segment: Segment
    label: str | None = None  # "A" of "(A) 排水系統", "1" of "(1) 住戶的安置補償"


@dataclass(frozen=True)
class Pair:
    index: int  # position among the document's questions, from 0
    question_id: str
    question_text: str
    question: list[Segment]
    answer: list[Segment]
    headings: list[str]


@dataclass(frozen=True)
class Bullet:
    segments: list[Segment]  # the bullet with its continuation lines and nested bullets
    headings: list[str]  # the last one is the bullet's topic


@dataclass(frozen=True)
class Narrative:
    heading: Heading | None
    segments: list[Segment]
    headings: list[str]


Unit = Pair | Bullet | Narrative


@dataclass
class _Section:
    heading: Heading | None
    rank: int  # 0 before the first heading
    headings: list[str]
    kind: PartKind | None  # of the part the section is in
    id_prefix: str  # for questions without ids: the topic's letter, "O" in Others
    segments: list[Segment] = field(default_factory=list)


def read_units(doc: StandardizedDocument) -> list[Unit]:
    ids = _QuestionIds()
    return [
        unit
        for section in _sections(document_segments(doc))
        for unit in _section_units(section, ids)
    ]


# --- sections ----------------------------------------------------------------------------


def _sections(segments: Sequence[Segment]) -> list[_Section]:
    stack = HeadingStack()
    part_kind: PartKind | None = None
    part_prefix = DEFAULT_ID_PREFIX
    sections = [_Section(None, 0, [], None, DEFAULT_ID_PREFIX)]
    asked = False  # a question is open in the current section
    for segment in segments:
        opening = _opening(segment, part_kind, asked)
        if opening is None:
            question = _is_question(segment, part_kind)
            continued = asked and segment.is_heading and not question
            sections[-1].segments.append(_without_marks(segment) if continued else segment)
            asked = asked or question
            continue
        asked = False
        heading, rank, found = opening
        stack.push(rank, heading.title)
        if rank == PART_RANK:
            part_kind = found.kind if found else None
            part_prefix = (found.id_prefix if found else None) or DEFAULT_ID_PREFIX
        topic = heading.label if heading.label and heading.label.isalpha() else None
        sections.append(_Section(heading, rank, stack.titles, part_kind, topic or part_prefix))
    return sections


def _opening(
    segment: Segment, part_kind: PartKind | None, asked: bool
) -> tuple[Heading, int, Part | None] | None:
    """The heading a segment opens a section with, and its rank; None for content."""
    title = heading_title(segment.element) if segment.is_heading else clean(segment.text)
    if not title or _is_question(segment, part_kind):
        return None
    if found := part(title):
        return Heading(title, segment), PART_RANK, found
    if label := topic_label(title):
        return Heading(title, segment, label), TOPIC_RANK, None
    if not segment.is_heading:
        return None  # a narrative heading in the text opens a sub-section, not a section
    if asked and not heading_like(title):
        return None  # an answer going on, set as a heading
    if label := narrative_label(title):
        return Heading(title, segment, label), TOPIC_RANK, None
    return Heading(title, segment), heading_level(segment.element), None


def _without_marks(segment: Segment) -> Segment:
    """A heading read as an answer's text, without its `#` marks."""
    marks = len(segment.text) - len(segment.text.lstrip("#").lstrip())
    return segment.cut(marks, len(segment.text)) or segment


def _is_question(segment: Segment, part_kind: PartKind | None) -> bool:
    """A question, even set as a heading, opens no section."""
    if question_start(segment.text):
        return True
    return part_kind == "qa" and is_bare_question(segment.text)


def _section_units(section: _Section, ids: _QuestionIds) -> list[Unit]:
    segments = section.segments
    first = next((i for i, s in enumerate(segments) if question_start(s.text)), None)
    starts: Callable[[Segment], QuestionStart | None] = _marked_start
    if first is None and section.kind == "qa":
        first = next((i for i, s in enumerate(segments) if is_bare_question(s.text)), None)
        starts = _bare_start
    if first is None:
        return _plain_units(section, segments)
    preamble = _plain_units(section, segments[:first])
    return [*preamble, *_pairs(section, segments[first:], starts, ids)]


# --- narrative and speaking notes --------------------------------------------------------


def _plain_units(section: _Section, segments: Sequence[Segment]) -> list[Unit]:
    units: list[Unit] = []
    for heading, headings, content in _subsections(section, segments):
        if section.kind == "speaking_notes":
            units.extend(_bullets(heading, headings, content))
        elif content:
            units.append(Narrative(heading, content, headings))
    return units


def _subsections(
    section: _Section, segments: Sequence[Segment]
) -> Iterator[tuple[Heading | None, list[str], list[Segment]]]:
    """(heading, headings, content) of each part split off by a narrative heading line."""
    # A narrative heading ranks as a topic: it nests under a part and replaces a topic.
    parents = section.headings if section.rank <= PART_RANK else section.headings[:-1]
    heading, headings, content = section.heading, section.headings, []
    for segment in segments:
        title = clean(segment.text)
        label = narrative_label(title)
        if label is None:
            content.append(segment)
            continue
        yield heading, headings, content
        heading, headings, content = Heading(title, segment, label), [*parents, title], []
    yield heading, headings, content


def _bullets(heading: Heading | None, headings: list[str], content: list[Segment]) -> list[Unit]:
    """One unit per top-level bullet, its nested bullets and continuation lines with it."""
    marks = [bullet_mark(segment.text) for segment in content]
    found = [mark for mark in marks if mark]
    if not found:
        return [Narrative(heading, content, headings)] if content else []
    # The outermost indentation, and there the mark the first bullet uses ("⚫" over "➢").
    indent = min(mark[0] for mark in found)
    top = next(mark for mark in found if mark[0] == indent)
    preamble: list[Segment] = []
    groups: list[list[Segment]] = []
    for segment, mark in zip(content, marks, strict=True):
        if mark == top:
            groups.append([segment])
        elif groups:
            groups[-1].append(segment)
        else:
            preamble.append(segment)
    units: list[Unit] = [Narrative(heading, preamble, headings)] if preamble else []
    return units + [Bullet(group, headings) for group in groups]


# --- Q&A pairs ---------------------------------------------------------------------------


def _marked_start(segment: Segment) -> QuestionStart | None:
    return question_start(segment.text)


def _bare_start(segment: Segment) -> QuestionStart | None:
    if not is_bare_question(segment.text):
        return None
    return QuestionStart(None, 0, None, answer_marked=False)


class _QuestionIds:
    """Positions of questions in the document, and ids for those written without one.

    An id is the section's prefix and the question's position under that prefix, so an
    unnumbered question after 問 A1 and 問 A2 in topic (A) is A3.
    """

    def __init__(self) -> None:
        self._count = 0
        self._by_prefix: Counter[str] = Counter()

    def next(self, written: str | None, prefix: str) -> tuple[int, str]:
        index = self._count
        self._count += 1
        self._by_prefix[prefix] += 1
        return index, written or f"{prefix}{self._by_prefix[prefix]}"


@dataclass
class _Draft:
    """A pair being read: question lines until the answer begins, then answer lines."""

    start: QuestionStart
    question: list[Segment] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # the question's words, line by line
    answer: list[Segment] = field(default_factory=list)
    answered: bool = False
    depth: int = 0  # brackets open in the answer

    @classmethod
    def open(cls, segment: Segment, start: QuestionStart) -> _Draft:
        draft = cls(start)
        if start.answer_marked:
            draft.take(segment, start.words_start)
        else:
            draft.question.append(segment)
            draft.words.append(segment.text[start.words_start :])
            draft.answered = True
        return draft

    def take(self, segment: Segment, words_start: int = 0) -> None:
        if self.answered:
            self.answer.append(segment)
            self.depth = bracket_depth(segment.text, self.depth)
            return
        at = answer_marker(segment.text, words_start)
        if at is None:
            self.question.append(segment)
            self.words.append(segment.text[words_start:])
            return
        if asked := segment.cut(0, at):
            self.question.append(asked)
            self.words.append(segment.text[words_start:at])
        self.answered = True
        if answer := segment.cut(at, len(segment.text)):
            self.take(answer)

    def close(self, ids: _QuestionIds, section: _Section) -> Pair:
        question, words, answer = self.question, self.words, self.answer
        if not self.answered:
            # No 答 came: the question is its first line, what follows answers it.
            question, words, answer = question[:1], words[:1], question[1:]
        index, question_id = ids.next(self.start.question_id, section.id_prefix)
        text = self.start.quoted or clean(" ".join(words))
        return Pair(index, question_id, text, question, answer, section.headings)


def _pairs(
    section: _Section,
    segments: Sequence[Segment],
    starts: Callable[[Segment], QuestionStart | None],
    ids: _QuestionIds,
) -> list[Pair]:
    """Pairs from segments that begin with a question."""
    drafts: list[_Draft] = []
    for segment in segments:
        # A 問 inside an answer's open bracket belongs to a follow-up, not a new pair.
        start = starts(segment) if not drafts or drafts[-1].depth == 0 else None
        if start:
            drafts.append(_Draft.open(segment, start))
        else:
            drafts[-1].take(segment)
    return [draft.close(ids, section) for draft in drafts]
