"""The identifiers a question names, and a ranking of the candidates that hold them verbatim.

A bit range (`15:8`), an offset (`0x04`), a mode (`DDR52`), a product (`DB2`) or a count is
often the most precise thing a question says, and neither retriever sees it whole: the
embedding model reads it as little more than noise, and BM25's analyzer cuts a bit range at
its colon (`15`, `:`, `8`), so `bits 8 and 15` matches it too. When a question holds such a
term (a word with a digit), the candidates the retrievers found are ranked once more: those
holding the most of its identifiers as whole words first, in BM25's order, then in the other
retrievers' order; an identifier most candidates hold (a year every chunk of a filing names)
is left out, as it tells them apart no better than a stop word. That list is fused with the
others (`RAG_ASSETS_FUSION_IDENTIFIER_WEIGHT`), so a chunk naming the identifier that BM25
ranks high gains on one that dense ranks high for the words around it ("What do bits 15:8 of
the Host Control Register hold?": the register's `15:8` row over `1.3 Conventions`, which
says what bits 15:8 mean in general).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from rag_assets.index.rows import RankedId

NAME = "identifiers"  # the ranking's name in `found_by` and the fusion weights
# What the ranking reads of each candidate: the text BM25 analyzes.
MATCHED_FIELD = "context_text"
# Words of Latin letters and digits, with the punctuation inside identifiers (`15:8`, `0x04`,
# `2.1.1`, `4-bit`, `timeout_tcv`); a CJK run around a number leaves the number a word.
_WORD = re.compile(r"[0-9a-z][0-9a-z_:.-]*[0-9a-z]|[0-9a-z]")
# The retrievers whose order breaks ties among chunks holding as many identifiers: BM25 first.
_TIE_ORDER = ("bm25", "sparse", "dense")


def words(text: str) -> set[str]:
    """The text's words, NFKC-normalized and casefolded."""
    return set(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def in_question(query: str) -> frozenset[str]:
    """The query's words that hold a digit."""
    return frozenset(w for w in words(query) if any(c.isdigit() for c in w))


def ranking(
    wanted: frozenset[str], lists: Mapping[str, Sequence[RankedId]], suffix: str = ""
) -> list[RankedId]:
    """The candidates of the retrievers' lists named `<retriever><suffix>` whose
    `MATCHED_FIELD` holds at least one of `wanted`, by how many they hold, then by BM25's
    rank, then the other retrievers'; each scored by that count."""
    order: dict[str, str] = {}
    for retriever in _TIE_ORDER:
        for hit in lists.get(f"{retriever}{suffix}", ()):
            order.setdefault(hit.chunk_id, hit.fields.get(MATCHED_FIELD) or "")
    found = {chunk_id: wanted & words(text) for chunk_id, text in order.items()}
    # An identifier most candidates hold tells them apart no more than a stop word (BM25's idf
    # is not positive for a term in more than half the documents): a year every chunk of a
    # filing names through its document's identity would only repeat BM25's order.
    common = {w for w in wanted if 2 * sum(w in f for f in found.values()) > len(found)}
    held = {chunk_id: len(f - common) for chunk_id, f in found.items()}
    ranked = sorted((chunk_id for chunk_id in order if held[chunk_id]), key=lambda c: -held[c])
    return [RankedId(chunk_id, float(held[chunk_id]), {}) for chunk_id in ranked]
