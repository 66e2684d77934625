"""`clauses`: one unit per clause of a statute, contract or policy, found by its marker in the text.

Markers (see `numbering`): 第X章 / `CHAPTER I` open a chapter, 第X节 / `Section N` a section,
and the clause level is the first of these the document has: 第X条 or `Article N`; else
`Section N(.N)`; else decimal numbering, where `1.1` is a clause and `1.` a section when
`1.1`-style clauses follow it (a clause otherwise). Deeper numbers (`1.1.1`, `(a)`, `（一）`)
stay inside their clause.

A marker counts at the start of a line (after any `#` or list bullet). Text extracted
from PDFs and read as Markdown has its lines joined into paragraphs, so a marker inside a
line also counts when a title follows it on that line and its number continues the
sequence (`Article 3` after `Article 2`, `Section 1` after a chapter); cross-references
(`依照本法第三十九条`, `Article 8(1) of the Charter`, `Article 16 TFEU`) fail the marker
shape or the sequence. Decimal numbers count only at line starts and only increasing
(1. < 1.1 < 1.2 < 2.), so a numbered list inside a clause starts nothing.

Units: text before the first marker (title, preamble, recitals) is packed by size into
`text` chunks, like a semantic section without a heading: recitals are context, and the
extracted text gives them no reliable boundary (`(12)` also numbers definitions, points
and footnotes); a preamble of headings alone (the document's title) is no unit. Each clause
is a `clause` unit; a chapter or section is a `text` unit only when it has text of its own
besides its heading. A heading with no text of its own gives no unit (a chapter whose text
is all in its sections, an `Article 7 Repealed` line): its line is in the headings of the
clauses under it, if any. Clauses are never merged when short: each keeps its own
`logical_unit`.

A unit is packed and split like a `semantic` section (`packing`: whole elements, then
sentences, items, rows; with overlap). Its first chunk is the text as written, marker line
included; every later chunk repeats the unit's heading line first. `headings` are lines
of the text ([chapter, section, clause heading]) and `header_path` is built from the
chapter and section.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.templates.base import (
    HEADING_TYPES,
    ChunkTemplate,
    ElementSpan,
    content_elements,
    context_root,
    header_path_for,
)
from rag_assets.templates.packing import Packer, Piece, render
from rag_assets.templates.tokens import TokenCounter
from rag_assets.text.numbering import Marker, MarkerKind, find_markers, marker_at

Role = Literal["chapter", "section", "clause"]
# Tables, code, figures and captions hold no clause markers, only content.
_SCANNED_TYPES = frozenset({"title", "heading", "paragraph", "list"})
# What may precede a marker at a line start: a markdown heading marker or a list bullet.
_LINE_PREFIX = re.compile(r"\s*(?:#{1,6}\s+|[-*+]\s+)?")
# Punctuation that ends or joins sentences; a title has none (commas in English titles
# are fine: "Transparent information, communication and ...").
_SENTENCE_MARK = re.compile(r"[;:!?。；：！？，、]|\.(?:\s|$)")
_TITLE_MAX_CHARS = 200


@dataclass(frozen=True)
class _Found:
    """A marker in the text of element `index`; offsets are in that element's text."""

    index: int
    marker: Marker
    line_start: int  # offset of its line
    line: str
    at_line_start: bool


@dataclass(frozen=True)
class _Heading:
    role: Role
    found: _Found
    end: int  # end of the marker and its title in the element's text
    text: str  # the heading as written, whitespace collapsed: "Article 5 Principles ..."

    @property
    def index(self) -> int:
        return self.found.index

    @property
    def start(self) -> int:
        return self.found.line_start + self.found.marker.start

    @property
    def cut(self) -> int:
        """Where the previous unit ends: a heading line's `#` prefix goes with its heading."""
        return self.found.line_start if self.found.at_line_start else self.start


@dataclass
class _Unit:
    heading: _Heading | None  # None for the text before the first marker
    headings: list[str]
    metadata: dict
    slices: list[tuple[int, DocumentElement]]  # (position in reading order, covered part)

    @property
    def line(self) -> str:
        return self.heading.text if self.heading else ""


class ClausesTemplate(ChunkTemplate):
    """Clauses packed and split as `semantic` packs its sections (`packing`)."""

    name = "clauses"
    version = "11"  # 11: chunks record their section's and table's titles
    headings_from_text = True

    def chunk(self, doc: StandardizedDocument, counter: TokenCounter) -> list[ChunkRow]:
        elements = content_elements(doc)
        packer = Packer(
            counter,
            self.options.max_tokens,
            self.options.overlap_tokens,
            tuple(self.vocabularies(doc)),
        )
        rows: list[ChunkRow] = []
        for unit in _units(elements, _headings(elements)):
            rows.extend(self._unit_rows(doc, unit, packer, len(rows)))
        return rows

    def _unit_rows(
        self, doc: StandardizedDocument, unit: _Unit, packer: Packer, first_index: int
    ) -> list[ChunkRow]:
        line = unit.line
        lead = packer.lead(context_root(doc), unit.headings, line)
        pieces = [
            piece for index, element in unit.slices for piece in packer.pieces(index, element, lead)
        ]
        is_clause = unit.heading is not None and unit.heading.role == "clause"
        # A run of headings alone (the heading as written, or headings of the IR, where what
        # follows is too large to join them) is no chunk: the next run, which repeats the
        # heading line, covers their place (the last run, at the unit's end).
        kept: list[tuple[list[Piece], list[ElementSpan]]] = []
        carried: list[ElementSpan] = []
        for run in packer.pack(pieces, lead):
            spans = [piece.span for piece in run]
            if _headings_only(run, line):
                carried.extend(spans)
            else:
                kept.append((run, [*carried, *spans]))
                carried = []
        if carried and kept:
            kept[-1] = (kept[-1][0], [*kept[-1][1], *carried])
        rows: list[ChunkRow] = []
        for run, spans in kept:
            # The unit's first chunk starts with the heading as written; later ones repeat it.
            text = render("" if run[0] is pieces[0] else line, run)
            rows.append(
                self.make_row(
                    doc,
                    first_index + len(rows),
                    text,
                    packer.counter,
                    spans,
                    header_path=header_path_for(unit.headings[:-1]) if unit.heading else "/",
                    headings=unit.headings,
                    chunk_type="clause" if is_clause else "text",
                    logical_unit=unit.heading.text if unit.heading else None,
                    metadata=dict(unit.metadata),
                )
            )
        return rows


def _headings_only(run: list[Piece], line: str) -> bool:
    if all(piece.element.type in HEADING_TYPES for piece in run):
        return True
    return bool(line) and " ".join(render("", run).split()) == line


# --- finding the headings ------------------------------------------------------------------


def _headings(elements: list[DocumentElement]) -> list[_Heading]:
    found = list(_find(elements))
    roles = _roles({f.marker.kind for f in found})
    accepted = _in_sequence([f for f in found if f.marker.kind in roles], roles)
    headings = []
    for position, current in enumerate(accepted):
        role = roles[current.marker.kind]
        following = accepted[position + 1] if position + 1 < len(accepted) else None
        if _is_top_decimal(current.marker):
            # `1.` heads a section when `1.1`-style clauses follow it.
            nested = following is not None and len(following.marker.number) > 1
            role = "section" if nested else "clause"
        # Only the next heading can share this one's line: the title ends there.
        same_line = (
            following is not None
            and following.index == current.index
            and following.line_start == current.line_start
        )
        line_end = following.marker.start if same_line else len(current.line)
        headings.append(_heading(role, current, line_end, elements[current.index].text))
    return headings


def _find(elements: list[DocumentElement]) -> Iterator[_Found]:
    for index, element in enumerate(elements):
        if element.type not in _SCANNED_TYPES:
            continue
        line_start = 0
        for line in element.text.split("\n"):
            prefix = _LINE_PREFIX.match(line)
            head = prefix.end() if prefix else 0
            for marker in find_markers(line):
                yield _Found(index, marker, line_start, line, marker.start == head)
            line_start += len(line) + 1


def _roles(kinds: set[MarkerKind]) -> dict[MarkerKind, Role]:
    """Which marker kinds head chapters, sections and clauses in this document."""
    if "article" in kinds:
        return {"chapter": "chapter", "section": "section", "article": "clause"}
    if "section" in kinds:
        return {"chapter": "chapter", "section": "clause"}
    return {"chapter": "chapter", "decimal": "clause"}


def _in_sequence(found: list[_Found], roles: dict[MarkerKind, Role]) -> list[_Found]:
    """The markers that head something (see the module docstring)."""
    accepted: list[_Found] = []
    last: dict[Role, int] = {"chapter": 0, "section": 0, "clause": 0}
    last_decimal: tuple[int, ...] = ()
    for candidate in found:
        marker, role = candidate.marker, roles[candidate.marker.kind]
        if marker.kind == "decimal":
            # Deeper numbers (1.1.1) are sub-clauses: they stay inside their clause.
            increasing = marker.number > last_decimal and len(marker.number) <= 2
            if not (candidate.at_line_start and increasing):
                continue
            last_decimal = marker.number
        elif not candidate.at_line_start and not _continues(candidate, last[role]):
            continue
        accepted.append(candidate)
        last[role] = marker.number[-1]
        if role == "chapter":
            last["section"] = 0  # sections are numbered within their chapter
    return accepted


def _continues(found: _Found, last: int) -> bool:
    """A marker inside a line needs a title after it and the next number in its sequence."""
    rest = found.line[found.marker.end :]
    return bool(rest.strip()) and found.marker.number == (last + 1,)


def _heading(role: Role, found: _Found, line_end: int, text: str) -> _Heading:
    """The heading: the marker plus its title, on the same line or on the lines after it."""
    start, end = found.line_start + found.marker.start, found.line_start + found.marker.end
    rest = found.line[found.marker.end : line_end].rstrip()
    if not rest.strip():
        end = _title_lines_end(text, end)
    elif _is_title(rest):
        end += len(rest)
    return _Heading(role, found, end, " ".join(text[start:end].split()))


def _title_lines_end(text: str, end: int) -> int:
    """A marker alone on its line (`Article 12`) takes the title on the next line, and the
    lines continuing it (they start in lower case: a title wrapped by the PDF layout)."""
    marker_line, *following = text[end:].split("\n")
    position = end + len(marker_line)  # where the current line ends
    title: list[str] = []
    for line in following:
        wrapped = line[:1].islower()
        if (title and not wrapped) or marker_at(line, 0) or not _is_title(" ".join([*title, line])):
            break
        title.append(line)
        end = position + 1 + len(line.rstrip())
        position += 1 + len(line)
    return end


def _is_top_decimal(marker: Marker) -> bool:
    return marker.kind == "decimal" and len(marker.number) == 1


def _is_title(text: str) -> bool:
    stripped = text.strip()
    return 0 < len(stripped) <= _TITLE_MAX_CHARS and not _SENTENCE_MARK.search(stripped)


# --- cutting the document into units -------------------------------------------------------


def _units(elements: list[DocumentElement], headings: list[_Heading]) -> list[_Unit]:
    if not elements:
        return []
    # Each unit runs up to where the next one is cut off.
    bounds = [(h.index, h.cut) for h in headings] + [(len(elements) - 1, len(elements[-1].text))]
    units: list[_Unit] = []
    preamble = _slices(elements, (0, 0), bounds[0])
    if any(element.type not in HEADING_TYPES for _, element in preamble):
        units.append(_Unit(None, [], {}, preamble))
    chapter: str | None = None
    section: str | None = None
    for heading, bound in zip(headings, bounds[1:], strict=True):
        if heading.role == "chapter":
            chapter, section = heading.text, None
        elif heading.role == "section":
            section = heading.text
        elif _is_top_decimal(heading.found.marker):
            section = None  # `2.` without `2.1`-style clauses stands where a section would
        if not _has_body(elements, heading, bound):
            continue  # a heading alone: its line is in the headings of what follows
        units.append(_unit(elements, heading, bound, chapter, section))
    return units


def _unit(
    elements: list[DocumentElement],
    heading: _Heading,
    bound: tuple[int, int],
    chapter: str | None,
    section: str | None,
) -> _Unit:
    metadata = {key: value for key, value in (("chapter", chapter), ("section", section)) if value}
    ancestors = list(metadata.values())
    if heading.role == "clause":
        marker = heading.found.marker
        metadata = {"clause_number": marker.label, "clause_index": marker.number[-1], **metadata}
        ancestors.append(heading.text)
    slices = _slices(elements, (heading.index, heading.start), bound)
    return _Unit(heading, ancestors, metadata, slices)


def _has_body(elements: list[DocumentElement], heading: _Heading, bound: tuple[int, int]) -> bool:
    """True when the unit holds text besides its heading."""
    return bool(_slices(elements, (heading.index, heading.end), bound))


def _slices(
    elements: list[DocumentElement], start: tuple[int, int], end: tuple[int, int]
) -> list[tuple[int, DocumentElement]]:
    """The non-blank parts of the elements from `start` up to `end` (element, offset), each
    as an element of its own with the offsets of that part in the markdown."""
    parts = []
    for index in range(start[0], end[0] + 1):
        element = elements[index]
        first = start[1] if index == start[0] else 0
        last = end[1] if index == end[0] else len(element.text)
        part = element.text[first:last]
        if not part.strip():
            continue
        first += len(part) - len(part.lstrip())
        last -= len(part) - len(part.rstrip())
        update = {
            "text": element.text[first:last],
            "start_char": element.start_char + first,
            "end_char": element.start_char + last,
        }
        parts.append((index, element.model_copy(update=update)))
    return parts
