"""Heading levels recovered from numbering where the parser flattened or guessed them.

Levels the source states (Markdown `#`, HTML `h1`-`h6`, DOCX heading styles), marked
`LEVEL_STATED` in a heading's metadata by its adapter, are never changed. Only the levels a
parser guessed from a page's layout are set: Docling's layout model and PyMuPDF's font-size
ranks guess them; plain text has none. A heading's number says more: the document's numbering families are ordered (a family that restarts at 1
right under another ranks below it, else named divisions first, else first appearance), each
family's depths take consecutive levels, and a document title stays above level-1 sections.
A document whose levels already agree with its numbering is left alone, but for the cover
lines before a first division (below).

Unnumbered headings: before the first numbered one (cover, contents, preface) and front/back
matter (References, Appendix) at the top (before a first division, such as a filing's `Item 1`
with no `PART I` heading, at its level); right after a heading that is only a number ("1"),
at its level, as the title it lost; elsewhere one level below the section they fall in.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import cmp_to_key

from rag_assets.contracts.ir import DocumentElement
from rag_assets.normalize.repairs.numbering import (
    DEPTH_FAMILIES,
    NAMED_RANKS,
    Numbering,
    numbering,
    trailing_number,
)

_ATX_MARKER = re.compile(r"^\s*#{1,6}(?=\s|$)\s*")
_MAX_LEVEL = 6
_MIN_FAMILY_SIZE = 2
_TOP_MATTER = re.compile(
    r"^(?:abstract|acknowledge?ments?|appendix(?:es)?\b.*|annex\b.*|bibliography|"
    r"(?:table of )?contents|foreword|glossary|index|notices|preface|references|"
    r"目录|目錄|前言|附录.*|附錄.*|参考文献|參考文獻)$",
    re.IGNORECASE,
)

Style = tuple[str, int]
# Numbering families of a document's top divisions (Part, Chapter, Item; 编, 章).
_DIVISIONS = frozenset({"chapter", "cjk"})
# Metadata key an adapter sets on a heading whose level the source itself states.
LEVEL_STATED = "level_stated"


def recover_heading_levels(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """Re-level headings from their numbering; returns the elements and how many changed."""
    headings = [i for i, e in enumerate(elements) if e.type == "heading"]
    if all(elements[i].metadata.get(LEVEL_STATED) for i in headings):
        return elements, 0
    titles = {i: _title(elements[i]) for i in headings}
    numbered = {i: n for i in headings if (n := numbering(titles[i])) is not None}
    numbered |= _trailing_numbers(headings, titles, numbered)
    # One heading of a family is no pattern: a stray "3.11." line may only look numbered.
    sizes = Counter(n.family for n in numbered.values())
    numbered = {i: n for i, n in numbered.items() if sizes[n.family] >= _MIN_FAMILY_SIZE}
    if not numbered:
        return elements, 0
    tiers = _tiers([numbered[i] for i in headings if i in numbered])
    top = 2 if any(e.type == "title" for e in elements) else 1
    if _levels_agree(elements, numbered, tiers):
        levels = _cover_beside_first_division(elements, headings, numbered)
    else:
        levels = _levels(headings, titles, numbered, tiers, top)
    out = list(elements)
    changed = 0
    for i, level in levels.items():
        if level != elements[i].level and not elements[i].metadata.get(LEVEL_STATED):
            text = "#" * level + " " + titles[i]
            out[i] = elements[i].model_copy(update={"level": level, "text": text})
            changed += 1
    return out, changed


def _title(element: DocumentElement) -> str:
    return _ATX_MARKER.sub("", element.text, count=1).strip()


def _trailing_numbers(
    headings: list[int], titles: dict[int, str], numbered: dict[int, Numbering]
) -> dict[int, Numbering]:
    """Titles ending in a section number, when those numbers count 1, 2, 3... with the
    document's leading single numbers ("들어가며 1" ... "5" then "맺으며")."""
    if any(n.family == "decimal" and n.rank > 1 for n in numbered.values()):
        return {}  # a document with dotted numbers does not also number by suffix
    sequence: list[tuple[int, int, bool]] = []  # (index, number, found by suffix)
    for i in headings:
        if i in numbered:
            n = numbered[i]
            if n.family == "decimal" and n.number.isdigit():
                sequence.append((i, int(n.number), False))
        elif (number := trailing_number(titles[i])) is not None:
            sequence.append((i, number, True))
    numbers = [number for _, number, _ in sequence]
    by_suffix = [(i, number) for i, number, suffix in sequence if suffix]
    # Counting from 1: "Windows 10" then "Windows 11" name products, not sections.
    if len(by_suffix) < 2 or numbers != list(range(1, len(numbers) + 1)):
        return {}
    return {i: Numbering("decimal", 1, str(number), False) for i, number in by_suffix}


def _tiers(ordered: list[Numbering]) -> dict[Style, int]:
    """Each numbering style's rank among all the document's styles, 0 the highest."""
    first_seen: dict[str, int] = {}
    ranks: dict[str, set[int]] = defaultdict(set)
    votes: dict[tuple[str, str], int] = defaultdict(int)
    previous: Numbering | None = None
    for position, n in enumerate(ordered):
        first_seen.setdefault(n.family, position)
        ranks[n.family].add(n.rank)
        # A family numbering from one again right under another heading ranks below it.
        if previous is not None and previous.family != n.family and n.first:
            votes[previous.family, n.family] += 1
        previous = n

    def compare(a: str, b: str) -> int:
        if votes[a, b] != votes[b, a]:
            return -1 if votes[a, b] > votes[b, a] else 1
        rank_a, rank_b = NAMED_RANKS.get(a), NAMED_RANKS.get(b)
        if rank_a != rank_b:
            if rank_a is None or rank_b is None:
                return 1 if rank_a is None else -1
            return rank_a - rank_b
        return first_seen[a] - first_seen[b]

    tiers: dict[Style, int] = {}
    families = sorted(first_seen, key=cmp_to_key(compare))
    for position, family in enumerate(families):
        present = sorted(ranks[family])
        if family in DEPTH_FAMILIES:
            # 7.4 is level 2 even where no bare 7 heading exists, unless a division above
            # (Chapter 7) stands for the first depth.
            start = 1 if position == 0 else present[0]
            present = list(range(start, present[-1] + 1))
        for rank in present:
            tiers[family, rank] = len(tiers)
    return tiers


def _levels_agree(
    elements: list[DocumentElement], numbered: dict[int, Numbering], tiers: dict[Style, int]
) -> bool:
    """One level per numbering style, and deeper styles at deeper levels."""
    levels: dict[Style, set[int]] = defaultdict(set)
    for i, n in numbered.items():
        levels[n.family, n.rank].add(elements[i].level or 0)
    if any(len(found) > 1 for found in levels.values()):
        return False
    ordered = [min(levels[style]) for style in sorted(levels, key=tiers.__getitem__)]
    return all(a < b for a, b in zip(ordered, ordered[1:], strict=False))


def _levels(
    headings: list[int],
    titles: dict[int, str],
    numbered: dict[int, Numbering],
    tiers: dict[Style, int],
    top: int,
) -> dict[int, int]:
    levels: dict[int, int] = {}
    top_titles: set[str] = set()
    first = _first_division(headings, numbered)
    front = top
    if first is not None:
        front = min(top + tiers[numbered[first].family, numbered[first].rank], _MAX_LEVEL)
    anchor: int | None = None  # the level unnumbered headings sit below; None before numbering
    bare_level: int | None = None  # level of a number-only heading, for the title after it
    for i in headings:
        n = numbered.get(i)
        key = titles[i].casefold()
        if n is not None:
            level = min(top + tiers[n.family, n.rank], _MAX_LEVEL)
            anchor, bare_level = level, (level if n.bare else None)
        elif bare_level is not None:
            level, bare_level = bare_level, None
        elif anchor is None:
            level = front
            top_titles.add(key)
        elif key in top_titles or _TOP_MATTER.match(key):
            level = top
            top_titles.add(key)
            anchor = top
        else:
            level = min(anchor + 1, _MAX_LEVEL)
        levels[i] = level
    return levels


def _cover_beside_first_division(
    elements: list[DocumentElement], headings: list[int], numbered: dict[int, Numbering]
) -> dict[int, int]:
    """Where the levels agree with the numbering: the unnumbered headings before a first
    division (a filing's `Item 1` with no `PART I` heading, a `Chapter`) at its level, as
    `_levels` puts them. Nothing but the document's title ranks above a division, so a
    cover's lines (`Documents Incorporated By Reference:`) stand beside it, not above it."""
    first = _first_division(headings, numbered)
    if first is None or not elements[first].level:
        return {}
    level = elements[first].level
    return {i: level for i in headings if i < first and (elements[i].level or 0) < level}


def _first_division(headings: list[int], numbered: dict[int, Numbering]) -> int | None:
    """The first numbered heading, when it is a division (Part, Chapter, Item; 编, 章)."""
    first = next((i for i in headings if i in numbered), None)
    return first if first is not None and numbered[first].family in _DIVISIONS else None
