"""Metadata a person wants to see in the UI."""

from __future__ import annotations

from dagster import MetadataValue

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
