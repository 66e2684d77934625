"""raw_documents -> parsed_documents -> normalized_documents: landing, Layer 1 and Layer 2."""

import time
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MetadataValue

from rag_assets.defs.batch import DocumentStep, StepLog, per_document
from rag_assets.defs.data_versions import content_version
from rag_assets.defs.metadata import degraded_metadata, inert_markdown, profile_metadata, seconds
from rag_assets.defs.partitions import document_asset
from rag_assets.defs.resources import (
    CollectionsResource,
    InboxResource,
    LLMResource,
    ParserResource,
)
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.normalize.adapt import normalize_document
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.worker_time import timing_parse_workers
from rag_assets.profile.llm import ProfileCache
from rag_assets.sources.inbox import InboxFile, inbox_by_key
from rag_assets.sources.keys import InvalidPartitionKey, check_partition_key, how_to_add_documents
from rag_assets.sources.raw import RawDocument, capture_raw_document
from rag_assets.text.progress import PAGES_PARSED, progress_line

SOURCES_VERSION = "1"
# Parsers: a web page's chrome (menus, banners, hidden parts) is dropped; admonitions are quoted;
# a PDF's Info dictionary (title, author, subject, keywords) is kept; what a parse did not read
# (losses) is told apart from how it read the file (notes); a PDF table keeps its partial rules
# with the heads above them, and the words its finder cut at a row's edge are read whole;
# 8: a head the finder cut at column edges is kept whole with the columns it crosses.
PARSE_VERSION = "8"
# IR: a table merged across pages, or a list, says where each page starts; soft hyphens joined;
# a chapter number and its title stay two headings, running lines of text without layout stay;
# headings whose level the source states are never rewritten; a failed repair is skipped.
# 12: a cover's headings stand beside a first division (Item 1); 13: PDF tables' stacked rows,
# values cut at column boundaries, heading rows, heads over several columns and labels wrapped
# over two rows read back; 14: heads cut at column edges whole over their columns.
NORMALIZE_VERSION = "14"


def _document_failure(log: StepLog, error: Exception) -> Failure:
    log.error(str(error))
    return Failure(
        description=str(error), metadata={"error": type(error).__name__}, allow_retries=False
    )


@document_asset(
    io_manager_key="json_io_manager",
    group_name="documents",
    code_version=SOURCES_VERSION,
    deps=["inbox_files"],
    kinds={"file"},
    description="The file as it landed in the inbox: a fixed copy, its hash, size, type and page count.",
)
def raw_documents(context: AssetExecutionContext, inbox: InboxResource):
    # The inbox is read once for the step: a batch's documents are looked up in one listing.
    files = inbox_by_key(inbox.inbox, inbox.follow_symlinks)
    yield from per_document(context, lambda key, _, log: _land(log, inbox, key, files))


def _land(
    log: StepLog, inbox: InboxResource, key: str, files: dict[str, InboxFile]
) -> DocumentStep:
    inbox_named = f"the inbox ({inbox.inbox})"
    try:
        key = check_partition_key(key, inbox_named)
    except InvalidPartitionKey as error:
        raise _document_failure(log, error) from error
    found = files.get(key)
    if found is None:
        raise Failure(
            f"partition {key}: no file in the inbox has this key (removed or renamed since?); "
            f"{how_to_add_documents(inbox_named)}",
            allow_retries=False,
        )
    try:
        record = capture_raw_document(
            found.path, found.relative_path, key, inbox.raw, inbox.max_file_mb, inbox.limits
        )
    except DocumentError as error:
        raise _document_failure(log, error) from error
    return DocumentStep(
        record,
        data_version=content_version(record.model_dump_json()),
        metadata={
            "source_path": record.source_path,
            "sha256": record.sha256,
            "size_bytes": record.size_bytes,
            "file_format": record.file_format,
            "page_count": record.page_count or 0,
        },
    )


@document_asset(
    io_manager_key="json_io_manager",
    group_name="documents",
    code_version=PARSE_VERSION,
    deps=["parser_settings"],
    kinds={"python"},
    description="Layer 1: the chosen parser's own output, untouched (DoclingDocument or PyMuPDF JSON).",
)
def parsed_documents(
    context: AssetExecutionContext,
    parser: ParserResource,
    collections: CollectionsResource,
    raw_documents,  # a RawDocument, or a batch's {partition key: RawDocument}
):
    yield from per_document(
        context,
        lambda _, own, log: _parse(log, parser, collections, **own),
        raw_documents=raw_documents,
    )


def _parse(
    log: StepLog,
    parser: ParserResource,
    collections: CollectionsResource,
    raw_documents: RawDocument,
) -> DocumentStep:
    started = time.perf_counter()
    plan = collections.plan(raw_documents.source_path)
    total = raw_documents.page_count
    # A long PDF parses for minutes: say what is under way and how big it is before it starts.
    log.info(
        f"{raw_documents.source_path}: parsing"
        + (f" {total} pages" if total else f" {raw_documents.file_format}")
    )
    try:
        with timing_parse_workers() as workers:
            parsed, choice = parser.router(plan.parser).parse(
                Path(raw_documents.stored_path), raw_documents.file_format
            )
    except (DocumentError, ConfigurationError) as error:
        # Parsers name the fixed copy under raw/; a person knows the file by its inbox path.
        shown = str(error).replace(raw_documents.stored_path, raw_documents.source_path)
        raise _document_failure(log, type(error)(shown)) from None
    log.info(f"{raw_documents.source_path}: parser {choice.parser} ({choice.reason})")
    if total:
        pages = progress_line(PAGES_PARSED, parsed.page_count or 0, total)
        log.info(f"{raw_documents.source_path}: {pages}")
    # A missing optional model is the machine's, said at INFO (and once per process by the
    # router), as is how the file was read; what went wrong with this file is a warning.
    for note in choice.fallbacks:
        say = log.info if choice.from_setup else log.warning
        say(f"{raw_documents.source_path}: {note}")
    for note in parsed.notes:
        log.info(f"{raw_documents.source_path}: {note}")
    for loss in parsed.losses:
        log.warning(f"{raw_documents.source_path}: degraded: {loss}")
    return DocumentStep(
        parsed,
        data_version=content_version(parsed.model_dump_json()),
        metadata={
            "parser": choice.parser,
            "parser_version": parsed.parser_version,
            "parser_reason": choice.reason,
            "collection": plan.collection or "(settings)",
            "fallbacks": MetadataValue.json(choice.fallbacks),
            "notes": MetadataValue.json(parsed.notes),
            **degraded_metadata(parsed.losses),
            "page_count": parsed.page_count or 0,
            **_ocr_metadata(parsed),
            "parse_seconds": seconds(time.perf_counter() - started),
            **workers.metadata(),
        },
    )


def _ocr_metadata(parsed: ParsedDocument) -> dict:
    """How many pages OCR read and why, as the PyMuPDF parser records it."""
    ocr = parsed.native.get("ocr")
    if ocr is None:
        return {}
    return {"ocr_pages": len(ocr["ran_on"]), "ocr": MetadataValue.json(ocr)}


@document_asset(
    io_manager_key="json_io_manager",
    group_name="documents",
    code_version=NORMALIZE_VERSION,
    deps=["normalize_settings"],
    kinds={"python"},
    description="Layer 2: the standardized IR (elements in reading order + whole-document markdown).",
)
def normalized_documents(
    context: AssetExecutionContext,
    inbox: InboxResource,
    parser: ParserResource,
    llm: LLMResource,
    raw_documents,  # one document's, or a batch's {partition key: ...}
    parsed_documents,
):
    yield from per_document(
        context,
        lambda _, own, log: _normalize(log, inbox, parser, llm, **own),
        raw_documents=raw_documents,
        parsed_documents=parsed_documents,
    )


def _normalize(
    log: StepLog,
    inbox: InboxResource,
    parser: ParserResource,
    llm: LLMResource,
    raw_documents: RawDocument,
    parsed_documents: ParsedDocument,
) -> DocumentStep:
    started = time.perf_counter()
    client = llm.client()
    try:
        normalized = normalize_document(
            raw_documents,
            parsed_documents,
            limits=inbox.limits,
            skip=parser.repairs_off,
            llm=client,
            profile_cache=ProfileCache(Path(llm.cache_dir) / "profiles"),
        )
    except DocumentError as error:
        shown = str(error).replace(raw_documents.stored_path, raw_documents.source_path)
        raise _document_failure(log, DocumentError(shown)) from error
    doc, counts = normalized.doc, normalized.element_types
    if client is not None:
        log.info(f"{raw_documents.source_path}: profile from {normalized.profile_by}")
    degraded = doc.metadata.get("degraded", [])
    for note in degraded:
        log.warning(f"{raw_documents.source_path}: {note}")
    return DocumentStep(
        doc,
        metadata={
            **degraded_metadata(degraded),
            "repairs_failed": MetadataValue.json(doc.metadata.get("repairs_failed", {})),
            "parser": doc.parser,
            "title": doc.title or "",
            **profile_metadata(doc.metadata.get("profile")),
            "profile_by": normalized.profile_by,
            "page_count": doc.page_count or 0,
            "elements": len(doc.elements),
            "element_types": MetadataValue.json(counts),
            "headings": counts.get("heading", 0) + counts.get("title", 0),
            "tables": counts.get("table", 0),
            "repairs": MetadataValue.json(doc.metadata.get("repairs", {})),
            "repairs_off": MetadataValue.json(parser.repairs_off),
            "markdown_preview": inert_markdown(doc.markdown[:1500]),
            "normalize_seconds": seconds(time.perf_counter() - started),
        },
    )
