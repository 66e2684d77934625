"""Shared test helpers: hand-built IR documents and elements, and the blocking chunk checks on
stored rows."""

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import (
    BBox,
    DocumentElement,
    StandardizedDocument,
    TableCell,
    TableData,
)
from rag_assets.contracts.tabular import to_arrow, to_records
from rag_assets.normalize.markdown import assemble_markdown
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.quality.chunks import (
    check_chunks_have_content,
    check_header_paths,
    check_ids_unique_and_deterministic,
    check_metadata_complete,
    check_pages_within_document,
)

Item = tuple[str, str, int | None, int]  # (type, text, level, page)
BODY_BOX: BBox = (72.0, 100.0, 520.0, 700.0)


def make_doc(
    items: list[Item], doc_id: str = "doc-1", source_path: str = "inbox/manual.pdf"
) -> StandardizedDocument:
    elements = [
        DocumentElement(type=kind, text=text, level=level, page_start=page, page_end=page)
        for kind, text, level, page in items
    ]
    return doc_from_elements(elements, doc_id, source_path)


def doc_from_pages(
    pages: list[list[tuple[str, str]]],
    title: str | None = None,
    doc_id: str = "doc",
    source_path: str = "doc.pdf",
) -> StandardizedDocument:
    """A paged IR from (type, text) elements per page; headings at level 2."""
    items = [
        (kind, text, 2 if kind == "heading" else None, number)
        for number, page in enumerate(pages, 1)
        for kind, text in page
    ]
    doc = make_doc(items, doc_id, source_path)
    return doc.model_copy(update={"title": title, "page_count": len(pages)})


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


def texts(rows: list[ChunkRow]) -> list[str]:
    return [row.text for row in rows]


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


def heading(text: str, level: int = 2, page: int = 1, bbox: BBox | None = None) -> DocumentElement:
    return DocumentElement(
        type="heading",
        text=f"{'#' * level} {text}",
        level=level,
        page_start=page,
        page_end=page,
        bbox=bbox,
    )


def para(text: str, page: int = 1, bbox: BBox | None = BODY_BOX) -> DocumentElement:
    return DocumentElement(type="paragraph", text=text, page_start=page, page_end=page, bbox=bbox)


def table(
    rows: list[list[str]],
    page: int,
    header_rows: int = 1,
    caption: str | None = None,
    bbox: BBox = (72.0, 400.0, 520.0, 780.0),
) -> DocumentElement:
    data = TableData(
        num_rows=len(rows),
        num_cols=len(rows[0]),
        cells=[
            TableCell(row=r, col=c, text=text, is_header=r < header_rows)
            for r, row in enumerate(rows)
            for c, text in enumerate(row)
        ],
        header_rows=header_rows,
        caption=caption,
    )
    return DocumentElement(
        type="table",
        text=table_to_markdown(data),
        page_start=page,
        page_end=page,
        bbox=bbox,
        table=data,
    )


def levels(elements: list[DocumentElement]) -> list[tuple[int | None, str]]:
    return [(e.level, e.text) for e in elements if e.type == "heading"]
