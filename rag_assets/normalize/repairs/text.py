"""Words the parser broke: hyphenated line breaks, spaces injected inside Latin words, and
spaces injected between CJK characters."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from rag_assets.contracts.ir import DocumentElement, TableData
from rag_assets.tables.to_markdown import table_to_markdown

# Code and formulas are verbatim; every other element's text (and table cell) is prose.
_VERBATIM_TYPES = frozenset({"code", "formula"})

# A word broken at a line end: lowercase letter, hyphen, newline, lowercase letter.
_HYPHEN_BREAK = re.compile(r"([A-Za-z]*[a-z])-\n([a-z][A-Za-z]*)")
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
# A run of Latin letters (accented ones too) between word boundaries; CJK is never a fragment.
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
_LATIN_WORD = re.compile(rf"(?<![\w-])[{_LATIN}]+(?![\w-])")
# Letter-spacing in a PDF's text layer splits a word in two or three (`Territor ial`,
# `interm ediar y`); a longer run is text spaced on purpose.
_MAX_FRAGMENTS = 3

# Ideographs and kana, which Chinese and Japanese write without spaces; Hangul is left out on
# purpose: Korean separates words with spaces.
_IDEOGRAPH = (
    "\u2e80-\u2fdf\u3005-\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U00020000-\U0002fa1f"
)
# CJK punctuation: full stops, brackets, fullwidth commas and parentheses.
_CJK_PUNCT = (
    "\u3001-\u3004\u3008-\u3011\u3014-\u301f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
)
# A space run between two CJK characters, at least one of them an ideograph or kana.
_CJK_SPACE = re.compile(
    rf"(?<=[{_IDEOGRAPH}])[ \t\u3000]+(?=[{_IDEOGRAPH}{_CJK_PUNCT}])"
    rf"|(?<=[{_CJK_PUNCT}])[ \t\u3000]+(?=[{_IDEOGRAPH}])"
)
# The space after a clause number ("第一条 为了", "第三章 总则") separates number from text.
_CLAUSE_NUMBER = re.compile(r"第\s*[\d.〇零一二三四五六七八九十百千两]+\s*(?:编|部分|章|节|条|款)$")


def join_hyphenated(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """`implemen-\\ntation` -> `implementation`; a compound the document spells with a hyphen
    elsewhere (`well-known`) keeps its hyphen and only loses the line break."""
    compounds, words = set(), set()
    for element in elements:
        for word in _WORD.findall(element.text.lower()):
            (compounds if "-" in word else words).add(word)

    def fix(text: str) -> tuple[str, int]:
        def join(match: re.Match[str]) -> str:
            left, right = match[1], match[2]
            joined = f"{left}{right}"
            keep = f"{left}-{right}".lower() in compounds and joined.lower() not in words
            return f"{left}-{right}" if keep else joined

        return _HYPHEN_BREAK.subn(join, text)

    return _map_prose(elements, fix, paged_only=False)


def join_split_words(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """`Territor ial scope` -> `Territorial scope` when the document spells `territorial`
    unbroken elsewhere and one of the fragments never stands alone as a word in it.

    The document's own words are the dictionary: a fragment that is no word of the document
    shows the space is spurious, the joined word that it is a split. Two real words (`an
    other`, `with in`) both stand alone elsewhere and stay apart; a word the document never
    spells whole stays split.
    """
    texts = [text for element in elements for text in _prose_texts(element)]
    seen: Counter[str] = Counter(m[0].lower() for text in texts for m in _LATIN_WORD.finditer(text))
    # A fragment counts as a word only where it stands outside every candidate run.
    in_runs: Counter[str] = Counter(
        f.lower() for text in texts for _, _, run in _split_spans(text, seen) for f in run
    )
    alone = {f: seen[f] - in_runs[f] for f in in_runs}

    def fix(text: str) -> tuple[str, int]:
        pieces: list[str] = []
        cursor = count = 0
        for start, end, fragments in _split_spans(text, seen):
            if min(alone[f.lower()] for f in fragments) > 0:
                continue
            pieces += [text[cursor:start], "".join(fragments)]
            cursor, count = end, count + 1
        return "".join(pieces) + text[cursor:], count

    return _map_prose(elements, fix, paged_only=False)


def _split_spans(text: str, seen: Counter[str]) -> list[tuple[int, int, list[str]]]:
    """(start, end, fragments) of runs of words one space apart whose join is a word the
    document uses, longest run first, left to right."""
    words = list(_LATIN_WORD.finditer(text))
    spans: list[tuple[int, int, list[str]]] = []
    i = 0
    while i < len(words):
        for size in range(_MAX_FRAGMENTS, 1, -1):
            group = words[i : i + size]
            if len(group) < size or any(
                text[a.end() : b.start()] != " " for a, b in zip(group, group[1:], strict=False)
            ):
                continue
            fragments = [m[0] for m in group]
            # A capital after the first fragment starts a word (`Visual Studio` is no split
            # of `VisualStudio`), unless the whole run is in capitals (`TERRITOR IAL`).
            camel = any(f[0].isupper() for f in fragments[1:]) and not "".join(fragments).isupper()
            if not camel and seen["".join(fragments).lower()]:
                spans.append((group[0].start(), group[-1].end(), fragments))
                i += size - 1
                break
        i += 1
    return spans


def remove_cjk_spaces(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """`中 华 人 民` -> `中华人民` in text laid out on pages (PDF extraction joins lines and spans
    with spaces); a space between CJK and Latin words or digits stays as it was."""

    def fix(text: str) -> tuple[str, int]:
        count = 0

        def drop(match: re.Match[str]) -> str:
            nonlocal count
            if _CLAUSE_NUMBER.search(text[: match.start()]):
                return match[0]
            count += 1
            return ""

        return _CJK_SPACE.sub(drop, text), count

    # Born-digital formats (no layout box) wrote their spaces on purpose.
    return _map_prose(elements, fix, paged_only=True)


def _map_prose(
    elements: list[DocumentElement],
    fix: Callable[[str], tuple[str, int]],
    *,
    paged_only: bool,
) -> tuple[list[DocumentElement], int]:
    """Apply `fix` to every prose text and table cell; tables are re-rendered when a cell changed."""
    out: list[DocumentElement] = []
    total = 0
    for element in elements:
        if element.type in _VERBATIM_TYPES or (paged_only and element.bbox is None):
            out.append(element)
            continue
        if element.table is not None:
            table, count = _fix_table(element.table, fix)
            total += count
            if count:
                element = element.model_copy(
                    update={"table": table, "text": table_to_markdown(table)}
                )
            out.append(element)
            continue
        text, count = fix(element.text)
        total += count
        out.append(element.model_copy(update={"text": text}) if count else element)
    return out, total


def _prose_texts(element: DocumentElement) -> list[str]:
    """The texts `_map_prose` would fix in this element."""
    if element.type in _VERBATIM_TYPES:
        return []
    if element.table is None:
        return [element.text]
    table = element.table
    return [cell.text for cell in table.cells] + [table.caption or "", *table.footnotes]


def _fix_table(table: TableData, fix: Callable[[str], tuple[str, int]]) -> tuple[TableData, int]:
    """The table with `fix` applied to its cells, caption and footnotes."""
    total = 0

    def apply(text: str) -> str:
        nonlocal total
        fixed, count = fix(text)
        total += count
        return fixed

    fixed = table.model_copy(
        update={
            "cells": [c.model_copy(update={"text": apply(c.text)}) for c in table.cells],
            "caption": apply(table.caption) if table.caption else table.caption,
            "footnotes": [apply(note) for note in table.footnotes],
        }
    )
    return (fixed, total) if total else (table, 0)
