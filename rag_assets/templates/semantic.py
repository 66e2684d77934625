"""`semantic`: one heading-led section per chunk, whole elements packed up to the token limit.

Sections follow a heading stack. A section's content is packed as whole elements;
only an element too large for a chunk on its own is cut, at its natural seams
(sentences, list items, table rows with the header repeated, code lines), and a
seam still too large is cut between words. Every chunk of a section starts with
the section's heading line, and a chunk continuing a section first repeats the
tail of the previous one (whole elements or seams, within `overlap_tokens`).

A heading with no content of its own (its section holds only subheadings, or it is the
document's title alone) gives no chunk: its title is in the `headings`, `header_path` and
breadcrumb of every chunk below it. Short sections are merged (see `SemanticTemplate`).

Token limit: `token_count <= max_tokens` holds for every chunk except where the heading
line alone leaves no room for content. Chunks are sized with the breadcrumb that their
`context_text` puts before them, so what is embedded keeps the limit too, unless breadcrumb
and heading line take more than half of it (then they are sized without the breadcrumb).
A split table's header rows (a code block's fences) are repeated in every part only
while, with the heading line, they take at most half the limit; larger ones are left out
of the parts. Chunks of several pieces are checked with an
exact count; a single seam is sized by adding counts, which is exact for tokenizers that
split on whitespace first (WordPiece, SentencePiece) and within a token or two for
byte-level BPE.
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
    contextualize,
    has_words,
    heading_level,
    heading_line,
    heading_title,
)
from rag_assets.templates.tokens import TokenCounter, balanced_runs, token_windows

_CELL_END = re.compile(r"(?<!\\)\|[ \t]*")  # a table row's cell ends at its unescaped pipe

BLOCK_SEPARATOR = "\n\n"
# "7.4.1 Timing" or "3. Scope": the number must be followed by the title.
_SECTION_NUMBER = re.compile(r"^(\d+(?:\.\d+)*)\.?\s")
# A sentence ends at . ! ? before whitespace, or at 。！？ (no space follows in CJK text);
# closing quotes and brackets stay with their sentence.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[。！？]+[\"'”’)\]」』）]*")
# A paragraph number ("2.", "3.1.", "iv.") ends in a full stop but opens the sentence after it.
_ENUMERATOR = re.compile(r"\d{1,3}(?:\.\d{1,3})*\.|[ivxlcIVXLC]{1,6}\.")
_LIST_ITEM = re.compile(r"^([ \t]*)(?:[-*+•]|\d+[.)])[ \t]")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass
class _Section:
    heading: DocumentElement | None  # None for content before the first heading
    headings: list[str]
    header_path: str
    content: list[tuple[int, DocumentElement]] = field(default_factory=list)


@dataclass(frozen=True)
class _Piece:
    """A contiguous slice of one element's text; the unit that chunks are packed from."""

    index: int  # the element's position in reading order, to merge adjacent slices
    element: DocumentElement
    start: int
    end: int
    tokens: int
    # Repeated around a partial element: a table's header rows, a code block's fences.
    prefix: str = ""
    suffix: str = ""
    # A split table's caption, put before every part whose chunk does not hold the caption's
    # own element (position `caption_index`; None when the caption is the table's own).
    caption: str = ""
    caption_index: int | None = None


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
    version = "6"

    def chunk(self, doc: StandardizedDocument, counter: TokenCounter) -> list[ChunkRow]:
        drafts = [
            draft for section in _sections(doc) for draft in self._drafts(doc, section, counter)
        ]
        return [
            self._row(doc, index, draft, counter)
            for index, draft in enumerate(self._merge_short(drafts, counter))
        ]

    def _drafts(
        self, doc: StandardizedDocument, section: _Section, counter: TokenCounter
    ) -> list[_Draft]:
        line = heading_line(section.heading) if section.heading else ""
        lead = self._lead(doc.title, section.headings, line, counter)
        pieces = [
            piece
            for position, (index, element) in enumerate(section.content)
            for piece in self._pieces(
                index, element, lead, counter, *_caption(section.content, position)
            )
        ]
        if not pieces:
            return []  # a heading alone: its title lives on in the headings below it
        packed = self._pack(pieces, lead, counter)
        drafts = []
        for chunk_pieces in packed:
            spans = [ElementSpan(p.element, p.start, p.end) for p in chunk_pieces]
            if section.heading and not drafts:
                # Only the first chunk covers the heading's own place in the markdown.
                spans.insert(0, ElementSpan(section.heading, 0, len(section.heading.text)))
            text = _render(line, chunk_pieces)
            drafts.append(
                _Draft(
                    text,
                    counter.count(text),
                    lead.removesuffix(line),
                    spans,
                    [section],
                    frozenset(p.index for p in chunk_pieces),
                    frozenset(p.index for p in chunk_pieces if p.element.type == "table"),
                    first=not drafts,
                    whole=len(packed) == 1,
                )
            )
        return drafts

    def _merge_short(self, drafts: list[_Draft], counter: TokenCounter) -> list[_Draft]:
        """Short sections merged forward, else back (see the class docstring)."""
        limit, floor = self.options.max_tokens, self.options.min_tokens
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
        self, doc: StandardizedDocument, index: int, draft: _Draft, counter: TokenCounter
    ) -> ChunkRow:
        section = draft.sections[0]
        number = _section_number(section.heading)
        metadata: dict = {"contains_table": bool(draft.tables)}
        if number:
            metadata["section_number"] = number
        if len(draft.sections) > 1:
            metadata["merged_sections"] = [s.headings[-1] for s in draft.sections[1:]]
        single_table = bool(draft.tables) and len(draft.indexes) == 1
        return self.make_row(
            doc,
            index,
            draft.text,
            counter,
            draft.spans,
            header_path=section.header_path,
            headings=section.headings,
            chunk_type="table" if single_table else "text",
            logical_unit=number,
            metadata=metadata,
        )

    def _lead(
        self, title: str | None, headings: list[str], line: str, counter: TokenCounter
    ) -> str:
        """What chunks under `line` are sized after: breadcrumb and heading line, as their
        context_text puts them before the content, so that what is embedded keeps the limit;
        the heading line alone when the two take more than half the limit."""
        lead = contextualize(title, headings, line)
        return lead if counter.count(lead) <= self.options.max_tokens // 2 else line

    def _pieces(
        self,
        index: int,
        element: DocumentElement,
        lead: str,
        counter: TokenCounter,
        caption: str = "",
        caption_index: int | None = None,
    ) -> list[_Piece]:
        """The element whole if it fits a chunk alone, else its seams, cut further if needed.

        `lead` is what each chunk's context_text puts before the content (breadcrumb and
        heading line, `contextualize`): the limit holds for what is embedded. A split table
        repeats its header rows in every part, and its `caption` where the part's chunk does
        not already hold it, so that every part names its table.
        """
        text, limit = element.text, self.options.max_tokens
        base = counter.count(lead)
        alone = counter.count(_render(lead, [_Piece(index, element, 0, len(text), 0)]))
        if alone <= limit:
            return [_Piece(index, element, 0, len(text), alone - base)]
        prefix_end, seams, suffix_start = _seams(element)
        seams = _worded(text, seams)
        prefix, suffix = text[:prefix_end], text[suffix_start:]
        repeated = (prefix, suffix, caption, None)
        # What a chunk of this element costs besides its content.
        overhead = counter.count(_render(lead, [_Piece(index, element, 0, 0, 0, *repeated)]))
        if (prefix or suffix or caption) and overhead > limit // 2:
            # Header rows (or fences) repeated in every part would leave too little room for
            # the rows themselves, or none: the parts go without them.
            prefix = suffix = caption = ""
            overhead = counter.count(_render(lead, [_Piece(index, element, 0, 0, 0)]))
        repeated = (prefix, suffix, caption, caption_index)
        budget = max(1, limit - overhead)
        pieces: list[_Piece] = []
        for start, end in seams:
            cost = counter.count(text[start:end])
            if cost <= budget:
                pieces.append(_Piece(index, element, start, end, cost, *repeated))
                continue
            for window_start, window_end in _windows(element, text[start:end], counter, budget):
                cut = (start + window_start, start + window_end)
                if not has_words(text[slice(*cut)]):
                    continue  # the tail of a long dot leader: no chunk of its own
                cost = counter.count(text[slice(*cut)])
                pieces.append(_Piece(index, element, *cut, cost, *repeated))
        return pieces

    def _pack(self, pieces: list[_Piece], lead: str, counter: TokenCounter) -> list[list[_Piece]]:
        """Consecutive pieces within the limit, counted after `lead` (as in `_pieces`), in parts
        of near-equal size; a chunk continuing a section opens with the previous chunk's tail."""

        def fits(first: int, last: int) -> bool:
            text = _render(lead, pieces[first : last + 1])
            return counter.count(text) <= self.options.max_tokens

        runs = balanced_runs(
            [piece.tokens for piece in pieces],
            self.options.max_tokens,
            self.options.overlap_tokens,
            fits,
            base=counter.count(lead),
        )
        return [pieces[first : last + 1] for first, last in runs]


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
        stack.push(heading_level(element), title)
        sections.append(_Section(element, stack.titles, stack.header_path))
    # Content before the first heading is a section only when there is some.
    return sections if sections[0].content else sections[1:]


def _nests(before: _Section, after: _Section) -> bool:
    """True when `after` is a child or a sibling of `before`."""
    return after.headings[:-1] in (before.headings, before.headings[:-1])


def _render(line: str, pieces: list[_Piece]) -> str:
    """Heading line, then each element's covered slice; adjacent slices of one element merge."""
    blocks = [line] if line else []
    held = {piece.index for piece in pieces}
    for _, group in groupby(pieces, key=lambda piece: piece.index):
        slices = list(group)
        first, last = slices[0], slices[-1]
        if first.caption and first.caption_index not in held:
            blocks.append(first.caption)
        body = first.element.text[first.start : last.end]
        blocks.append(first.prefix + body + first.suffix)
    return BLOCK_SEPARATOR.join(blocks)


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
    match = _SECTION_NUMBER.match(heading_title(heading) + " ") if heading else None
    return match.group(1) if match else None


def _seams(element: DocumentElement) -> tuple[int, list[tuple[int, int]], int]:
    """Where an element may be cut: (prefix end, seam spans, suffix start) in its text.

    The prefix and suffix are repeated around every part: a table's header rows,
    a code block's opening and closing fences. Tables without a header rule, code
    without fences and TOCs are cut at lines.
    """
    text = element.text
    if element.type in ("table", "toc"):  # adapters may render a TOC as a table
        lines = _lines(text)
        rule = next((i for i, (s, e) in enumerate(lines) if _TABLE_RULE.match(text[s:e])), None)
        if rule is None or rule == len(lines) - 1:
            return 0, lines, len(text)
        return lines[rule + 1][0], lines[rule + 1 :], len(text)
    if element.type in ("code", "formula"):
        lines = _lines(text)
        if len(lines) >= 3 and all(_FENCE.match(text[slice(*lines[i])]) for i in (0, -1)):
            return lines[1][0], lines[1:-1], lines[-2][1]
        return 0, lines, len(text)
    if element.type == "list":
        return 0, _items(text), len(text)
    return 0, _sentences(text), len(text)


def _worded(text: str, seams: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Seams without a word (the `. . . .` of a dot leader, an empty table row, a `}` line)
    joined to the seam before them, leading ones to the first seam with a word: alone in a
    chunk they would leave it nothing to find."""
    joined: list[tuple[int, int]] = []
    leading: int | None = None  # start of wordless seams before the first with a word
    for start, end in seams:
        if has_words(text[start:end]):
            joined.append((start if leading is None else leading, end))
            leading = None
        elif joined:
            joined[-1] = (joined[-1][0], end)
        elif leading is None:
            leading = start
    if leading is not None:  # not a word anywhere: one seam
        joined.append((leading, seams[-1][1]))
    return joined


def _windows(
    element: DocumentElement, seam: str, counter: TokenCounter, budget: int
) -> list[tuple[int, int]]:
    """Spans of a seam over the budget. A table row is cut only between its cells (a cell
    over the budget alone, by tokens), so that no part holds a fragment of a value."""
    if element.type not in ("table", "toc"):
        return token_windows(seam, counter, budget)
    bounds = [0, *(m.end() for m in _CELL_END.finditer(seam))]
    bounds = bounds if bounds[-1] == len(seam) else [*bounds, len(seam)]
    spans: list[tuple[int, int]] = []
    start = 0
    for cell_start, cell_end in zip(bounds, bounds[1:], strict=False):
        if counter.count(seam[start:cell_end]) <= budget:
            continue
        if start < cell_start:
            spans.append((start, cell_start))
        if counter.count(seam[cell_start:cell_end]) > budget:
            windows = token_windows(seam[cell_start:cell_end], counter, budget)
            spans += [(cell_start + a, cell_start + b) for a, b in windows]
            start = cell_end
        else:
            start = cell_start
    if start < len(seam):
        spans.append((start, len(seam)))
    return spans


def _lines(text: str) -> list[tuple[int, int]]:
    """Spans of the non-blank lines, without their line breaks."""
    spans = []
    start = 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((start, start + len(line.rstrip())))
        start += len(line) + 1
    return spans


def _items(text: str) -> list[tuple[int, int]]:
    """List items at the outermost marker indentation; nested items stay with their parent."""
    lines = _lines(text)
    markers = [(s, e, _LIST_ITEM.match(text[s:e])) for s, e in lines]
    depths = [len(m.group(1)) for _, _, m in markers if m]
    if not depths:
        return lines
    top = min(depths)
    items: list[tuple[int, int]] = []
    for start, end, marker in markers:
        if not items or (marker and len(marker.group(1)) == top):
            items.append((start, end))
        else:
            items[-1] = (items[-1][0], end)
    return items


def _sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans with surrounding whitespace trimmed."""
    spans = []
    start = 0
    ends = [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for end in ends:
        sentence = text[start:end]
        if end < len(text) and _ENUMERATOR.fullmatch(sentence.strip()):
            continue
        if sentence.strip():
            lead = len(sentence) - len(sentence.lstrip())
            spans.append((start + lead, start + len(sentence.rstrip())))
        start = end
    return spans
