"""The IR document built from elements in reading order: what every adapter ends with."""

from __future__ import annotations

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.normalize.markdown import assemble_markdown
from rag_assets.parsers.base import ParsedDocument


def document_of(
    elements: list[DocumentElement],
    *,
    doc_id: str,
    source_path: str,
    source_sha256: str,
    parser: str,
    parser_version: str,
    page_count: int | None = None,
    language: str | None = None,
    title: str | None = None,
    metadata: dict | None = None,
) -> StandardizedDocument:
    """`elements` as a document: their markdown joined, each element's offsets in it set."""
    markdown, placed = assemble_markdown(elements)
    return StandardizedDocument(
        doc_id=doc_id,
        source_path=source_path,
        source_sha256=source_sha256,
        parser=parser,
        parser_version=parser_version,
        page_count=page_count,
        language=language,
        title=title,
        markdown=markdown,
        elements=placed,
        metadata=metadata or {},
    )


def adapted_document(
    parsed: ParsedDocument,
    elements: list[DocumentElement],
    *,
    doc_id: str,
    source_sha256: str,
    page_count: int | None = None,
    title: str | None = None,
    metadata: dict | None = None,
) -> StandardizedDocument:
    """An adapter's document of `elements`, read from `parsed` (its file and parser)."""
    return document_of(
        elements,
        doc_id=doc_id,
        source_path=parsed.source_path,
        source_sha256=source_sha256,
        parser=parsed.parser,
        parser_version=parsed.parser_version,
        page_count=page_count,
        title=title,
        metadata=metadata,
    )
