"""A page's hits as one result: a search answers with pages, each with its passages.

A filing's evidence is a page (a statement, a note), which often yields several chunks (a
statement's row groups, a table and the prose around it); ranked one a chunk, they fill the
top k with one page's pieces. Grouped, the page ranks where its best hit ranks, its further
hits ride along, and the next page moves up: by best hit, no hit ranks lower than it did alone.

A page ranked by its best hit gains nothing from a second retriever finding another of its
chunks (BM25 its table, the model its prose). With page votes, each retriever's list also
becomes a list of pages, those are fused as the chunks' are, and the page order is that vote
fused with the best-hit order at equal weight: a page both retrievers find rises, and a page
one hit puts first keeps most of its place (the votes alone put fewer evidence pages first,
bench/README). A page one hit leads can then rank below one that several find.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_assets.index.schema import NO_PAGE
from rag_assets.retrieval.fusion import weighted_rrf

PageKey = tuple[str, int]


def page_key(fields: Mapping[str, Any]) -> PageKey | None:
    """A chunk's page, by its document and first page (a chunk over pages 3-4 is on page 3);
    None for a chunk without pages, which stands alone."""
    page = fields.get("page_start")
    if page is None or page == NO_PAGE:
        return None
    return (fields["doc_id"], int(page))


def page_groups(
    order: Sequence[str], pages: Mapping[str, PageKey | None]
) -> list[tuple[str, list[str]]]:
    """The chunk ids in `order` as (lead, the further ids on its page, in order), ranked by
    their leads: a page's first hit leads it."""
    groups: dict[PageKey | str, tuple[str, list[str]]] = {}
    for chunk_id in order:
        key = pages.get(chunk_id) or chunk_id
        if key in groups:
            groups[key][1].append(chunk_id)
        else:
            groups[key] = (chunk_id, [])
    return list(groups.values())


def page_votes(
    rankings: Mapping[str, Sequence[str]], groups: Sequence[tuple[str, list[str]]]
) -> dict[str, list[str]]:
    """Each ranking as a ranking of pages, each page named by its group's lead: the leads in
    the order their pages first appear. Chunks in no group are left out."""
    lead_of = {chunk_id: lead for lead, rest in groups for chunk_id in (lead, *rest)}
    return {
        name: list(dict.fromkeys(lead_of[c] for c in ids if c in lead_of))
        for name, ids in rankings.items()
    }


def best_hit_and_votes(
    groups: Sequence[tuple[str, list[str]]],
    best_hit: Mapping[str, float],
    voted: Sequence[str],
    rrf_k: int,
) -> list[tuple[str, float]]:
    """The pages (named by their leads), best first, by the best-hit order (`groups`) and the
    voted order fused at equal weight: (lead, score in [0, 1]). A page whose best hit scores 0
    (found only by a retriever without weight, or weighed to nothing) keeps 0: both orders
    put it last, and so does their fusion."""
    orders = {"best_hit": [lead for lead, _ in groups], "page_votes": list(voted)}
    fused = weighted_rrf(orders, dict.fromkeys(orders, 1.0), rrf_k)
    return [(lead, score if best_hit[lead] > 0 else 0.0) for lead, score, _ in fused]
