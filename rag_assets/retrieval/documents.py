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

from pydantic import BaseModel, ConfigDict, Field

# Words a name carries that tell no issuer apart.
_LEGAL_FORMS = frozenset(
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
# `AT&T`, `Amazon.com`, `Coca-Cola` are one word; `Verizon's` is `Verizon` and `s`.
_WORD = re.compile(r"[^\W_]+(?:[&.-][^\W_]+)*")
_YEAR = re.compile(
    r"(?<![\w$.,])(?:(?:fy|fiscal\s+(?:year\s+)?)\s*'?)?((?:19|20)\d\d)(?![\w%])", re.I
)
_SHORT_FISCAL_YEAR = re.compile(r"\bfy\s*'?(\d\d)\b", re.I)
# Kinds a question can ask for, by the words it uses.
_KIND_WORDS: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = (
    (frozenset({"annual report"}), re.compile(r"\b10-?k\b|\bannual report\b", re.I)),
    (
        frozenset({"quarterly report"}),
        re.compile(r"\b10-?q\b|\bquarter(?:ly)?\b|\bq[1-4]\b", re.I),
    ),
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
    aliases: tuple[str, ...] = ()

    @classmethod
    def from_metadata(cls, doc_id: str, metadata: dict) -> DocumentCard:
        year = metadata.get("doc_year")
        return cls(
            doc_id=doc_id,
            organization=str(metadata.get("doc_organization") or ""),
            kind=str(metadata.get("doc_kind") or ""),
            year=year if isinstance(year, int) else None,
            aliases=tuple(str(a) for a in metadata.get("doc_aliases") or ()),
        )


class DocumentInference(BaseModel):
    """The documents a question names, and the words of the question that named them."""

    doc_ids: list[str]
    words: list[str] = Field(default_factory=list)
    reason: str = ""


def infer_documents(question: str, cards: Sequence[DocumentCard]) -> DocumentInference | None:
    """The documents the question names by issuer, then by period and kind among those; None
    when it names none, or names every document of the collection alike."""
    if len(cards) < 2:
        return None
    words = _words(question)
    named = {card.doc_id: _issuer_words(card, question, words) for card in cards}
    chosen = [card for card in cards if named[card.doc_id]]
    said = sorted({w for found in named.values() for w in found})
    reasons = [f"issuer {', '.join(repr(w) for w in said)}"] if chosen else []
    pool = chosen or list(cards)
    years = _years(question)
    kinds = [kinds for kinds, pattern in _KIND_WORDS if pattern.search(question)]
    if years or kinds:
        scored = {card.doc_id: _period_kind_score(card, years, kinds) for card in pool}
        best = max(scored.values())
        if best > 0:
            pool = [card for card in pool if scored[card.doc_id] == best]
            if years:
                said.extend(str(y) for y in sorted(years))
                reasons.append(f"period {', '.join(str(y) for y in sorted(years))}")
            if kinds:
                reasons.append(f"kind {' or '.join(sorted(k for ks in kinds for k in ks))}")
    if not reasons or len(pool) == len(cards):
        return None
    return DocumentInference(
        doc_ids=sorted(card.doc_id for card in pool),
        words=said,
        reason="; ".join(reasons),
    )


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _key_tokens(name: str) -> list[str]:
    return [w for w in (t.casefold() for t in _words(name)) if w not in _LEGAL_FORMS]


def _issuer_words(card: DocumentCard, question: str, words: list[str]) -> list[str]:
    """The words of the question that name the card's issuer: its name (legal form aside), a
    clipped or initial form of a two- or three-word name (`AmEx`), a trading symbol."""
    if not card.organization:
        return []
    tokens = _key_tokens(card.organization)
    if not tokens:
        return []
    folded = [w.casefold() for w in words]
    span = len(tokens)
    for start in range(len(folded) - span + 1):
        if folded[start : start + span] == tokens:
            return [" ".join(words[start : start + span])]
    squashed = "".join(tokens)
    for start in range(len(folded)):
        for width in (1, 2, 3):
            if "".join(folded[start : start + width]) == squashed:
                return [" ".join(words[start : start + width])]
    if len(tokens) > 1:
        found = _distinct_first_token(tokens, words)
        if found:
            return [found]
    for word in words:
        if word.isupper() and len(word) >= 2:
            if word in card.aliases or _clipped(word.casefold(), tokens):
                return [word]
        elif len(word) >= 4 and word[0].isupper() and _clipped(word.casefold(), tokens):
            return [word]
    return []


def _distinct_first_token(tokens: list[str], words: list[str]) -> str | None:
    """The name's first word, written as a name (capitalised, not the question's first word),
    and not followed by a capitalised word that names something else: `Verizon's` names
    Verizon Communications, `General Electric` does not name General Mills."""
    for position, word in enumerate(words):
        if word.casefold() != tokens[0] or position == 0 or not word[0].isupper():
            continue
        after = words[position + 1] if position + 1 < len(words) else ""
        if after[:1].isupper() and after.casefold() != tokens[1]:
            continue
        return word
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
    years = {int(m.group(1)) for m in _YEAR.finditer(question)}
    years |= {2000 + int(m.group(1)) for m in _SHORT_FISCAL_YEAR.finditer(question)}
    return years


def _period_kind_score(card: DocumentCard, years: set[int], kinds: Iterable[frozenset[str]]) -> int:
    """2 for the latest year asked (the report that covers it), 1 for another year asked or
    the year after the latest (whose report repeats it as the prior year); 1 more for the kind
    asked."""
    score = 0
    if years and card.year is not None:
        latest = max(years)
        # A quarter that ends in one calendar year may count to the next fiscal year
        # (a fiscal year ending in January: Q2 FY2024 ends in July 2023).
        fiscal = {card.year, card.year + 1} if card.kind == "quarterly report" else {card.year}
        if latest in fiscal:
            score += 2
        elif fiscal & years or card.year == latest + 1:
            score += 1
    if any(card.kind in kind for kind in kinds):
        score += 1
    return score
