"""A text's terms as the searches weigh them: words without function words, CJK as bigrams."""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[0-9a-z][0-9a-z_:.x-]*[0-9a-z]|[0-9a-z]")
_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_TOKEN = re.compile(f"(?P<cjk>{_CJK_RUN.pattern})|{_WORD.pattern}")
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "be",
        "been",
        "do",
        "does",
        "did",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "can",
        "could",
        "may",
        "might",
        "must",
        "shall",
        "should",
        "will",
        "would",
        "i",
        "my",
        "me",
        "we",
        "our",
        "you",
        "your",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "their",
        "they",
        "them",
        "from",
        "as",
        "about",
        "into",
        "than",
        "then",
        "so",
        "if",
        "not",
        "no",
        "any",
        "many",
        "much",
    ]
)


def terms(text: str) -> set[str]:
    """Words (casefolded, NFKC, no function words) and CJK character bigrams."""
    return set(term_sequence(text))


def term_sequence(text: str) -> list[str]:
    """`terms` in the order the text says them (a CJK run's bigrams where the run stands)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    found: list[str] = []
    for match in _TOKEN.finditer(folded):
        if run := match.group("cjk"):
            found.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        elif (word := match.group(0)) not in STOP_WORDS and len(word) > 1:
            found.append(word)
    return found
