"""A batch of documents' rows written to the index in one replacement, each document checked
on its own and put back when it fails, then the collection checked as a whole."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.index.rows import IndexRow
from rag_assets.index.store import MilvusIndex
from rag_assets.quality.index import (
    check_collection_self_retrieval,
    check_row_count,
    check_self_retrieval,
    collection_sample,
)
from rag_assets.quality.outcome import CheckOutcome
from rag_assets.quality.rollback import CheckedReplace, replace_checked_many


@dataclass(frozen=True)
class DocumentRows:
    """A document's chunks and its index rows: a chunk repeating an earlier one makes no row."""

    chunks: list[ChunkRow]
    rows: list[IndexRow]


@dataclass(frozen=True)
class IndexedDocuments:
    collection: str
    checked: dict[str, CheckedReplace]  # by document, in the batch's order
    restored: dict[str, str]  # the documents whose previous rows are back, and why


def index_documents(
    index: MilvusIndex,
    documents: Mapping[str, DocumentRows],
    known: Sequence[str],
    *,
    model: str,
    dimension: int,
    sparse: bool,
) -> IndexedDocuments:
    """Write `documents`' rows into the collection of `model` in one replacement and check
    each document on its own: one row per distinct chunk, its chunks find themselves. A document
    failing them gets its previous rows back, alone. When any passed, the collection is checked
    as a whole: the written documents and a bounded sample of the other `known` ones must come
    back by their own vectors, none crowded out."""
    collection = index.ensure_collection(model, dimension, sparse)

    def document_checks(doc_id: str) -> dict[str, CheckOutcome]:
        chunks, rows = documents[doc_id].chunks, documents[doc_id].rows
        return {
            "index_rows_match_chunks": check_row_count(
                index.count_document(collection, doc_id), len(chunks), len(chunks) - len(rows)
            ),
            "chunks_find_themselves": check_self_retrieval(index, collection, doc_id, rows),
        }

    checked = replace_checked_many(
        index,
        collection,
        {doc_id: written.rows for doc_id, written in documents.items()},
        document_checks,
        after=lambda: {
            "collection_chunks_find_themselves": check_collection_self_retrieval(
                index, collection, collection_sample(documents, known)
            )
        },
    )
    restored = {
        doc_id: f"{_source(documents[doc_id].chunks, doc_id)}: {found.reason()}"
        for doc_id, found in checked.items()
        if found.restored
    }
    return IndexedDocuments(collection, checked, restored)


def _source(chunks: list[ChunkRow], doc_id: str) -> str:
    """The name the document goes by: its file, or its key when it has no chunks to tell it."""
    return chunks[0].source_path if chunks else doc_id
