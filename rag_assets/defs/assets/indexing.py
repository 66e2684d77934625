"""chunk_embeddings -> vector_index: vectors for every chunk, then the document's rows in Milvus."""

import time

import pyarrow as pa
from dagster import (
    AssetCheckEvaluation,
    AssetExecutionContext,
    AssetKey,
    BackfillPolicy,
    Failure,
    MetadataValue,
    Output,
    asset,
)

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.tabular import from_arrow, to_arrow
from rag_assets.defs.checks import EMBEDDING_CHECKS, INDEX_CHECKS, result, specs
from rag_assets.defs.metadata import seconds
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import EmbeddingResource, MilvusResource
from rag_assets.embedding.rows import EmbeddingRow, dense_matrix, embed_rows
from rag_assets.index.rows import IndexReport, index_rows
from rag_assets.quality.embeddings import check_embeddings
from rag_assets.quality.index import (
    check_collection_self_retrieval,
    check_row_count,
    check_self_retrieval,
)
from rag_assets.quality.outcome import CheckOutcome
from rag_assets.quality.rollback import replace_checked
from rag_assets.redaction import redact_url
from rag_assets.sources.keys import InvalidPartitionKey, check_partition_key

EMBEDDING_VERSION = "2"  # 2: context_text is embedded
INDEX_VERSION = "2"  # 2: schema version 2 (context_text BM25, language, FLAT)

# A backfill hands the model-heavy step up to this many documents per run: the model loads once
# and their chunks are encoded together. Upstream steps keep one document per run, so a broken
# document fails there alone and never enters the batch.
EMBEDDING_BACKFILL = BackfillPolicy.multi_run(max_partitions_per_run=100)


@asset(
    partitions_def=documents_partitions,
    io_manager_key="parquet_io_manager",
    group_name="index",
    code_version=EMBEDDING_VERSION,
    deps=["embedding_settings"],
    kinds={"parquet", "pytorch"},
    check_specs=specs("chunk_embeddings", EMBEDDING_CHECKS, blocking=True),
    backfill_policy=EMBEDDING_BACKFILL,
    description="Dense vectors (and sparse weights when the model has them) for every chunk.",
)
def chunk_embeddings(
    context: AssetExecutionContext,
    embedding: EmbeddingResource,
    document_chunks,  # a pa.Table, or a backfill range's {partition key: pa.Table}
):
    ranged = isinstance(document_chunks, dict)
    tables = document_chunks if ranged else {context.partition_key: document_chunks}
    chunks = {key: from_arrow(table, ChunkRow) for key, table in tables.items()}
    every = [c for key in chunks for c in chunks[key]]
    started = time.perf_counter()
    embedder, fallback_reason = embedding.load()
    loaded = time.perf_counter()
    rows = embed_rows(embedder, every, context.log.info)
    encoded = time.perf_counter()
    by_key, start = {}, 0
    for key, doc_chunks in chunks.items():
        by_key[key] = rows[start : start + len(doc_chunks)]
        start += len(doc_chunks)
    context.log.info(
        f"embedding model {embedder.name} ({embedder.resolved.source}): {embedder.resolved.notes}"
    )
    if fallback_reason:
        context.log.warning(fallback_reason)
    if embedder.runtime_fallback:
        context.log.warning(f"embedding runtime: {embedder.runtime_fallback}")
    outputs = {key: to_arrow(doc_rows, EmbeddingRow) for key, doc_rows in by_key.items()}
    yield Output(
        outputs if ranged else outputs[context.partition_key],
        metadata={
            "documents_in_batch": len(chunks),
            "model": embedder.name,
            "model_source": embedder.resolved.source,
            "dimension": embedder.dimension,
            "sparse": embedder.has_sparse,
            "vectors": len(rows),
            "model_notes": MetadataValue.json(embedder.resolved.notes),
            "model_fallback": fallback_reason or "none",
            "runtime": embedder.runtime,
            "runtime_fallback": embedder.runtime_fallback or "none",
            "load_seconds": seconds(loaded - started),
            "encode_seconds": seconds(encoded - loaded),
        },
    )
    found = {
        key: check_embeddings(
            [c.chunk_id for c in chunks[key]],
            [r.chunk_id for r in doc_rows],
            dense_matrix(doc_rows, embedder.dimension),
            embedder.dimension,
        )
        for key, doc_rows in by_key.items()
    }
    if not ranged:
        yield result("embeddings_valid", found[context.partition_key])
        return
    for key, outcome in found.items():
        # Each document's own result, so its check history stays per partition.
        yield AssetCheckEvaluation(
            asset_key=AssetKey("chunk_embeddings"),
            check_name="embeddings_valid",
            passed=outcome.passed,
            metadata=outcome.metadata,
            description=outcome.description,
            blocking=True,
            partition=key,
        )
    # The step's own result for the check (the range as a whole), which Dagster requires.
    failed = sorted(key for key, outcome in found.items() if not outcome.passed)
    yield result(
        "embeddings_valid",
        CheckOutcome(
            not failed,
            f"{len(found) - len(failed)} of {len(found)} documents valid"
            + (f"; failed: {', '.join(failed)}" if failed else ""),
        ),
    )


@asset(
    partitions_def=documents_partitions,
    io_manager_key="json_io_manager",
    group_name="index",
    code_version=INDEX_VERSION,
    deps=["index_settings"],
    kinds={"milvus"},
    pool="milvus",
    check_specs=specs("vector_index", INDEX_CHECKS, blocking=False),
    description="The document's rows in Milvus (dense + BM25 text + metadata), replaced as a whole.",
)
def vector_index(
    context: AssetExecutionContext,
    embedding: EmbeddingResource,
    milvus: MilvusResource,
    document_chunks: pa.Table,
    chunk_embeddings: pa.Table,
):
    try:
        key = check_partition_key(context.partition_key)
    except InvalidPartitionKey as error:
        raise Failure(description=str(error), allow_retries=False) from error
    chunks = from_arrow(document_chunks, ChunkRow)
    vectors = from_arrow(chunk_embeddings, EmbeddingRow)
    embedder, _ = embedding.load()
    started = time.perf_counter()
    rows = index_rows(chunks, vectors)
    with milvus.open() as index:
        collection = index.ensure_collection(embedder.name, embedder.dimension, embedder.has_sparse)
        checked = replace_checked(
            index,
            collection,
            key,
            rows,
            lambda: {
                "index_rows_match_chunks": check_row_count(
                    index.count_document(collection, key), len(chunks), len(chunks) - len(rows)
                ),
                "chunks_find_themselves": check_self_retrieval(index, collection, key, rows),
            },
            # After the write, across every document: this one must not have crowded others out.
            after=lambda: {
                "collection_chunks_find_themselves": check_collection_self_retrieval(
                    index, collection
                )
            },
        )
        count = index.count_document(collection, key)
    if checked.restored:
        source = chunks[0].source_path if chunks else key
        raise Failure(description=f"{source}: {checked.reason()}", allow_retries=False)
    replaced = checked.replaced
    report = IndexReport(
        doc_id=key,
        collection=collection,
        uri=redact_url(milvus.uri),
        model=embedder.name,
        dimension=embedder.dimension,
        rows=count,
        upserted=replaced.upserted,
        deleted_stale=replaced.deleted,
    )
    yield Output(
        report,
        metadata={
            "collection": collection,
            "milvus_uri": redact_url(milvus.uri),
            "rows": count,
            "deleted_stale": replaced.deleted,
            "index_seconds": seconds(time.perf_counter() - started),
        },
    )
    for name, found in checked.checks.items():
        yield result(name, found)
