"""The other names a document calls its issuer by: those it defines (`Advanced Micro Devices,
Inc. ("AMD" or the "Company")`) and the short forms its own text uses as a name (`Disney` in
The Walt Disney Company's report, `AMD` throughout AMD's).

Read from the document, never from a list of companies: a collection nobody wrote names for
gets them the same way.
"""

from __future__ import annotations

import re
from collections import Counter

# Words of a name that tell no issuer apart.
LEGAL_FORMS = frozenset(
    [
        "inc",
        "incorporated",
        "corp",
        "corporation",
        "co",
        "company",
        "companies",
        "plc",
        "ltd",
        "limited",
        "llc",
        "lp",
        "llp",
        "holdings",
        "holding",
        "group",
        "sa",
        "ag",
        "nv",
        "se",
        "spa",
        "gmbh",
        "the",
        "and",
        "of",
    ]
)
_WORD = re.compile(r"[^\W_]+(?:[&.'-][^\W_]+)*")
_QUOTED = re.compile(r"[“\"]([^”\"\n]{2,40})[”\"]")
_PARENTHESIS = re.compile(r"\(([^()]{2,240})\)")
DEFINITION_WINDOW = 300  # characters after a mention of the name its definition may sit in
READ_FOR_DEFINITIONS = 40_000  # the opening characters, where a document defines its names
MIN_USES = 5  # times a short form must stand as a name to count as one
AS_NAME_SHARE = 0.3  # of the short form's capitalised uses


def key_words(name: str) -> list[str]:
    """The words of a name that tell its issuer apart, as written (legal forms aside)."""
    return [w for w in _WORD.findall(name) if w.casefold() not in LEGAL_FORMS]


def initials(words: list[str]) -> str:
    return "".join(w[0] for w in words).upper()


def other_names(text: str, organization: str) -> list[str]:
    """Names of `organization` that `text` defines or uses as a name, besides its own."""
    words = key_words(organization)
    if not words:
        return []
    found = [*_defined(text[:READ_FOR_DEFINITIONS], words), *_used(text, words)]
    own = " ".join(words).casefold()
    return [n for n in dict.fromkeys(found) if n.casefold() != own]


def _defined(text: str, words: list[str]) -> list[str]:
    """Terms defined in a parenthesis right after a mention of the name (or its first word)
    that stand for the name: its initials, or words of it (`("AMD")`, `("American
    Express")`), not another term defined nearby (`(the "2021 Credit Agreement")`)."""
    own = {w.casefold() for w in words}
    acronym = initials(words)
    mention = re.compile(r"\b" + re.escape(words[0]) + r"\b", re.I)
    names = []
    for match in mention.finditer(text):
        window = text[match.end() : match.end() + DEFINITION_WINDOW]
        parenthesis = _PARENTHESIS.search(window)
        if parenthesis is None:
            continue
        for term in _QUOTED.findall(parenthesis.group(1)):
            term = " ".join(term.strip(" ,.;").split())
            term_words = {w.casefold() for w in _WORD.findall(term)} - LEGAL_FORMS
            stands_for_name = term.replace(".", "").replace("&", "") == acronym or (
                bool(term_words) and term_words <= own
            )
            if term[:1].isupper() and stands_for_name:
                names.append(term)
    return names


def _used(text: str, words: list[str]) -> list[str]:
    """The name's initials written as a word, and any of its words standing alone as a name
    mid-sentence (`at Disney,`, `Disney's`) for a good share of its capitalised uses, while
    hardly ever written in lower case (a common word: `general`, `american`)."""
    names = []
    if len(words) >= 2:
        acronym = initials(words)
        if len(re.findall(rf"\b{re.escape(acronym)}\b", text)) >= MIN_USES:
            names.append(acronym)
    for position, word in enumerate(words):
        if len(word) < 3 or not word[0].isupper():
            continue
        written = word if not word.isupper() else word.capitalize()
        pattern = re.compile(rf"\b(?:{re.escape(written)}|{re.escape(written.upper())})\b")
        uses = list(pattern.finditer(text))
        following = words[position + 1] if position + 1 < len(words) else None
        alone = Counter(m.group(0) for m in uses if _stands_alone(text, m, following))
        as_name = sum(alone.values())
        lower = len(re.findall(rf"\b{re.escape(written.casefold())}\b", text))
        if as_name >= MIN_USES and as_name >= AS_NAME_SHARE * len(uses) and lower * 4 < as_name:
            names.append(alone.most_common(1)[0][0])  # as the text writes it: `CVS`, `Disney`
    return names


def _stands_alone(text: str, match: re.Match[str], following: str | None) -> bool:
    """Mid-sentence (a lower-case word before it) and not followed by another capitalised word
    (the rest of the name, or another name)."""
    before = text[max(0, match.start() - 30) : match.start()]
    if not re.search(r"\b[a-z][a-z,]*\s+$", before):
        return False
    after = text[match.end() : match.end() + 30]
    if after.startswith(("'s", "’s", "s'")):
        return True
    next_word = re.match(r"\s+([^\W_][\w&.-]*)", after)
    if next_word is None:
        return True
    nxt = next_word.group(1)
    return not (nxt[:1].isupper() or (following is not None and nxt == following))
