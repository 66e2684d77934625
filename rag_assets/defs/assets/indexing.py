"""chunk_embeddings -> vector_index: vectors for every chunk, then the document's rows in Milvus."""

import time

import pyarrow as pa
from dagster import AssetExecutionContext, Failure, MetadataValue

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.tabular import from_arrow, to_arrow
from rag_assets.defs.batch import (
    CheckFound,
    DocumentStep,
    documents,
    each_document,
    emit,
    fail_documents,
    split_inputs,
)
from rag_assets.defs.checks import EMBEDDING_CHECKS, INDEX_CHECKS, specs
from rag_assets.defs.metadata import seconds
from rag_assets.defs.partitions import document_asset, documents_partitions
from rag_assets.defs.resources import EmbeddingResource, MilvusResource
from rag_assets.embedding.batch import embed_documents
from rag_assets.embedding.models import Embedder
from rag_assets.embedding.reuse import Reuse, VectorStore
from rag_assets.embedding.rows import EmbeddingRow, dense_matrix
from rag_assets.index.rows import IndexReport, index_rows
from rag_assets.quality.embeddings import check_embeddings
from rag_assets.quality.indexing import DocumentRows, index_documents
from rag_assets.redaction import redact_url
from rag_assets.sources.keys import InvalidPartitionKey, check_partition_key

EMBEDDING_VERSION = "2"  # 2: context_text is embedded
INDEX_VERSION = "2"  # 2: schema version 2 (context_text BM25, language, FLAT)


@document_asset(
    io_manager_key="parquet_io_manager",
    group_name="index",
    code_version=EMBEDDING_VERSION,
    deps=["embedding_settings"],
    kinds={"parquet", "pytorch"},
    check_specs=specs("chunk_embeddings", EMBEDDING_CHECKS, blocking=True),
    description="Dense vectors (and sparse weights when the model has them) for every chunk.",
)
def chunk_embeddings(
    context: AssetExecutionContext,
    embedding: EmbeddingResource,
    document_chunks,  # a pa.Table, or a batch's {partition key: pa.Table}
):
    keys = documents(context)
    tables = split_inputs(keys, {"document_chunks": document_chunks})
    chunks = {key: from_arrow(own["document_chunks"], ChunkRow) for key, own in tables.items()}
    started = time.perf_counter()
    embedder, fallback_reason = embedding.load()
    load_seconds = time.perf_counter() - started
    store = embedding.store(embedder)
    batch = embed_documents(embedder, chunks, context.log.info, store, embedding.embedded_part())
    shared = {
        "documents_in_batch": len(chunks),
        **embedder_metadata(context, embedder, fallback_reason),
        "load_seconds": seconds(load_seconds),
        "encode_seconds": seconds(batch.encode_seconds),
        **reuse_metadata(context, batch.reuse, store),
    }
    made = {}
    for key, vectors in batch.documents.items():
        found = check_embeddings(
            [c.chunk_id for c in chunks[key]],
            [r.chunk_id for r in vectors.rows],
            dense_matrix(vectors.rows, embedder.dimension),
            embedder.dimension,
        )
        tokens = vectors.tokens.metadata() if vectors.tokens else {}
        made[key] = DocumentStep(
            to_arrow(vectors.rows, EmbeddingRow),
            metadata={**shared, "vectors": len(vectors.rows), **tokens},
            checks=[CheckFound("embeddings_valid", found)],
        )
    yield from emit(context, made)


def embedder_metadata(context: AssetExecutionContext, embedder: Embedder, fallback: str | None):
    """The model and runtime that ran, logged, and warned of when they are not the configured."""
    context.log.info(
        f"embedding model {embedder.name} ({embedder.resolved.source}): {embedder.resolved.notes}"
    )
    if fallback:
        context.log.warning(fallback)
    if embedder.runtime_fallback:
        context.log.warning(f"embedding runtime: {embedder.runtime_fallback}")
    return {
        "model": embedder.name,
        "model_source": embedder.resolved.source,
        "dimension": embedder.dimension,
        "sparse": embedder.has_sparse,
        "model_notes": MetadataValue.json(embedder.resolved.notes),
        "model_fallback": fallback or "none",
        "runtime": embedder.runtime,
        "runtime_fallback": embedder.runtime_fallback or "none",
    }


def reuse_metadata(
    context: AssetExecutionContext, reuse: Reuse, store: VectorStore | None
) -> dict[str, int | str]:
    """The batch's texts the model ran, and those it did not: identical to another of the
    batch, or stored by an earlier run; and whether the store was read and written."""
    if reuse.store_error:
        context.log.warning(f"stored vectors not used: {reuse.store_error}")
    return {
        "texts_embedded": reuse.embedded,
        "texts_repeated": reuse.repeated,
        "texts_from_store": reuse.stored,
        "vector_store": "off" if store is None else reuse.store_error or "ok",
    }


@document_asset(
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
    document_chunks,  # one document's, or a batch's {partition key: ...}
    chunk_embeddings,
):
    embedder, _ = embedding.load()
    started = time.perf_counter()
    prepared = each_document(
        context,
        lambda key, own, _: _rows(key, **own),
        document_chunks=document_chunks,
        chunk_embeddings=chunk_embeddings,
    )
    # One connection, one write, one flush and one collection-wide check for the batch.
    with milvus.open() as index:
        indexed = index_documents(
            index,
            prepared,
            context.instance.get_dynamic_partitions(documents_partitions.name),
            model=embedder.name,
            dimension=embedder.dimension,
            sparse=embedder.has_sparse,
        )
        # A collection made before the stemmed copy serves English questions unstemmed.
        english_copy = index.has_english_field(indexed.collection)
    fail_documents(list(prepared), indexed.restored)
    elapsed = seconds((time.perf_counter() - started) / len(prepared))
    made = {
        key: DocumentStep(
            IndexReport(
                doc_id=key,
                collection=indexed.collection,
                uri=redact_url(milvus.uri),
                model=embedder.name,
                dimension=embedder.dimension,
                rows=found.replaced.row_count,
                upserted=found.replaced.upserted,
                deleted_stale=found.replaced.deleted,
            ),
            metadata={
                "collection": indexed.collection,
                "milvus_uri": redact_url(milvus.uri),
                "rows": found.replaced.row_count,
                "deleted_stale": found.replaced.deleted,
                "english_bm25_copy": english_copy,
                "index_seconds": elapsed,
            },
            checks=[CheckFound(name, outcome) for name, outcome in found.checks.items()],
        )
        for key, found in indexed.checked.items()
    }
    yield from emit(context, made)


def _rows(key: str, document_chunks: pa.Table, chunk_embeddings: pa.Table) -> DocumentRows:
    """A document's chunks and the index rows made of them and their vectors."""
    try:
        key = check_partition_key(key)
    except InvalidPartitionKey as error:
        raise Failure(description=str(error), allow_retries=False) from error
    chunks = from_arrow(document_chunks, ChunkRow)
    return DocumentRows(chunks, index_rows(chunks, from_arrow(chunk_embeddings, EmbeddingRow)))
