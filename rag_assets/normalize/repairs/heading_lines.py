"""Heading lines inside paragraphs: text without heading markup (plain text, extracted PDF text,
Markdown written without `#`) still numbers its divisions on lines of their own.

A line heads a division when all of these hold:

- it starts with a marker (`Article 5`, `CHAPTER III`, `Section 2.1`, `第八条`, `1.2`) that is
  no cross-reference (`Article 8(1) of the Charter`, `本法第三十九条规定`; see
  `text.numbering`);
- what follows the marker on the line is a title: short, no sentence punctuation, capitalised
  (`1.2 Scope`); a named marker may stand alone, its title on the next line (`Article 5` /
  `Principles relating to ...`, with lines in lower case continuing a wrapped title);
- its numbers count on through the document (2 after 1, 2.1 after 2, a division restarting at
  1), in a chain of at least two named or three decimal headings, the decimal ones with at
  least one dotted number (`1.1`): single numbers alone are a numbered list's;
- it is not in a run of such lines with no text between them (a contents page, a list).

Such lines become heading elements (a provisional level: chapters above sections above
articles above decimal numbers by depth; `heading_levels` ranks them further) and the
paragraph is split around them. A paragraph spanning pages is left whole: its parts' pages
would be unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.contracts.ir import DocumentElement
from rag_assets.text.numbering import Marker, marker_at

# Sentence punctuation a title has none of (commas are fine: "Remedies, liability and penalties").
_SENTENCE_MARK = re.compile(r"[;:!?。；：！？，、]|\.(?:\s|$)")
# A separator between a marker and its title on the same line: `Article 5 – Term`, `1.2: Scope`.
_SEPARATOR = re.compile(r"^\s*[:\u2013\u2014-]?\s*")
_TITLE_MAX_CHARS = 120
_WRAPPED_TITLE_MAX_CHARS = 200
_TITLE_MAX_WORDS = 20
# A decimal heading's line is shorter than a numbered paragraph's first line.
_DECIMAL_MAX_CHARS = 80
_DECIMAL_MAX_WORDS = 12
_DECIMAL_MAX_DEPTH = 4
_DECIMAL_MAX_PART = 999  # 4.5.2016 is a date
_MIN_NAMED_CHAIN = 2
_MIN_DECIMAL_CHAIN = 3
# Adjacent marker lines of one kind and depth, with no text between: a contents page or a
# list, not headings. Two decimal lines already make a list; named ones may be empty
# divisions ("Article 7 Repealed"), so it takes three.
_MIN_NAMED_RUN = 3
_MIN_DECIMAL_RUN = 2
# How far back a heading looks for the one it continues.
_CHAIN_LOOKBACK = 64
_MAX_LEVEL = 6
# Named divisions rank above decimal numbers, in this order.
_KIND_ORDER = ("chapter", "section", "article")


@dataclass(frozen=True)
class _Candidate:
    element: int  # index of the paragraph
    first_line: int  # the marker's line
    last_line: int  # the title's last line (the marker's line when the title is on it)
    marker: Marker
    title: str  # marker and title as one line, whitespace collapsed

    @property
    def chain_kind(self) -> str:
        return self.marker.kind

    @property
    def depth(self) -> int:
        return len(self.marker.number)


def split_heading_lines(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """Paragraph lines that head numbered divisions become headings; returns the elements
    and how many headings were made."""
    candidates = [
        candidate
        for index, element in enumerate(elements)
        if element.type == "paragraph" and element.page_start == element.page_end
        for candidate in _candidates(index, element.text.split("\n"))
    ]
    accepted = _chained(_outside_runs(candidates))
    if not accepted:
        return elements, 0
    levels = _provisional_levels(accepted)
    by_element: dict[int, list[_Candidate]] = {}
    for candidate in accepted:
        by_element.setdefault(candidate.element, []).append(candidate)
    out: list[DocumentElement] = []
    for index, element in enumerate(elements):
        found = by_element.get(index)
        out.extend(_split(element, found, levels) if found else [element])
    return out, len(accepted)


def _provisional_levels(accepted: list[_Candidate]) -> dict[_Candidate, int]:
    """Named kinds in their usual order, one level each, then decimal depths below them."""
    present = {c.chain_kind for c in accepted}
    named = [kind for kind in _KIND_ORDER if kind in present]
    return {
        c: min(
            named.index(c.chain_kind) + 1 if c.chain_kind in named else len(named) + c.depth,
            _MAX_LEVEL,
        )
        for c in accepted
    }


def _candidates(index: int, lines: list[str]) -> list[_Candidate]:
    found: list[_Candidate] = []
    position = 0
    while position < len(lines):
        candidate = _candidate(index, lines, position)
        if candidate is None:
            position += 1
            continue
        found.append(candidate)
        position = candidate.last_line + 1
    return found


def _candidate(index: int, lines: list[str], position: int) -> _Candidate | None:
    line = lines[position].strip()
    marker = marker_at(line, 0)
    if marker is None or not _numbers_plausible(marker):
        return None
    rest = _SEPARATOR.sub("", line[marker.end :], count=1).strip()
    if marker.kind == "decimal":
        if not rest or not _is_decimal_title(line, rest):
            return None
        return _Candidate(index, position, position, marker, " ".join(line.split()))
    if rest:
        if not _is_title(rest) or len(line) > _TITLE_MAX_CHARS:
            return None
        return _Candidate(index, position, position, marker, " ".join(line.split()))
    last, title = _title_lines(lines, position)
    return _Candidate(index, position, last, marker, " ".join([line, *title]).strip())


def _numbers_plausible(marker: Marker) -> bool:
    if marker.kind != "decimal":
        return True
    return len(marker.number) <= _DECIMAL_MAX_DEPTH and max(marker.number) <= _DECIMAL_MAX_PART


def _is_title(text: str) -> bool:
    first = text[:1]
    # Capitalised, or a letter of a script without case (CJK: `总则`).
    capitalised = first.isupper() or (
        first.isalpha() and not first.isascii() and not first.islower()
    )
    return capitalised and not _SENTENCE_MARK.search(text) and len(text.split()) <= _TITLE_MAX_WORDS


def _is_decimal_title(line: str, title: str) -> bool:
    return (
        _is_title(title)
        and len(line) <= _DECIMAL_MAX_CHARS
        and len(title.split()) <= _DECIMAL_MAX_WORDS
    )


def _title_lines(lines: list[str], position: int) -> tuple[int, list[str]]:
    """The title under a marker alone on its line: the next line when it reads as a title,
    and the lines in lower case after it (a title wrapped by the page layout)."""
    title: list[str] = []
    last = position
    for line in lines[position + 1 :]:
        text = line.strip()
        wrapped = bool(title) and text[:1].islower()
        if not text or (title and not wrapped) or marker_at(text, 0) is not None:
            break
        joined = " ".join([*title, text])
        if not wrapped and (not _is_title(text) or len(text) > _TITLE_MAX_CHARS):
            break
        if _SENTENCE_MARK.search(joined) or len(joined) > _WRAPPED_TITLE_MAX_CHARS:
            break
        title.append(text)
        last += 1
    return last, title


def _outside_runs(candidates: list[_Candidate]) -> list[_Candidate]:
    """Candidates not in a run of adjacent marker lines of one kind and depth."""
    runs: list[list[_Candidate]] = []
    for candidate in candidates:
        previous = runs[-1][-1] if runs else None
        adjacent = (
            previous is not None
            and previous.element == candidate.element
            and previous.last_line + 1 == candidate.first_line
            and previous.chain_kind == candidate.chain_kind
            and previous.depth == candidate.depth
        )
        if adjacent:
            runs[-1].append(candidate)
        else:
            runs.append([candidate])
    kept: list[_Candidate] = []
    for run in runs:
        limit = _MIN_DECIMAL_RUN if run[0].chain_kind == "decimal" else _MIN_NAMED_RUN
        if len(run) < limit:
            kept.extend(run)
    return kept


def _chained(candidates: list[_Candidate]) -> list[_Candidate]:
    """Per marker kind, the longest chain of headings whose numbers count on."""
    kept: list[_Candidate] = []
    for kind in {c.chain_kind for c in candidates}:
        same = [c for c in candidates if c.chain_kind == kind]
        chain = _longest_chain(same)
        decimal = kind == "decimal"
        if len(chain) < (_MIN_DECIMAL_CHAIN if decimal else _MIN_NAMED_CHAIN):
            continue
        if decimal and all(c.depth == 1 for c in chain):
            continue
        kept.extend(chain)
    return sorted(kept, key=lambda c: (c.element, c.first_line))


def _longest_chain(candidates: list[_Candidate]) -> list[_Candidate]:
    length = [1] * len(candidates)
    before: list[int | None] = [None] * len(candidates)
    for k, candidate in enumerate(candidates):
        for j in range(max(0, k - _CHAIN_LOOKBACK), k):
            if length[j] + 1 > length[k] and _follows(candidates[j], candidate):
                length[k], before[k] = length[j] + 1, j
    if not candidates:
        return []
    position: int | None = max(range(len(candidates)), key=lambda k: (length[k], -k))
    chain: list[_Candidate] = []
    while position is not None:
        chain.append(candidates[position])
        position = before[position]
    return chain[::-1]


def _follows(previous: _Candidate, current: _Candidate) -> bool:
    """True when `current`'s number may come next after `previous`'s: the next at some depth
    (gaps of one allowed: a heading the extraction lost), a first child (2 -> 2.1), or a named
    division starting at one again (sections numbered within chapters)."""
    before, after = previous.marker.number, current.marker.number
    if current.chain_kind != "decimal" and after == (1,):
        return True
    depth = len(after)
    if depth == len(before) + 1:
        return after == (*before, 1)
    if depth > len(before):
        return False
    return after[:-1] == before[: depth - 1] and 1 <= after[-1] - before[depth - 1] <= 2


def _split(
    element: DocumentElement, found: list[_Candidate], levels: dict[_Candidate, int]
) -> list[DocumentElement]:
    """The paragraph cut around its heading lines: text before, the heading, text after."""
    lines = element.text.split("\n")
    parts: list[DocumentElement] = []
    position = 0

    def text_part(end: int) -> None:
        text = "\n".join(lines[position:end]).strip("\n")
        if text.strip():
            parts.append(element.model_copy(update={"text": text, "bbox": None}))

    for candidate in found:
        text_part(candidate.first_line)
        level = levels[candidate]
        parts.append(
            element.model_copy(
                update={
                    "type": "heading",
                    "level": level,
                    "text": "#" * level + " " + candidate.title,
                    "bbox": None,
                }
            )
        )
        position = candidate.last_line + 1
    text_part(len(lines))
    return parts
