"""Words the parser broke: hyphenated line breaks, spaces injected inside Latin words, and
spaces injected between CJK characters."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Container, Set

from rag_assets.contracts.ir import DocumentElement, TableData
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED
from rag_assets.normalize.table_markdown import table_to_markdown

# Code and formulas are verbatim; every other element's text (and table cell) is prose.
_VERBATIM_TYPES = frozenset({"code", "formula"})

# A word broken at a line end, in any script with letter case: letters, a hyphen, the line
# break, letters. The hyphen is written four ways: `-`, U+2010 `‐`, the soft hyphen U+00AD
# (a discretionary break, never part of the word; letter-spaced text may put a space before
# it: `technolo \xad\ngically`) and `¬`, which some extractions and OCR use for one.
_LETTERS = r"[^\W\d_]+"
_HYPHEN_BREAK = re.compile(
    rf"(?P<left>{_LETTERS})(?:(?P<hard>[-\u2010])|[ \t]*(?P<soft>[\u00ad\u00ac]))"
    rf"[ \t]*\n[ \t]*(?P<right>{_LETTERS})"
)
# A soft hyphen inside a line is invisible in print and only breaks the word for search.
_INLINE_SOFT_HYPHEN = re.compile(r"(?<=[^\W\d_])\u00ad(?=[^\W\d_])")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
# A run of Latin letters (accented ones too) between word boundaries; CJK is never a fragment.
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
# The `s` of `card's` belongs to its word: no fragment starts after an apostrophe; nor does a
# fragment touch a hyphen (`re‑use`, with a non-breaking one).
_LATIN_WORD = re.compile(rf"(?<![\w'’\-‐‑])[{_LATIN}]+(?![\w\-‐‑])")
# Letter-spacing in a PDF's text layer splits a word in two or three (`Territor ial`,
# `interm ediar y`); a longer run is text spaced on purpose.
_MAX_FRAGMENTS = 3
# Distinct words split clearly (a fragment no English word) that make a document letter-spaced.
_LETTER_SPACED_WORDS = 5
# Words this short (`in`, `a`, `the`) at the end of a run are more often words than fragments.
_SHORT_WORD = 3

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
    """`implemen-\\ntation`, `Verarbei\\u00ad\\ntung` -> one word. A hard hyphen joins only a
    lowercase continuation (`EU-\\nDatenschutz` stays), and a compound the document spells with
    a hyphen elsewhere (`well-known`) keeps its hyphen and only loses the line break; a soft
    hyphen always joins, and goes wherever it sits inside a word."""
    compounds, words = set(), set()
    for element in elements:
        for word in _WORD.findall(element.text.lower()):
            (compounds if "-" in word else words).add(word)

    def join(match: re.Match[str]) -> str:
        left, right = match["left"], match["right"]
        joined = f"{left}{right}"
        if match["soft"]:
            return joined
        if not (left[-1].islower() and right[0].islower()):
            return match[0]
        keep = f"{left}-{right}".lower() in compounds and joined.lower() not in words
        return f"{left}{match['hard']}{right}" if keep else joined

    def fix(text: str) -> tuple[str, int]:
        joined = 0

        def join_counted(match: re.Match[str]) -> str:
            nonlocal joined
            replacement = join(match)
            joined += replacement != match[0]
            return replacement

        text = _HYPHEN_BREAK.sub(join_counted, text)
        text, removed = _INLINE_SOFT_HYPHEN.subn("", text)
        return text, joined + removed

    return _map_prose(elements, fix, paged_only=False)


def join_split_words(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """`Territor ial scope` -> `Territorial scope`: runs of two or three fragments one space
    apart are joined when the join is a word and one of the fragments never stands alone as a
    word in the document. The join is a word when the document spells it whole elsewhere, or
    when it is an English word and a fragment is none (`author ity`, `appropr iate`, `whic h`:
    a single letter other than `a` and `I` is no word).

    A PDF's letter-spacing splits a word the same way every time, so the document may never
    spell it whole: English words come from a word list then. A document with several such
    clear splits is letter-spaced, and there a run of English words is a split too when none
    of them stands alone elsewhere (`super vision`, `refer red`; `carry out` stays). Two
    real words (`an other`, `with in`) both stand alone elsewhere and stay apart; outside
    letter-spaced documents, so does a run of English words whose join the document never
    writes.
    """
    texts = [text for element in elements for text in prose_units(element)]
    return _map_prose(elements, _SplitWords(texts).fix, paged_only=False)


class _SplitWords:
    """A document's split words, read from all its prose texts at once: which words it writes,
    whether it is letter-spaced, and which fragments stand alone outside every candidate run."""

    def __init__(self, texts: list[str]) -> None:
        self.seen: Counter[str] = Counter(
            m[0].lower() for text in texts for m in _LATIN_WORD.finditer(text)
        )
        self.words = english_words()
        clear_splits = {
            _joined(run) for text in texts for run in _split_runs(text, self.clear, self.words)
        }
        self.lenient = len(clear_splits) >= _LETTER_SPACED_WORDS
        self.runs_in = {text: self._runs(text) for text in texts}
        # A fragment counts as a word only where it stands outside every candidate run.
        in_runs: Counter[str] = Counter(
            m[0].lower() for runs in self.runs_in.values() for run in runs for m in run
        )
        self.alone = {f: self.seen[f] - in_runs[f] for f in in_runs}

    def _runs(self, text: str) -> list[list[re.Match[str]]]:
        return _split_runs(text, self.candidate, self.words, self.seen)

    def clear(self, fragments: list[str]) -> bool:
        return self._clear(fragments, "".join(fragments).lower())

    def candidate(self, fragments: list[str]) -> bool:
        joined = "".join(fragments).lower()
        if joined in self.seen:  # a Counter's miss costs a call
            return True
        return self._english(fragments, joined) if self.lenient else self._clear(fragments, joined)

    def _english(self, fragments: list[str], joined: str) -> bool:
        # Letters in a row (`e f`, a list of variables) are no split word.
        return joined in self.words and max(map(len, fragments)) >= 3

    def _clear(self, fragments: list[str], joined: str) -> bool:
        return self._english(fragments, joined) and not all(
            _is_word(f.lower(), self.words) for f in fragments
        )

    def fix(self, text: str) -> tuple[str, int]:
        pieces: list[str] = []
        cursor = count = 0
        runs = self.runs_in[text] if text in self.runs_in else self._runs(text)
        for run in runs:
            run = self._trimmed(run)
            if not self._joins(run):
                continue
            pieces += [text[cursor : run[0].start()], "".join(_words(run))]
            cursor, count = run[-1].end(), count + 1
        return "".join(pieces) + text[cursor:], count

    def _trimmed(self, run: list[re.Match[str]]) -> list[re.Match[str]]:
        """A short word standing alone elsewhere at either end of a run is a word of its own
        (`cour t in` is `court in`, `a system atic` is `a systematic`)."""
        alone, candidate = self.alone, self.candidate
        while len(run) > 2 and _free_word(run[0], alone) and candidate(_words(run[1:])):
            run = run[1:]
        while len(run) > 2 and _free_word(run[-1], alone) and candidate(_words(run[:-1])):
            run = run[:-1]
        return run

    def _joins(self, run: list[re.Match[str]]) -> bool:
        single = [not self.alone[m[0].lower()] for m in run]  # never stands alone elsewhere
        if not any(single) or _stray_letter(run, self.alone):
            return False
        # English words that each also stand alone are a phrase (`carry out`), unless the
        # document writes them joined or letter-spacing left a non-word among them.
        return all(single) or bool(self.seen[_joined(run)] or self.clear(_words(run)))


def _words(run: list[re.Match[str]]) -> list[str]:
    return [m[0] for m in run]


def _joined(run: list[re.Match[str]]) -> str:
    return "".join(_words(run)).lower()


def _free_word(fragment: re.Match[str], alone: dict[str, int]) -> bool:
    word = fragment[0].lower()
    return _may_be_word(word) and len(word) <= _SHORT_WORD and alone[word] > 0


def _stray_letter(run: list[re.Match[str]], alone: dict[str, int]) -> bool:
    """A single letter that letter-spacing cannot have cut off: one that opens the run, or
    follows a word standing alone elsewhere (`f and` are a variable and a word)."""
    return any(
        len(m[0]) == 1 and (i == 0 or alone[run[i - 1][0].lower()] > 0) for i, m in enumerate(run)
    )


def _is_word(fragment: str, words: Set[str]) -> bool:
    return _may_be_word(fragment) and fragment in words


def _may_be_word(fragment: str) -> bool:
    # The word list holds every letter; split words leave single letters behind (`whic h`,
    # `super visor y`), so a single letter other than `a` and `I` is a fragment.
    return len(fragment) > 1 or fragment in ("a", "i")


@functools.cache
def english_words() -> Set[str]:
    """English words, lowercase: the word list Unstructured ships (430,000 words, from NLTK's
    and other lists), loaded once per process (0.3 s)."""
    # The list takes 0.3 s to load: only when a repair needs it.
    from unstructured.nlp.english_words import ENGLISH_WORDS

    return ENGLISH_WORDS


def _split_runs(
    text: str,
    candidate: Callable[[list[str]], bool],
    words_known: Container[str],
    words_seen: Container[str] = (),
) -> list[list[re.Match[str]]]:
    """Runs of words one space apart that are `candidate` splits, longest run first, left to
    right. `candidate` is asked only about runs whose lowercase join is in `words_known` or
    `words_seen` (every candidate's is; most runs' are not, and a lookup is cheaper than a call)."""
    words = list(_LATIN_WORD.finditer(text))
    fragments = [m[0] for m in words]
    spaced = [text[a.end() : b.start()] == " " for a, b in zip(words, words[1:], strict=False)]
    # For each run length, where a run of it may start: its fragments one space apart, their
    # join spelled as a word. Latin letters lowercase one by one as they do together.
    lowered = [f.lower() for f in fragments]
    joined, spelled = lowered, {}
    for size in range(2, _MAX_FRAGMENTS + 1):
        joined = [j + f for j, f in zip(joined, lowered[size - 1 :], strict=False)]
        spelled[size] = [
            (j in words_known or j in words_seen) and all(spaced[k : k + size - 1])
            for k, j in enumerate(joined)
        ]
    starts = sorted({k for hits in spelled.values() for k, hit in enumerate(hits) if hit})
    runs: list[list[re.Match[str]]] = []
    free = 0  # the first fragment no run holds yet
    for i in starts:
        if i < free:
            continue
        for size in range(_MAX_FRAGMENTS, 1, -1):
            if not (i < len(spelled[size]) and spelled[size][i]):
                continue
            group = fragments[i : i + size]
            # A capital after the first fragment starts a word (`Visual Studio` is no split
            # of `VisualStudio`), unless the whole run is in capitals (`TERRITOR IAL`).
            camel = any(f[0].isupper() for f in group[1:]) and not "".join(group).isupper()
            if not camel and candidate(group):
                runs.append(words[i : i + size])
                free = i + size
                break
    return runs


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
        if _untouchable(element) or (paged_only and element.bbox is None):
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
        text, count, line_pages = _fix_by_page(element, fix)
        total += count
        if count:
            metadata = {**element.metadata, "line_pages": line_pages} if line_pages else None
            element = element.model_copy(
                update={"text": text, **({"metadata": metadata} if metadata else {})}
            )
        out.append(element)
    return out, total


def _fix_by_page(
    element: DocumentElement, fix: Callable[[str], tuple[str, int]]
) -> tuple[str, int, list[list[int]] | None]:
    """`fix` over the element's text, page by page when it has `line_pages` (a join must not
    move lines across the page they are on); the new text, the count and the new line_pages."""
    slices = page_slices(element)
    if slices is None:
        return (*fix(element.text), None)
    parts, line_pages, total, line = [], [], 0, 0
    for page, text in slices:
        fixed, count = fix(text)
        parts.append(fixed)
        line_pages.append([line, page])
        line += fixed.count("\n") + 1
        total += count
    return "\n".join(parts), total, line_pages


def page_slices(element: DocumentElement) -> list[tuple[int, str]] | None:
    """The element's text cut where its pages start (`line_pages`), as (page, text) pairs;
    None when it has no per-page lines."""
    breaks = element.metadata.get("line_pages")
    if not breaks:
        return None
    lines = element.text.split("\n")
    ends = [at for at, _ in breaks[1:]] + [len(lines)]
    return [
        (page, "\n".join(lines[start:end])) for (start, page), end in zip(breaks, ends, strict=True)
    ]


def _untouchable(element: DocumentElement) -> bool:
    """Verbatim text, and headings as the source states them (the author's own words)."""
    return element.type in _VERBATIM_TYPES or bool(element.metadata.get(LEVEL_STATED))


def prose_units(element: DocumentElement) -> list[str]:
    """The texts `_map_prose` hands to a fix for this element, one by one: a table's cells,
    caption and footnotes; an element's page slices; else its whole text. A repair that
    learns from the document's texts before fixing them must read these, not element texts."""
    if _untouchable(element):
        return []
    if element.table is not None:
        table = element.table
        return [cell.text for cell in table.cells] + [table.caption or "", *table.footnotes]
    slices = page_slices(element)
    return [element.text] if slices is None else [text for _, text in slices]


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
