"""A page's hits as one result: a search answers with pages, each with its passages.

A filing's evidence is a page (a statement, a note), which often yields several chunks (a
statement's row groups, a table and the prose around it); ranked one a chunk, they fill the
top k with one page's pieces. Grouped, the page ranks where its best hit ranks, its further
hits ride along, and the next page moves up: no hit ranks lower than it did alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_assets.index.schema import NO_PAGE

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
