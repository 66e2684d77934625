"""table_markdown -> document_chunks: each table's chosen markdown, then Layer 3 templates."""

import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
from dagster import AssetCheckSeverity, AssetExecutionContext, Failure, MetadataValue

from rag_assets.chunking import check_chunks, chunk_document, require_chunks
from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.contracts.tabular import from_arrow, to_arrow, to_records
from rag_assets.defs.batch import CheckFound, DocumentStep, StepLog, per_document
from rag_assets.defs.checks import CHUNK_CHECKS, COVERAGE_CHECKS, specs
from rag_assets.defs.data_versions import arrow_version
from rag_assets.defs.metadata import chunk_preview, degraded_metadata, inert_markdown, seconds
from rag_assets.defs.partitions import document_asset
from rag_assets.defs.resources import (
    CollectionsResource,
    EmbeddingResource,
    LLMResource,
)
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.sources.raw import RawDocument
from rag_assets.tables.cache import VisionCache
from rag_assets.tables.models import TableMarkdown
from rag_assets.tables.structure import structure_markdown
from rag_assets.tables.vision import vision_markdown
from rag_assets.templates.choice_cache import ChoiceCache
from rag_assets.templates.registry import templates_version

TABLES_VERSION = "2"  # vision path


@document_asset(
    io_manager_key="parquet_io_manager",
    group_name="chunks",
    code_version=TABLES_VERSION,
    deps=["vision_settings"],
    pool="llm",
    kinds={"parquet"},
    description="One row per table: its markdown (vision model or parser structure), how and why.",
)
def table_markdown(
    context: AssetExecutionContext,
    llm: LLMResource,
    raw_documents,  # one document's, or a batch's {partition key: ...}
    normalized_documents,
):
    yield from per_document(
        context,
        lambda _, own, log: _tables(log, llm, **own),
        raw_documents=raw_documents,
        normalized_documents=normalized_documents,
    )


def _tables(
    log: StepLog,
    llm: LLMResource,
    raw_documents: RawDocument,
    normalized_documents: StandardizedDocument,
) -> DocumentStep:
    doc = normalized_documents
    started = time.perf_counter()
    outcome = vision_markdown(
        doc,
        Path(raw_documents.stored_path) if raw_documents.file_format == "pdf" else None,
        structure_markdown(doc),
        llm.vision_client(),
        VisionCache(Path(llm.cache_dir) / "vision"),
        dpi=llm.vision_dpi,
        include_picture_tables=llm.include_picture_tables,
    )
    rows = outcome.tables
    log.info(
        f"{len(rows)} tables, {outcome.status}: {outcome.calls} calls, {outcome.cache_hits} cache hits"
    )
    for reason, count in outcome.fallbacks.items():
        if reason != "off":
            log.warning(f"{count} tables fell back to the parser's structure: {reason}")
    for note in outcome.degraded:
        log.warning(f"{doc.source_path}: {note}")
    table = to_arrow(rows, TableMarkdown)
    return DocumentStep(
        table,
        data_version=arrow_version(table),
        metadata={
            **degraded_metadata(outcome.degraded),
            "tables": len(rows),
            "vision": outcome.status,
            "methods": MetadataValue.json(dict(Counter(r.method for r in rows))),
            "llm_calls": outcome.calls,
            "cache_hits": outcome.cache_hits,
            "prompt_tokens": outcome.prompt_tokens,
            "completion_tokens": outcome.completion_tokens,
            "fallbacks": MetadataValue.json(outcome.fallbacks),
            "table_seconds": seconds(time.perf_counter() - started),
            "preview": inert_markdown(rows[0].markdown[:1500] if rows else "_no tables_"),
        },
    )


@document_asset(
    io_manager_key="parquet_io_manager",
    group_name="chunks",
    code_version=templates_version(),
    deps=["template_settings"],
    pool="llm",
    kinds={"parquet"},
    check_specs=[
        *specs("document_chunks", CHUNK_CHECKS, blocking=True),
        *specs("document_chunks", COVERAGE_CHECKS, blocking=False),
    ],
    description="Layer 3: template chunks with full provenance, tables in their chosen markdown.",
)
def document_chunks(
    context: AssetExecutionContext,
    collections: CollectionsResource,
    embedding: EmbeddingResource,
    llm: LLMResource,
    normalized_documents,  # one document's, or a batch's {partition key: ...}
    table_markdown,
):
    yield from per_document(
        context,
        lambda _, own, log: _chunk(log, collections, embedding, llm, **own),
        normalized_documents=normalized_documents,
        table_markdown=table_markdown,
    )


def _chunk(
    log: StepLog,
    collections: CollectionsResource,
    embedding: EmbeddingResource,
    llm: LLMResource,
    normalized_documents: StandardizedDocument,
    table_markdown: pa.Table,
) -> DocumentStep:
    started = time.perf_counter()
    plan = collections.plan(normalized_documents.source_path)
    client = llm.client()
    calls_before = client.usage.calls if client else 0
    counter = embedding.token_counter()
    try:
        chunked = chunk_document(
            normalized_documents,
            plan.template,
            plan.options,
            counter,
            tables=from_arrow(table_markdown, TableMarkdown),
            llm=client,
            choice_cache=ChoiceCache(Path(llm.cache_dir) / "templates"),
        )
    except ConfigurationError as error:
        raise Failure(
            description=f"{normalized_documents.source_path}: {error}", allow_retries=False
        ) from error
    doc, template, choice, chunks = chunked.doc, chunked.template, chunked.choice, chunked.rows
    reason = plan.picked or choice.reason
    log.info(f"{doc.source_path}: template {choice.template} ({reason})")
    try:
        require_chunks(chunked)
    except DocumentError as error:
        raise Failure(description=str(error), allow_retries=False) from error
    table = to_arrow(chunks, ChunkRow)
    records = to_records(table, ChunkRow)
    tokens = [c.token_count for c in chunks]
    structure = chunked.structure
    degraded = chunked.degraded
    for note in degraded:
        log.warning(f"{doc.source_path}: {note}")
    return DocumentStep(
        table,
        data_version=arrow_version(table),
        metadata={
            **degraded_metadata(degraded),
            "template": f"{template.name} v{template.version}",
            "template_reason": reason,
            # The LLM's guess was read from <data dir>/cache/templates: no call was made for it.
            "template_choice_cached": choice.cached,
            "llm_calls": (client.usage.calls - calls_before) if client else 0,
            "collection": plan.collection or "(settings)",
            "template_options": MetadataValue.json(template.options.model_dump()),
            "chunks": len(chunks),
            "chunk_types": MetadataValue.json(dict(Counter(c.chunk_type for c in chunks))),
            "tokens_max": max(tokens, default=0),
            "tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else 0.0,
            "token_counter": counter.name,
            "preview": chunk_preview(records),
            "chunk_seconds": seconds(time.perf_counter() - started),
            **(
                {"document_structure": MetadataValue.json(structure.model_dump(mode="json"))}
                if structure
                else {}
            ),
        },
        checks=[
            CheckFound(
                check.name,
                check.outcome,
                AssetCheckSeverity.ERROR if check.blocking else AssetCheckSeverity.WARN,
            )
            for check in check_chunks(records, chunked, collections.chunking.chunk_coverage_floor)
        ],
    )
