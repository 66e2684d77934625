"""Metadata a person wants to see in the UI."""

from __future__ import annotations

from collections.abc import Sequence

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, MetadataValue

from rag_assets.profile.model import DocumentProfile
from rag_assets.text.terminal import visible


def inert_markdown(text: str) -> MetadataValue:
    """Document text as markdown the UI renders, with every `<` escaped: a tag in the text (an
    escaped `&lt;img onerror=...&gt;` of the source is a literal `<img ...>` once parsed) shows
    as text and never runs as HTML; control characters show as escapes."""
    return MetadataValue.md(visible(text).replace("&", "&amp;").replace("<", "&lt;"))


def chunk_preview(records: list[dict], limit: int = 3, width: int = 400) -> MetadataValue:
    blocks = []
    for r in records[:limit]:
        pages = f"p. {r.get('page_start')}-{r.get('page_end')}" if r.get("page_start") else ""
        text = r["text"] if len(r["text"]) <= width else r["text"][:width] + " …"
        blocks.append(f"**#{r['chunk_index']}** `{r['header_path']}` {pages}\n\n{text}")
    return inert_markdown("\n\n---\n\n".join(blocks) or "_no chunks_")


def seconds(value: float) -> MetadataValue:
    return MetadataValue.float(round(value, 3))


def degraded_metadata(notes: list[str]) -> dict[str, MetadataValue]:
    """`degraded`: the optional steps that failed for this document (empty when none did), so a
    document that landed without one of them says so where it is shown and in the receipt."""
    return {"degraded": MetadataValue.json(list(notes))}


def profile_metadata(profile: dict | None) -> dict[str, MetadataValue | str]:
    """What the document is, as its profile says (`identity`), and each field with where it was
    read (`profile`)."""
    if not profile:
        return {"identity": "", "profile": MetadataValue.json({})}
    return {
        "identity": DocumentProfile.model_validate(profile).identity(),
        "profile": MetadataValue.json(profile),
    }


# What raw_documents records of a document's file, shown on every step made of it.
RAW_DOCUMENTS = AssetKey("raw_documents")
SOURCE_LABELS = ("source_path", "size_bytes", "page_count")


def source_metadata(instance: DagsterInstance, keys: Sequence[str]) -> dict[str, dict]:
    """Each document's file (its path under the inbox, size and pages) as its latest
    raw_documents materialization names it, for the documents of one step: newest first, a
    page of records at a time, until each key has its own."""
    found: dict[str, dict] = {}
    records = AssetRecordsFilter(asset_key=RAW_DOCUMENTS, asset_partitions=list(keys))
    cursor = None
    while True:
        page = instance.fetch_materializations(records, limit=max(len(keys), 100), cursor=cursor)
        for record in page.records:
            made = record.asset_materialization
            if made and made.partition and made.partition not in found:
                found[made.partition] = {
                    label: made.metadata[label] for label in SOURCE_LABELS if label in made.metadata
                }
        if len(found) >= len(set(keys)) or not page.has_more:
            return found
        cursor = page.cursor
