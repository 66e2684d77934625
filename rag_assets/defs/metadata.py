"""Metadata a person wants to see in the UI."""

from __future__ import annotations

from dagster import MetadataValue


def chunk_preview(records: list[dict], limit: int = 3, width: int = 400) -> MetadataValue:
    blocks = []
    for r in records[:limit]:
        pages = f"p. {r.get('page_start')}-{r.get('page_end')}" if r.get("page_start") else ""
        text = r["text"] if len(r["text"]) <= width else r["text"][:width] + " …"
        blocks.append(f"**#{r['chunk_index']}** `{r['header_path']}` {pages}\n\n{text}")
    return MetadataValue.md("\n\n---\n\n".join(blocks) or "_no chunks_")


def seconds(value: float) -> MetadataValue:
    return MetadataValue.float(round(value, 3))


def degraded_metadata(notes: list[str]) -> dict[str, MetadataValue]:
    """`degraded`: the optional steps that failed for this document (empty when none did), so a
    document that landed without one of them says so where it is shown and in the receipt."""
    return {"degraded": MetadataValue.json(list(notes))}
