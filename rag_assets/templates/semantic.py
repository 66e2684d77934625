"""`semantic`: one heading-led section per chunk, whole elements packed up to the token limit.

Sections follow a heading stack. A section's content is packed as whole elements and an
element too large for a chunk on its own is cut at its seams (see `packing`). Every chunk
of a section starts with the section's heading line, and a chunk continuing a section
first repeats the tail of the previous one (whole elements or seams, within
`overlap_tokens`).

A heading with no content of its own (its section holds only subheadings, or it is the
document's title alone) gives no chunk: its title is in the `headings`, `header_path` and
breadcrumb of every chunk below it. Short sections are merged (see `SemanticTemplate`).

Token limit: `token_count <= max_tokens` holds for every chunk except where the heading
line alone leaves no room for content. Chunks are sized with the breadcrumb that their
`context_text` puts before them, so what is embedded keeps the limit too, unless breadcrumb
and heading line take more than half of it (then they are sized without the breadcrumb).
A split table repeats its caption where its part's chunk does not hold the caption.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import groupby

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.templates.base import (
    HEADING_TYPES,
    ChunkTemplate,
    ElementSpan,
    HeadingStack,
    content_elements,
    context_root,
    heading_level,
    heading_line,
    heading_title,
)
from rag_assets.templates.packing import (
    BLOCK_SEPARATOR,
    Packer,
    Piece,
    render,
    table_outline,
)
from rag_assets.templates.tokens import TokenCounter
from rag_assets.text.numbering import SECTION_NUMBER_END, section_number_pattern

# Empty sibling headings whose titles a section's context carries, at most (see _Section).
MAX_CARRIED_TITLES = 2
# "7.4.1 Timing" or "3. Scope": the number then a blank or the end of the title. Parts of any
# length: the number only labels a section (metadata, telling numbered siblings apart), so a
# year-led title reads as its number (`2024 Report` -> 2024).
_SECTION_NUMBER = re.compile(rf"^({section_number_pattern(bounded=False)}){SECTION_NUMBER_END}")


@dataclass
class _Section:
    heading: DocumentElement | None  # None for content before the first heading
    headings: list[str]
    header_path: str
    content: list[tuple[int, DocumentElement]] = field(default_factory=list)
    # The breadcrumb its chunks' context_text gives: `headings`, with the titles of the empty
    # sibling headings just before its own (`CONSOLIDATED BALANCE SHEETS` above `(in
    # thousands)`), which no stack keeps: together they are one title.
    context_headings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Draft:
    """A chunk before it is numbered: one section's chunk, or short sections merged."""

    text: str
    tokens: int  # of `text`
    lead: str  # what its context_text puts before `text`: the breadcrumb
    spans: list[ElementSpan]
    sections: list[_Section]  # the first names the chunk: headings, header_path, number
    indexes: frozenset[int]  # positions of the elements it holds
    tables: frozenset[int]  # those of them that are tables
    first: bool  # the first chunk of its (first) section
    whole: bool  # holds whole sections only
    outline: bool = False  # a split table's outline (see `_outlines`)

    def join(self, other: _Draft, counter: TokenCounter) -> _Draft:
        text = self.text + BLOCK_SEPARATOR + other.text
        return _Draft(
            text,
            counter.count(text),
            self.lead,
            [*self.spans, *other.spans],
            [*self.sections, *other.sections],
            self.indexes | other.indexes,
            self.tables | other.tables,
            self.first,
            self.whole and other.whole,
            self.outline,
        )


class SemanticTemplate(ChunkTemplate):
    """Sections by heading; a heading with nothing under it but other headings gives no chunk.

    Short sections: a section that makes one chunk of fewer than `min_tokens` tokens is
    merged forward with the sections that follow it while each is a child or a sibling of
    the last one merged and the result stays within `max_tokens` (into a long section, only
    its first chunk). One still short is merged back into the chunk before it when that
    chunk ends in its parent or a sibling, within `max_tokens`; otherwise it stays alone.
    A merged chunk is named by the section it opens with (its `headings`, `header_path`
    and `logical_unit`); `metadata.merged_sections` lists the headings of the others.
    """

    name = "semantic"
    version = "12"  # 12: chunks record their section's and table's titles

    def chunk(self, doc: StandardizedDocument, counter: TokenCounter) -> list[ChunkRow]:
        return section_rows(self, doc, counter)


def section_rows(
    template: ChunkTemplate, doc: StandardizedDocument, counter: TokenCounter
) -> list[ChunkRow]:
    """`semantic`'s chunks of `doc`, as rows of `template` (its name, options and failures):
    what a template falls back to for a document without the structure it looks for."""
    options = template.options
    packer = Packer(
        counter, options.max_tokens, options.overlap_tokens, tuple(template.vocabularies(doc))
    )
    drafts = [draft for section in _sections(doc) for draft in _drafts(doc, section, packer)]
    merged = _merge_short(drafts, counter, options.max_tokens, options.min_tokens)
    return [_row(template, doc, index, draft, counter) for index, draft in enumerate(merged)]


def _drafts(doc: StandardizedDocument, section: _Section, packer: Packer) -> list[_Draft]:
    line = heading_line(section.heading) if section.heading else ""
    lead = packer.lead(context_root(doc), section.context_headings, line)
    pieces = [
        piece
        for position, (index, element) in enumerate(section.content)
        for piece in packer.pieces(index, element, lead, *_caption(section.content, position))
    ]
    if not pieces:
        return []  # a heading alone: its title lives on in the headings below it
    packed = packer.pack(pieces, lead)
    drafts = []
    for chunk_pieces in packed:
        spans = [piece.span for piece in chunk_pieces]
        if section.heading and not drafts:
            # Only the first chunk covers the heading's own place in the markdown.
            spans.insert(0, ElementSpan(section.heading, 0, len(section.heading.text)))
        text = render(line, chunk_pieces)
        drafts.append(
            _Draft(
                text,
                packer.counter.count(text),
                lead.removesuffix(line),
                spans,
                [section],
                frozenset(p.index for p in chunk_pieces),
                frozenset(p.index for p in chunk_pieces if p.element.type == "table"),
                first=not drafts,
                whole=len(packed) == 1,
            )
        )
    return drafts + _outlines(section, pieces, line, lead, packer)


def _outlines(
    section: _Section, pieces: list[Piece], line: str, lead: str, packer: Packer
) -> list[_Draft]:
    """One more chunk per table split over several chunks: the section's heading line and the
    table's outline (`packing.table_outline`), so that the words a question names the table by
    meet in one chunk. As many row labels as the token limit leaves room for, from the first;
    a table with room for fewer than two gets none."""
    drafts = []
    breadcrumb = lead.removesuffix(line)
    for index, group in groupby(pieces, key=lambda piece: piece.index):
        parts = list(group)
        element = parts[0].element
        outline = table_outline(element, parts[0].caption) if element.type == "table" else None
        if len(parts) < 2 or outline is None:
            continue

        def render_with(labels: int, outline=outline) -> str:
            return BLOCK_SEPARATOR.join(filter(None, [line, outline.text(labels)]))

        def fits(labels: int) -> bool:
            return packer.counter.count(breadcrumb + render_with(labels)) <= packer.max_tokens

        # The most labels that fit, by bisection: a long table's outline is counted a few
        # times, not once per row.
        low, high = 1, len(outline.labels)
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if fits(middle) else (low, middle - 1)
        if low < 2 or not fits(low):
            continue  # room for fewer than two labels: no outline worth a chunk
        text = render_with(low)
        drafts.append(
            _Draft(
                text,
                packer.counter.count(text),
                breadcrumb,
                [ElementSpan(element, 0, len(element.text))],
                [section],
                frozenset({index}),
                frozenset({index}),
                first=False,
                whole=False,
                outline=True,
            )
        )
    return drafts


def _merge_short(
    drafts: list[_Draft], counter: TokenCounter, limit: int, floor: int
) -> list[_Draft]:
    """Short sections merged forward, else back (see `SemanticTemplate`)."""
    merged: list[_Draft] = []
    position = 0
    while position < len(drafts):
        draft = drafts[position]
        position += 1
        while (
            draft.whole
            and draft.tokens < floor
            and position < len(drafts)
            and drafts[position].first
            and _nests(draft.sections[-1], drafts[position].sections[0])
        ):
            joined = draft.join(drafts[position], counter)
            if counter.count(joined.lead + joined.text) > limit:
                break
            draft = joined
            position += 1
        if (
            draft.whole
            and draft.tokens < floor
            and merged
            and _nests(merged[-1].sections[-1], draft.sections[0])
        ):
            joined = merged[-1].join(draft, counter)
            if counter.count(joined.lead + joined.text) <= limit:
                merged[-1] = joined
                continue
        merged.append(draft)
    return merged


def _row(
    template: ChunkTemplate,
    doc: StandardizedDocument,
    index: int,
    draft: _Draft,
    counter: TokenCounter,
) -> ChunkRow:
    section = draft.sections[0]
    number = _section_number(section.heading)
    metadata: dict = {"contains_table": bool(draft.tables)}
    if number:
        metadata["section_number"] = number
    if draft.outline:
        metadata["table_outline"] = True
    if len(draft.sections) > 1:
        metadata["merged_sections"] = [s.headings[-1] for s in draft.sections[1:]]
    single_table = bool(draft.tables) and len(draft.indexes) == 1
    return template.make_row(
        doc,
        index,
        draft.text,
        counter,
        draft.spans,
        header_path=section.header_path,
        headings=section.headings,
        context_headings=section.context_headings,
        chunk_type="table" if single_table else "text",
        logical_unit=number,
        metadata=metadata,
    )


def _sections(doc: StandardizedDocument) -> list[_Section]:
    stack = HeadingStack()
    sections = [_Section(None, [], "/")]
    for index, element in enumerate(content_elements(doc)):
        if element.type not in HEADING_TYPES:
            sections[-1].content.append((index, element))
            continue
        title = heading_title(element)
        if not title:
            continue
        level = heading_level(element)
        carried = _carried_titles(sections[-1], level, title)
        stack.push(level, title)
        titles = stack.titles
        sections.append(
            _Section(
                element, titles, stack.header_path, context_headings=[*titles[:-1], *carried, title]
            )
        )
    # Content before the first heading is a section only when there is some.
    return sections if sections[0].content else sections[1:]


def _carried_titles(before: _Section, level: int, title: str) -> list[str]:
    """The titles `before` gives the heading that follows it at `level`: its own and those it
    carried, when it is an empty heading at that level (not when both are numbered sections,
    whose numbers already tell them apart)."""
    heading = before.heading
    if heading is None or before.content or heading_level(heading) != level:
        return []
    if _SECTION_NUMBER.match(title) and _section_number(heading):
        return []
    carried = before.context_headings[len(before.headings) - 1 :]
    return carried[-MAX_CARRIED_TITLES:]


def _nests(before: _Section, after: _Section) -> bool:
    """True when `after` is a child or a sibling of `before`."""
    return after.headings[:-1] in (before.headings, before.headings[:-1])


def _caption(content: list[tuple[int, DocumentElement]], position: int) -> tuple[str, int | None]:
    """A table's caption: a caption element right before it (or right after), else the table's
    own; ("", None) for any other element."""
    element = content[position][1]
    if element.type != "table":
        return "", None
    for neighbour in (position - 1, position + 1):
        if 0 <= neighbour < len(content) and content[neighbour][1].type == "caption":
            index, caption = content[neighbour]
            return caption.text.strip(), index
    own = element.table.caption if element.table else None
    return (own.strip(), None) if own else ("", None)


def _section_number(heading: DocumentElement | None) -> str | None:
    match = _SECTION_NUMBER.match(heading_title(heading)) if heading else None
    return match.group(1) if match else None
