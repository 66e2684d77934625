"""The structure path: each table's markdown straight from the parser's cells."""

from __future__ import annotations

import hashlib

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.tables.models import TableMarkdown

VISION_OFF = "vision: off (no vision model configured)"


def structure_markdown(doc: StandardizedDocument, reason: str = VISION_OFF) -> list[TableMarkdown]:
    rows = []
    for index, element in doc.tables():
        table = element.table
        markdown = table_to_markdown(table) if table is not None else element.text
        rows.append(
            TableMarkdown(
                doc_id=doc.doc_id,
                element_index=index,
                page_start=element.page_start,
                page_end=element.page_end,
                caption=table.caption if table else None,
                num_rows=table.num_rows if table else 0,
                num_cols=table.num_cols if table else 0,
                markdown=markdown,
                method="structure",
                cache_key=hashlib.sha256(markdown.encode("utf-8")).hexdigest(),
                fallback_reason=reason,
            )
        )
    return rows


def with_table_markdown(
    doc: StandardizedDocument, tables: list[TableMarkdown]
) -> StandardizedDocument:
    """The IR with each table's text replaced by its chosen markdown.

    Offsets are left as they are: chunk offsets keep pointing into the IR's own markdown.
    """
    chosen = {t.element_index: t.markdown for t in tables}
    elements = [
        _with_text(e, chosen[i]) if i in chosen and chosen[i] else e
        for i, e in enumerate(doc.elements)
    ]
    return doc.model_copy(update={"elements": elements})


def _with_text(element: DocumentElement, text: str) -> DocumentElement:
    """The element with `text`; its `line_pages` kept only when the row lines still match."""
    metadata = element.metadata
    if "line_pages" in metadata and text.count("\n") != element.text.count("\n"):
        metadata = {k: v for k, v in metadata.items() if k != "line_pages"}
    return element.model_copy(update={"text": text, "metadata": metadata})
