"""What a heading's number says about its rank: a numbering family and a depth inside it.

`7.4.1` is decimal depth 3; `第三章` / `第二节` / `第五条` are one family (章 above 节 above 条);
`Part II` / `Chapter 3` / `Item 7A` share a family (Part above Chapter and Item, as in a
filing's `PART II` > `Item 8.`); `Section 2.1`, `Article 5`, `A.`,
`(A)`, `(1)`, `一、` and `（一）` are families of their own, ranked against each other per
document (see heading_levels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.text.numbering import section_number_pattern

_CN = "〇零一二三四五六七八九十百千两"
_CJK_RANKS = {"编": 0, "部分": 0, "章": 1, "节": 2, "条": 3}
# Families whose rank is their number's depth (7.4.1 -> 3); an absent depth still takes a level.
DEPTH_FAMILIES = frozenset({"decimal", "section"})
# Named divisions rank above the rest; between them, this is their usual order.
NAMED_RANKS = {"chapter": 0, "cjk": 0, "section": 1, "article": 2}

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("cjk", re.compile(rf"^第\s*([\d.{_CN}]+)\s*(编|部分|章|节|条)")),
    ("chapter", re.compile(r"^((?i:part|chapter))\s+(\d{1,3}|[IVXLC]{1,7}|[ivxlc]{1,7})\b\.?")),
    # A filing's items: `Item 1A.`, `ITEMS 10, 11 and 12.`, an 8-K's `Item 2.02`.
    ("chapter", re.compile(r"^((?i:items?))\s+(\d{1,2}(?:\.\d{2})?[A-Z]?)\b\.?")),
    ("section", re.compile(rf"^(?i:section)\s+({section_number_pattern()})\b\.?")),
    ("article", re.compile(r"^(?i:article)\s+(\d{1,3}|[IVXLC]{1,7})\b\.?")),
    ("cn_enum", re.compile(rf"^([{_CN}]+)\s*、")),
    ("cn_paren", re.compile(rf"^[（(]\s*([{_CN}]+)\s*[）)]")),
    ("paren_number", re.compile(r"^[（(]\s*(\d{1,3})\s*[）)]")),
    ("letter_paren", re.compile(r"^\(([A-Z])\)(?=\s)")),
    # 7, 7.4., 7.4.1, A.1 (appendix); CJK titles may follow the number without a space.
    (
        "decimal",
        re.compile(rf"^({section_number_pattern(appendix=True)})\.?(?=\s|$|[\u3400-\u9fff])"),
    ),
    ("letter_dot", re.compile(r"^([A-Z])\.\s")),
]
# A section number after the title ("들어가며 1"), as some reports print it in a badge.
_TRAILING = re.compile(r"\s(\d{1,2})$")
_ONE = frozenset({"1", "01", "I", "i", "A", "a", "一", "壹"})


@dataclass(frozen=True)
class Numbering:
    family: str
    rank: int  # depth inside the family: 7.4.1 -> 3; 章 1, 节 2, 条 3
    number: str  # the last component: "1" of 7.4.1, "III" of CHAPTER III
    bare: bool  # the heading is only its number; its title is the next heading

    @property
    def first(self) -> bool:
        """Numbered one: a family starting anew under the heading before it."""
        return self.number in _ONE


def numbering(title: str) -> Numbering | None:
    """The numbering a heading's title starts with, if any."""
    text = title.strip()
    for family, pattern in _PATTERNS:
        match = pattern.match(text)
        if match is None:
            continue
        bare = not text[match.end() :].strip()
        if family == "cjk":
            number = match[1].split(".")[-1]
            return Numbering(family, _CJK_RANKS[match[2]], number, bare)
        if family == "chapter":
            return Numbering(family, int(match[1].lower() != "part"), match[2], bare)
        if family in DEPTH_FAMILIES:
            parts = match[1].split(".")
            return Numbering(family, len(parts), parts[-1], bare)
        return Numbering(family, 1, match[1], bare)
    return None


def trailing_number(title: str) -> int | None:
    """The number a title ends with ("문제점 3" -> 3), to be confirmed by the whole document."""
    match = _TRAILING.search(title.strip())
    return int(match[1]) if match else None
