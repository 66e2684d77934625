"""Running headers and footers glued into the lines of text that has no layout.

Text extracted from a PDF (a `.txt` of a statute, say) keeps each page's header or footer, often
on the last line of the page's text: `...processing of personal data is lawful. 4.5.2016 L 119/2
Official Journal of the European Union EN`. With no boxes to place it, the furniture repair
cannot see it, and the header would sit inside every chunk that crosses a page break.

What gives it away is a page counter: the same words at the start or end of many lines, with
the same numbers but one that counts up from one occurrence to the next (`L 119/1`, `L 119/2`,
...), beside words of its own. `Article 6(1)` or `of this Regulation` repeat too, but count
nothing; numbered headings and steps count, but have no other number and few words. Such a run of words is cut from
every line it opens or ends; a line it fills goes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from rag_assets.contracts.ir import DocumentElement

_PROSE_TYPES = frozenset({"paragraph", "list", "footnote"})
_NUMBER = re.compile(r"\d+")
_MIN_WORDS, _MAX_WORDS = 3, 20
_MIN_REPEATS = 5
# Words of letters a running line has besides its numbers: `Official Journal of the European
# Union` has seven; `### Article 5` or `- Step 3:` (a heading, a numbered step) has one.
_MIN_LETTER_WORDS = 3
# The counter and a number that stays (a date, an issue, a document number: `4.5.2016 L 119/2`);
# `Step 3: Click the` opening steps that begin alike has the counter alone.
_MIN_NUMBERS = 2
_LETTER_WORD = re.compile(r"^[^\W\d_]{2,}[.,:;]?$")
_SENTENCE_END = re.compile(r"[.!?;:,。！？；：，]$")
# Share of steps between occurrences, in reading order, where the counter goes to the next page.
_COUNTING_SHARE = 0.8


@dataclass(frozen=True)
class _Occurrence:
    element: int
    line: int
    start: int  # in the line
    end: int
    numbers: tuple[int, ...]


def strip_running_text(elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """Lines of elements without layout lose a running header or footer; count of lines cut."""
    candidates: dict[tuple[str, str], list[_Occurrence]] = defaultdict(list)
    for e, element in enumerate(elements):
        if element.bbox is not None or element.type not in _PROSE_TYPES:
            continue
        for n, line in enumerate(element.text.split("\n")):
            for side, start, end in _edges(line):
                run = line[start:end]
                letter_words = sum(bool(_LETTER_WORD.match(word)) for word in run.split())
                # A header is no sentence: a run ending a sentence (`... notified to the
                # Commission.`) is the text's own, however regularly it repeats.
                if (
                    len(_NUMBER.findall(run)) >= _MIN_NUMBERS
                    and letter_words >= _MIN_LETTER_WORDS
                    and not _SENTENCE_END.search(run)
                ):
                    numbers = tuple(int(m) for m in _NUMBER.findall(run))
                    key = (side, _NUMBER.sub("#", " ".join(run.split())))
                    candidates[key].append(_Occurrence(e, n, start, end, numbers))
    running = [occurrences for occurrences in candidates.values() if _counts_pages(occurrences)]
    cuts: dict[tuple[int, int], tuple[int, int]] = {}
    for occurrences in running:
        for o in occurrences:
            # The longest run wins where several end (or open) the same line.
            held = cuts.get((o.element, o.line))
            if held is None or o.end - o.start > held[1] - held[0]:
                cuts[(o.element, o.line)] = (o.start, o.end)
    if not cuts:
        return elements, 0
    out = list(elements)
    for e in {e for e, _ in cuts}:
        lines = out[e].text.split("\n")
        kept = []
        for n, line in enumerate(lines):
            if (e, n) in cuts:
                start, end = cuts[(e, n)]
                line = (line[:start] + line[end:]).strip()
                if not line:
                    continue
            kept.append(line)
        out[e] = out[e].model_copy(update={"text": "\n".join(kept)})
    return out, len(cuts)


def _edges(line: str) -> list[tuple[str, int, int]]:
    """("head" | "tail", start, end) of every run of 3-20 words opening or ending the line."""
    words = [m.span() for m in re.finditer(r"\S+", line)]
    runs = []
    for count in range(_MIN_WORDS, min(_MAX_WORDS, len(words)) + 1):
        runs.append(("head", words[0][0], words[count - 1][1]))
        runs.append(("tail", words[-count][0], words[-1][1]))
    return runs


def _counts_pages(occurrences: list[_Occurrence]) -> bool:
    """Enough occurrences, on different lines, with one number counting up in reading order."""
    lines = {(o.element, o.line) for o in occurrences}
    if len(lines) < _MIN_REPEATS or len(lines) != len(occurrences):
        return False
    ordered = sorted(occurrences, key=lambda o: (o.element, o.line))
    width = len(ordered[0].numbers)
    if any(len(o.numbers) != width for o in ordered):
        return False
    steps = len(ordered) - 1
    for position in range(width):
        values = [o.numbers[position] for o in ordered]
        pairs = list(zip(values, values[1:], strict=False))
        # Pages counted: mostly the next page, never back. A recital or step number opening
        # lines of the same words counts up too, but skips.
        if all(b >= a for a, b in pairs) and sum(b == a + 1 for a, b in pairs) >= (
            _COUNTING_SHARE * steps
        ):
            return True
    return False
