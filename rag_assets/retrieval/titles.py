"""The sections a question names by their titles, learned from the collection's own documents.

Every document lists the titles its sections and tables go by (`templates/sections.py`). A
question names one when it holds the title's telling words, in any order or number: `the
cash flow statement` names `Consolidated Statements of Cash Flows`, whose `consolidated`
titles so many of the collection's sections that it tells nothing. A word tells as much as
it is rare among the collection's titles (its IDF over them), so what counts as telling is
learned per collection, with no vocabulary written for it. The named sections are searched
alone too, fused with the flat search (`Retriever.search`), so a wrong guess costs rank,
never recall.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from rag_assets.text.terms import term_sequence

_NUMBER = re.compile(r"(?=.*\d)[\d.:x-]+")
# A title is named when the question holds at least this many of its words ...
MIN_SHARED_WORDS = 2
# ... carrying at least this share of the title's telling (the IDF of its words).
MIN_TOLD = 0.7
# ... said together: the shared words within a stretch of the question's words this much
# longer than they are (`the cash flow statement`, not `cash` early and `statement` late).
MAX_GAP = 2
# The searched titles, most telling first: a question naming many names none well.
MAX_TITLES = 8


def title_words(text: str) -> frozenset[str]:
    """A title's or a question's words as titles are compared: terms, plurals as singulars,
    no numbers (a section's number, `2.1`, is not a word a question names it by)."""
    return frozenset(_word_sequence(text))


def _word_sequence(text: str) -> list[str]:
    return [_singular(t) for t in term_sequence(text) if not _NUMBER.fullmatch(t)]


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-3] + "y" if word.endswith("ies") else word[:-1]
    return word


class SectionTitles:
    """The collection's distinct titles and how rare each of their words is among them."""

    def __init__(self, titles: Iterable[str]) -> None:
        self._words = {t: w for t in dict.fromkeys(titles) if (w := title_words(t))}
        frequency = Counter(word for words in self._words.values() for word in words)
        size = len(self._words)
        self._idf = {w: math.log((size + 1) / (n + 0.5)) for w, n in frequency.items()}
        self._titles_with: defaultdict[str, list[str]] = defaultdict(list)
        for title, words in self._words.items():
            for word in words:
                self._titles_with[word].append(title)

    def __len__(self) -> int:
        return len(self._words)

    def named(self, question: str) -> list[str]:
        """The titles the question names, the most telling first."""
        positions: defaultdict[str, list[int]] = defaultdict(list)
        for position, word in enumerate(_word_sequence(question)):
            positions[word].append(position)
        candidates = {t for word in positions for t in self._titles_with.get(word, ())}
        scored = []
        for title in candidates:
            words = self._words[title]
            shared = words & positions.keys()
            told = sum(self._idf[w] for w in shared)
            whole = sum(self._idf[w] for w in words)
            if (
                len(shared) >= MIN_SHARED_WORDS
                and whole > 0
                and told / whole >= MIN_TOLD
                and _shortest_stretch(shared, positions) <= len(shared) + MAX_GAP
            ):
                scored.append((-told, title))
        return [title for _, title in sorted(scored)[:MAX_TITLES]]


def _shortest_stretch(words: frozenset[str], positions: dict[str, list[int]]) -> int:
    """How many of the question's words the shortest stretch holding all of `words` spans."""
    said = sorted((p, w) for w in words for p in positions[w])
    held: Counter[str] = Counter()
    shortest = said[-1][0] + 1  # the question's words up to the last of them
    start = 0
    for position, word in said:
        held[word] += 1
        while len(held) == len(words):
            first, first_word = said[start]
            shortest = min(shortest, position - first + 1)
            held[first_word] -= 1
            if not held[first_word]:
                del held[first_word]
            start += 1
    return shortest
