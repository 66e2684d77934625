"""Shared test helpers: hand-built IR documents and the blocking chunk checks on stored rows."""

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.contracts.tabular import to_arrow, to_records
from rag_assets.normalize.markdown import assemble_markdown
from rag_assets.quality.chunks import (
    check_chunks_have_content,
    check_header_paths,
    check_ids_unique_and_deterministic,
    check_metadata_complete,
    check_pages_within_document,
)

Item = tuple[str, str, int | None, int]  # (type, text, level, page)


def make_doc(
    items: list[Item], doc_id: str = "doc-1", source_path: str = "inbox/manual.pdf"
) -> StandardizedDocument:
    elements = [
        DocumentElement(type=kind, text=text, level=level, page_start=page, page_end=page)
        for kind, text, level, page in items
    ]
    return doc_from_elements(elements, doc_id, source_path)


def doc_from_elements(
    elements: list[DocumentElement], doc_id: str = "d", source_path: str = "d.pdf"
) -> StandardizedDocument:
    """A PDF's IR from elements as an adapter would leave them, markdown assembled."""
    markdown, placed = assemble_markdown(elements)
    return StandardizedDocument(
        doc_id=doc_id,
        source_path=source_path,
        source_sha256="ab" * 32,
        parser="test",
        parser_version="0",
        page_count=max((e.page_end for e in elements), default=None),
        markdown=markdown,
        elements=placed,
    )


def assert_blocking_checks_pass(
    rows: list[ChunkRow], doc: StandardizedDocument, headings_from_text: bool = False
) -> None:
    """The blocking checks of document_chunks, on the rows as stored (Parquet round trip)."""
    records = to_records(to_arrow(rows, ChunkRow), ChunkRow)
    outcomes = [
        check_metadata_complete(records, doc.doc_id),
        check_ids_unique_and_deterministic(records),
        check_header_paths(records, doc, headings_from_text=headings_from_text),
        check_pages_within_document(records, doc.page_count),
        check_chunks_have_content(records, doc, headings_from_text=headings_from_text),
    ]
    assert [o.description for o in outcomes if not o.passed] == []


LAYERS_1_2 = ("raw_documents", "parsed_documents", "normalized_documents")


def materialize_file(source, data_dir, assets=LAYERS_1_2):
    """One file placed in a fresh data folder's inbox and its partition of `assets`
    materialized in process through the ingest job, on an ephemeral instance; the result and
    the file's inbox path."""
    from dagster import AssetKey, DagsterInstance

    from rag_assets.defs.build import build_defs
    from rag_assets.defs.jobs import INGEST_JOB
    from rag_assets.defs.partitions import documents_partitions
    from rag_assets.runner.ingest import place_in_inbox
    from rag_assets.settings import Settings
    from rag_assets.sources.keys import partition_key_for

    settings = Settings(data_dir=data_dir)
    (relative,), _ = place_in_inbox([source], settings.inbox_dir, settings.inbox_follow_symlinks)
    key = partition_key_for(relative)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(documents_partitions.name, [key])
    job = build_defs(settings).resolve_job_def(INGEST_JOB)
    result = job.execute_in_process(
        partition_key=key, asset_selection=[AssetKey(a) for a in assets], instance=instance
    )
    return result, relative
