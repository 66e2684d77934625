"""Which documents a question is about: its words matched against the collection's profiles.

A question that names an issuer (`AMCOR`, `American Express`, `AmEx`, a trading symbol), a
period (`FY2023`, `as of 2022`) or a kind of document (`10-Q`, `quarterly`, `press release`)
steers the search to the documents whose profile says so. The inference only narrows a
second search that is fused with the flat one (`Retriever.search`), so a wrong guess costs
rank, never recall, and a collection of one document (or a question naming nothing) is
searched exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from rag_assets.profile.names import LEGAL_FORMS, initials
from rag_assets.profile.periods import QUARTERLY_KINDS, Quarter, quarters_in
from rag_assets.templates.sections import DOCUMENT_SECTIONS_KEY, TITLES_SEARCHED_KEY

# `AT&T`, `Amazon.com`, `Coca-Cola` are one word; `Verizon's` is `Verizon` and `s`.
_WORD = re.compile(r"[^\W_]+(?:[&.-][^\W_]+)*")
_YEAR = re.compile(
    r"(?<![\w$.,])(?:(?:fy|fiscal\s+(?:year\s+)?)\s*'?)?((?:19|20)\d\d)(?![\w%])", re.I
)
_SHORT_FISCAL_YEAR = re.compile(r"\bfy\s*'?(\d\d)\b", re.I)
# Kinds a question can ask for, by the words it uses.
_KIND_WORDS: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = (
    (frozenset({"annual report"}), re.compile(r"\b10-?k\b|\bannual report\b", re.I)),
    # A quarter named (`Q2`, `second quarter`) is a period, which an earnings release covers too.
    (frozenset({"quarterly report"}), re.compile(r"\b10-?q\b|\bquarterly\b", re.I)),
    (
        frozenset({"current report", "press release"}),
        re.compile(r"\b8-?k\b|\bpress release\b|\bearnings release\b", re.I),
    ),
)


class DocumentCard(BaseModel):
    """What a search knows of one document of the collection: its profile's fields."""

    model_config = ConfigDict(frozen=True)

    doc_id: str
    organization: str = ""
    kind: str = ""
    year: int | None = None
    quarter: int | None = None  # the fiscal quarter a quarterly report or release covers
    fiscal_year: int | None = None
    aliases: tuple[str, ...] = ()
    vocabularies: tuple[str, ...] = ()  # the packs its chunks were made with
    sections: tuple[str, ...] = ()  # the titles its chunks' sections and tables go by
    # Whether its collection has a question's titles searched in it; None: the search decides.
    titles_searched: bool | None = None

    @classmethod
    def from_metadata(cls, doc_id: str, metadata: dict) -> DocumentCard:
        def number(name: str) -> int | None:
            value = metadata.get(f"doc_{name}")
            return value if isinstance(value, int) else None

        return cls(
            doc_id=doc_id,
            organization=str(metadata.get("doc_organization") or ""),
            kind=str(metadata.get("doc_kind") or ""),
            year=number("year"),
            quarter=number("quarter"),
            fiscal_year=number("fiscal_year"),
            aliases=tuple(str(a) for a in metadata.get("doc_aliases") or ()),
            vocabularies=tuple(str(p) for p in metadata.get("doc_vocabularies") or ()),
            sections=tuple(str(t) for t in metadata.get(DOCUMENT_SECTIONS_KEY) or ()),
            titles_searched=(
                searched
                if isinstance(searched := metadata.get(TITLES_SEARCHED_KEY), bool)
                else None
            ),
        )


class DocumentInference(BaseModel):
    """The documents a question names, and the words of the question that named them."""

    doc_ids: list[str]
    words: list[str] = Field(default_factory=list)
    reason: str = ""
    # Every document of the issuers the question names, whatever their period or kind; empty
    # when it names no issuer.
    issuer_doc_ids: list[str] = Field(default_factory=list)


def infer_documents(question: str, cards: Sequence[DocumentCard]) -> DocumentInference | None:
    """The documents the question names by issuer, then by period and kind among those; None
    when it names none, or names every document of the collection alike."""
    if len(cards) < 2:
        return None
    words = _words(question)
    named = _named_issuers(cards, words)
    chosen = [card for card in cards if card.doc_id in named]
    said = sorted({named[card.doc_id] for card in chosen})
    reasons = [f"issuer {', '.join(repr(w) for w in said)}"] if chosen else []
    pool = chosen or list(cards)
    quarters = quarters_in(question)
    asked = _asked_years(question)
    fiscal = {year for year, written_fiscal in asked if written_fiscal}
    years = {year for year, _ in asked} | {q.year for q in quarters if q.year is not None}
    kinds = [kinds for kinds, pattern in _KIND_WORDS if pattern.search(question)]
    if years or kinds or quarters:
        scored = {
            card.doc_id: _period_kind_score(card, years, fiscal, quarters, kinds) for card in pool
        }
        best = max(scored.values())
        if best > 0:
            pool = [card for card in pool if scored[card.doc_id] == best]
            if years:
                said.extend(str(y) for y in sorted(years))
            if quarters:
                reasons.append(f"quarter {', '.join(_quarter_name(q) for q in quarters)}")
            elif years:
                reasons.append(f"period {', '.join(str(y) for y in sorted(years))}")
            if kinds:
                reasons.append(f"kind {' or '.join(sorted(k for ks in kinds for k in ks))}")
    if not reasons or len(pool) == len(cards):
        return None
    return DocumentInference(
        doc_ids=sorted(card.doc_id for card in pool),
        words=said,
        reason="; ".join(reasons),
        issuer_doc_ids=sorted(card.doc_id for card in chosen),
    )


def _quarter_name(quarter: Quarter) -> str:
    return f"Q{quarter.number}" + (f" {quarter.year}" if quarter.year else "")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _plain(word: str) -> str:
    """A word as names are compared: case and inner punctuation aside (`Wal-Mart`, `walmart`)."""
    return "".join(c for c in word.casefold() if c.isalnum())


def _key_tokens(name: str) -> list[str]:
    return [p for p in (_plain(t) for t in _words(name)) if p and p not in LEGAL_FORMS]


class _Naming(NamedTuple):
    """Where the question names a card's issuer, and how surely: the whole name or a name the
    document gives itself (3); its initials, a clipped form or a symbol (2); the name's first
    word alone (1)."""

    start: int
    end: int  # the words [start, end) of the question
    strength: int


def _named_issuers(cards: Sequence[DocumentCard], words: list[str]) -> dict[str, str]:
    """doc id -> the question's words naming its issuer. Where two issuers are named by
    overlapping words, the one named by more of them, or more surely, wins: `Corning Natural
    Gas` names that company and not Corning Incorporated."""
    namings = {card.doc_id: _naming(card, words) for card in cards}
    found = {doc_id: n for doc_id, n in namings.items() if n is not None}

    def beaten(mine: _Naming) -> bool:
        return any(
            other.start < mine.end
            and mine.start < other.end
            and (other.end - other.start, other.strength) > (mine.end - mine.start, mine.strength)
            for other in found.values()
        )

    return {
        doc_id: " ".join(words[n.start : n.end]) for doc_id, n in found.items() if not beaten(n)
    }


def _naming(card: DocumentCard, words: list[str]) -> _Naming | None:
    """Where the question names the card's issuer: its name (legal form aside), squashed or
    spaced (`Coca Cola`), a name the document gives it (`AMD`, `Disney`), its initials, a
    clipped form of a two- or three-word name (`AmEx`), a trading symbol, its first word."""
    tokens = _key_tokens(card.organization) if card.organization else []
    if not tokens:
        return None
    plain = [_plain(w) for w in words]
    return (
        _full_naming(tokens, plain)
        or next(filter(None, (_alias_naming(a, words, plain) for a in card.aliases)), None)
        or _short_naming(tokens, words, plain)
        or _first_token_naming(tokens, words)
    )


def _full_naming(tokens: list[str], plain: list[str]) -> _Naming | None:
    """The name's words in a row, or squashed into one to three words (`Coca Cola`)."""
    for start in range(len(plain) - len(tokens) + 1):
        if plain[start : start + len(tokens)] == tokens:
            return _Naming(start, start + len(tokens), 3)
    squashed = "".join(tokens)
    for start in range(len(plain)):
        for width in (1, 2, 3):
            if "".join(plain[start : start + width]) == squashed:
                return _Naming(start, start + width, 3)
    return None


def _short_naming(tokens: list[str], words: list[str], plain: list[str]) -> _Naming | None:
    """A word written as a name that is the name's initials or a clipped form of it."""
    for position, word in enumerate(words):
        if _initials_of(word, tokens):
            return _Naming(position, position + 1, 2)
        written_as_name = (word.isupper() and len(word) >= 2) or (
            len(word) >= 4 and word[0].isupper()
        )
        if written_as_name and _clipped(plain[position], tokens):
            return _Naming(position, position + 1, 2)
    return None


def _first_token_naming(tokens: list[str], words: list[str]) -> _Naming | None:
    if len(tokens) < 2:
        return None
    position = _distinct_first_token(tokens, words)
    return None if position is None else _Naming(position, position + 1, 1)


def _alias_naming(alias: str, words: list[str], plain: list[str]) -> _Naming | None:
    """A name the document gives its issuer, as the question writes it: a symbol or an
    acronym in capitals (`AXP`, not `axp`), a longer name in any case."""
    alias_tokens = [_plain(w) for w in _words(alias)]
    if not alias_tokens:
        return None
    short = len(alias_tokens) == 1 and alias.isupper() and len(alias) <= 5
    for start in range(len(plain) - len(alias_tokens) + 1):
        if plain[start : start + len(alias_tokens)] != alias_tokens:
            continue
        if short and not words[start].isupper():
            continue
        if len(alias_tokens) == 1 and not short and not words[start][:1].isupper():
            continue
        return _Naming(start, start + len(alias_tokens), 2 if short else 3)
    return None


def _initials_of(word: str, tokens: list[str]) -> bool:
    """`AMD` of Advanced Micro Devices, `J&J` or `JnJ` of Johnson & Johnson: the capitals of
    a name of two words or more (an `&` or `n` standing for its `and`)."""
    if len(tokens) < 2 or not word[:1].isupper() or len(word) > 2 * len(tokens) + 1:
        return False
    letters = re.sub(r"(?<=[A-Z])(?:&|n)(?=[A-Z])", "", word)
    return letters.isupper() and letters == initials(tokens)


def _distinct_first_token(tokens: list[str], words: list[str]) -> int | None:
    """The name's first word, written as a name (capitalised, not the question's first word),
    and not followed by a capitalised word that names something else: `Verizon's` names
    Verizon Communications, `General Electric` does not name General Mills."""
    for position, word in enumerate(words):
        if _plain(word) != tokens[0] or position == 0 or not word[0].isupper():
            continue
        after = words[position + 1] if position + 1 < len(words) else ""
        if after[:1].isupper() and _plain(after) != tokens[1]:
            continue
        return position
    return None


def _clipped(word: str, tokens: list[str]) -> bool:
    """`amex` of american express, `fedex` of federal express: the word is the name's words
    each cut to its first two letters or more, in order (two or three words only)."""
    if not 2 <= len(tokens) <= 3 or len(word) < 2 * len(tokens):
        return False

    def rest(remaining: str, parts: list[str]) -> bool:
        if not parts:
            return not remaining
        head = parts[0]
        return any(
            remaining[:cut] == head[:cut] and rest(remaining[cut:], parts[1:])
            for cut in range(2, min(len(head), len(remaining)) + 1)
        )

    return rest(word, tokens)


def _years(question: str) -> set[int]:
    return {year for year, _ in _asked_years(question)}


def _asked_years(question: str) -> set[tuple[int, bool]]:
    """(year, whether written as a fiscal year: `FY2023`, `fiscal 2023`)."""
    years = {(int(m.group(1)), m.group(0)[:1].casefold() == "f") for m in _YEAR.finditer(question)}
    years |= {(2000 + int(m.group(1)), True) for m in _SHORT_FISCAL_YEAR.finditer(question)}
    return years


def _covered_years(card: DocumentCard) -> set[int]:
    """The years a question may call the card's period by: its own, its fiscal year; for a
    quarterly document whose fiscal year is unsaid, the next too (a fiscal year ending in
    January: Q2 of fiscal 2024 ends in July 2023)."""
    years = {y for y in (card.year, card.fiscal_year) if y is not None}
    if card.kind == "quarterly report" and card.fiscal_year is None and card.year is not None:
        years.add(card.year + 1)
    return years


def _period_kind_score(
    card: DocumentCard,
    years: set[int],
    fiscal: set[int],
    quarters: Sequence[Quarter],
    kinds: Iterable[frozenset[str]],
) -> int:
    """2 for the latest year asked (the report that covers it), 1 for another year asked or
    the year after the latest (whose report repeats it as the prior year); a year asked as a
    fiscal year (`fiscal`) is only a card's fiscal year, when it states one. For a quarter
    asked, 3 more for a document of that quarter, 1 for one of an unsaid quarter; 1 more for
    the kind asked."""
    score = 0
    covered = _covered_years(card)
    if card.fiscal_year is not None and fiscal:
        covered = {card.fiscal_year} | (covered - fiscal)
    if years and covered:
        latest = max(years)
        if latest in covered:
            score += 2
        elif covered & years or card.year == latest + 1:
            score += 1
    if quarters:
        if card.quarter is not None:
            if any(
                q.number == card.quarter and (q.year is None or q.year in covered) for q in quarters
            ):
                score += 3
        elif card.kind in QUARTERLY_KINDS:
            score += 1
    if any(card.kind in kind for kind in kinds):
        score += 1
    return score
