"""Clause numbering: Chinese and Roman numerals, and the markers that open chapters,
sections and clauses (第X章 / 第X节 / 第X条, `CHAPTER I`, `Section 2.1`, `Article 5`, `1.1`).

A marker is recognised by its own shape and by what follows it on its line: a heading
(`Article 5` alone, or `Article 5 Principles ...`) rather than a cross-reference
(`Article 8(1) of the Charter`, `Article 16 TFEU`, `本法第三十九条规定`). Where a marker
sits (line start, inside a line) and whether the numbering fits is for the caller to judge.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

MarkerKind = Literal["chapter", "section", "article", "decimal"]

_CN_DIGITS = {
    "〇": 0,
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_CN_MYRIAD = "万"
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}

# Chinese numerals, ASCII or full-width digits: 三十九, 一百二十六, 一〇六, 12, １２.
CN_NUMERAL = r"[〇零一二两三四五六七八九十百千万0-9０-９]+"
# Spaces and tabs, including the ideographic space that follows 第一条 in Chinese statutes.
_BLANK = "[ \t\u3000]"


def section_number_pattern(*, bounded: bool = True, appendix: bool = False) -> str:
    """Regex source, without groups, of a section number: digit parts joined by dots (`7`,
    `7.4`, `7.4.1`). The full stop in `3. Scope` is no part of it; see SECTION_NUMBER_END.

    bounded: each part has 1-3 digits, so that a year opening a title (`2024 Annual report`)
        is no chapter 2024. Unbounded where something else vouches for the number (a keyword
        such as `Section` before it, a query that is nothing but the number, a caller judging
        the numbering itself) or where a heading is only labelled, not placed, by its number.
    appendix: a capital letter may lead dotted parts (`A.1`, `B.2.3`), never stand alone: a
        bare `A` is a list letter or an initial more often than an appendix.
    """
    part = r"\d{1,3}" if bounded else r"\d+"
    lead = rf"(?:{part}|[A-Z](?=\.\d))" if appendix else part
    return rf"{lead}(?:\.{part})*"


# After a number opening a heading: an optional full stop (`3. Scope`), then a blank or the end
# of the text, so that `2.1Host` and `7.4-1` open with no section number.
SECTION_NUMBER_END = r"\.?(?=\s|$)"


def chinese_numeral_value(text: str) -> int:
    """三十九 -> 39, 一百零六 -> 106, 十二 -> 12, 二〇〇八 -> 2008 (digit by digit), １２ -> 12."""
    text = unicodedata.normalize("NFKC", text)  # full-width digits become ASCII
    if text.isdigit():
        return int(text)
    if text and all(char in _CN_DIGITS for char in text):
        return int("".join(str(_CN_DIGITS[char]) for char in text))
    total, group, digit = 0, 0, None
    for char in text:
        if char in _CN_DIGITS:
            digit = _CN_DIGITS[char]
        elif char in _CN_UNITS:
            # A bare unit counts once: 十二 is 12, not 2.
            group += (1 if digit is None else digit) * _CN_UNITS[char]
            digit = None
        elif char == _CN_MYRIAD:
            total += (group + (digit or 0)) * 10_000
            group, digit = 0, None
        else:
            raise ValueError(f"not a Chinese numeral: {text!r}")
    if digit is None and group == 0 and total == 0:
        raise ValueError(f"not a Chinese numeral: {text!r}")
    return total + group + (digit or 0)


def roman_numeral_value(text: str) -> int:
    """XIV -> 14; a symbol before a larger one is subtracted."""
    values = [_ROMAN[char] for char in text.upper() if char in _ROMAN]
    if not text or len(values) != len(text):
        raise ValueError(f"not a Roman numeral: {text!r}")
    return sum(-v if v < nxt else v for v, nxt in zip(values, [*values[1:], 0], strict=True))


def _noisy(word: str) -> str:
    """`word` tolerating one space between letters: PDF extraction splits words at kerning
    gaps (`CHAPTE R IX`, `Ar ticle`)."""
    return " ?".join(re.escape(char) for char in word)


def _keyword(word: str) -> str:
    """`CHAPTER` or `Chapter`, noise spaces allowed; the caller records which case it was."""
    return f"(?:{_noisy(word.upper())}|{_noisy(word.capitalize())})"


@dataclass(frozen=True)
class Marker:
    """A marker found in a line; `start`/`end` are offsets in that line."""

    kind: MarkerKind
    label: str  # as written, e.g. "第三十九条", "CHAPTE R IX", "Article 5", "1.1"
    number: tuple[int, ...]  # 第三十九条 -> (39,), Section 2.1 -> (2, 1), CHAPTER IV -> (4,)
    start: int
    end: int


@dataclass(frozen=True)
class _Shape:
    kind: MarkerKind
    pattern: re.Pattern[str]
    value: Callable[[re.Match[str]], tuple[int, ...]]
    follows: Callable[[re.Match[str], str], bool]  # (marker, rest of the line) -> heading-like


# 第三十九条, 第五章, 第一节, 第十条之一 (an article inserted by amendment); spaces may surround
# the number (第 1 条).
_CN_MARKER = re.compile(
    rf"第{_BLANK}*({CN_NUMERAL}){_BLANK}*([章节条])(之[一二三四五六七八九十]+)?"
)
_CN_KINDS: dict[str, MarkerKind] = {"章": "chapter", "节": "section", "条": "article"}
# CHAPTER IV / Chapter 3.
_EN_CHAPTER = re.compile(rf"({_keyword('chapter')}) ([IVXLC]+|\d+)\b")
# Section 2 / Section 2.1: the keyword says it is a section number, so parts are unbounded.
_EN_SECTION = re.compile(rf"({_keyword('section')}) ({section_number_pattern(bounded=False)})\b")
# Article 5.
_EN_ARTICLE = re.compile(rf"({_keyword('article')}) (\d+)\b")
# `1.1` / `1.1.` / `2.` before whitespace; a bare `2` is too common in text to count, hence the
# dot required after the first part. Parts of any length: the caller judges whether they fit.
_DECIMAL = re.compile(rf"((?=\d+\.){section_number_pattern(bounded=False)})\.?(?=\s)")
# An English marker's title, after a space or a separator: `Article 5 – Term`, `CHAPTER I: GENERAL`.
_EN_TITLE_START = re.compile(r"(?:\s*[:\u2013\u2014-]\s*|\s+)(\S+)")


def _cn_follows(rest: str) -> bool:
    # 第一条 为了…: the number stands apart; 第三十九条规定 / 第三十九条和… are references.
    return not rest or rest[0].isspace()


def _en_follows(marker: re.Match[str], rest: str) -> bool:
    """Nothing else on the line, or a capitalised title. A capitals keyword allows a
    title in capitals; otherwise a word in capitals is a reference (`Article 16 TFEU`)."""
    if not rest.strip():
        return True
    title = _EN_TITLE_START.match(rest)
    word = title.group(1) if title else ""  # no title: Article 8(1), Article 51;
    if not word[:1].isupper():
        return False  # Article 5 of Regulation ..., Article 5 thereof
    keyword = marker.group(1).replace(" ", "")
    return keyword.isupper() or not (len(word) > 1 and word.isupper())


def _decimal_follows(_: re.Match[str], rest: str) -> bool:
    return bool(rest.strip())


def _roman_or_digits(match: re.Match[str]) -> tuple[int, ...]:
    number = match.group(2)
    return (int(number),) if number.isdigit() else (roman_numeral_value(number),)


def _dotted(group: int) -> Callable[[re.Match[str]], tuple[int, ...]]:
    return lambda match: tuple(int(part) for part in match.group(group).split("."))


_SHAPES = (
    _Shape("chapter", _EN_CHAPTER, _roman_or_digits, _en_follows),
    _Shape("section", _EN_SECTION, _dotted(2), _en_follows),
    _Shape("article", _EN_ARTICLE, _dotted(2), _en_follows),
    _Shape("decimal", _DECIMAL, _dotted(1), _decimal_follows),
)


def marker_at(line: str, position: int) -> Marker | None:
    """The heading marker starting exactly at `position` of `line`, if there is one."""
    match = _CN_MARKER.match(line, position)
    if match:
        if not _cn_follows(line[match.end() :]):
            return None
        kind = _CN_KINDS[match.group(2)]
        number = (chinese_numeral_value(match.group(1)),)
        return Marker(kind, " ".join(match.group().split()), number, *match.span())
    for shape in _SHAPES:
        match = shape.pattern.match(line, position)
        if match and shape.follows(match, line[match.end() :]):
            return Marker(shape.kind, match.group(), shape.value(match), *match.span())
    return None


# Where a marker may begin inside a line: at its start or after whitespace.
_WORD_START = re.compile(r"(?<!\S)\S")


def find_markers(line: str) -> list[Marker]:
    """Every heading marker in `line`, in order, starting at the line start or after a space.

    Markers inside a line matter where text extraction has joined lines together; the
    caller decides how much evidence such a marker needs.
    """
    markers: list[Marker] = []
    position = 0
    while (word := _WORD_START.search(line, position)) is not None:
        marker = marker_at(line, word.start())
        if marker is None:
            position = word.end()
            continue
        markers.append(marker)
        position = marker.end
    return markers
