"""A chunk's metadata as its template makes it, without what every template records."""

from __future__ import annotations

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.templates.sections import DOCUMENT_SECTIONS_KEY, TITLES_KEY


def own_metadata(row: ChunkRow) -> dict:
    """`row.metadata` less the titles of its sections (templates/sections.py, tested there)."""
    return {k: v for k, v in row.metadata.items() if k not in (TITLES_KEY, DOCUMENT_SECTIONS_KEY)}
