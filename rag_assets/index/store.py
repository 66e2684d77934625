"""The vector index: one Milvus collection per embedding model, documents replaced as a whole.

The uri is a Milvus Lite file (`<data_dir>/milvus.db`, `rag_assets.index.lite`) or a server
address (`http://host:19530`); the code paths are the same. The collection's fields and indexes
are in `rag_assets.index.schema`. pymilvus is imported inside functions because it costs most of
a second to import.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rag_assets.errors import ConfigurationError
from rag_assets.index.filters import chunk_id_in, document_is, documents_in, within
from rag_assets.index.lite import lite_path, open_lite, release_lite
from rag_assets.index.rows import (
    IndexRow,
    RankedId,
    ReplaceResult,
    SearchHit,
    stored_fields,
    unit_vector,
)
from rag_assets.index.schema import (
    BM25_B_RANGE,
    BM25_K1_RANGE,
    DEFAULT_ANALYZER,
    DEFAULT_BM25_B,
    DEFAULT_BM25_K1,
    DEFAULT_ENGLISH_ANALYZER,
    EMPTY_SPARSE_PLACEHOLDER,
    ENGLISH_BM25_FIELD,
    ENGLISH_TEXT_FIELD,
    NO_PAGE,
    RETRIEVERS,
    SCALAR_FIELDS,
    analyzer_params,
    check_made_for,
    checked_schema,
    create_collection,
    english_analyzer_params,
    in_range,
    schema_properties,
)
from rag_assets.language import detect_language
from rag_assets.redaction import redact_url

UPSERT_BATCH = 500
MAX_NAME_LENGTH = 255
SPARSE_FIELD = "sparse_learned"
log = logging.getLogger(__name__)


class MilvusIndex:
    def __init__(
        self,
        uri: str,
        token: str | None = None,
        collection_prefix: str = "rag_chunks",
        text_analyzer: str | dict = DEFAULT_ANALYZER,
        bm25_k1: float = DEFAULT_BM25_K1,
        bm25_b: float = DEFAULT_BM25_B,
        english_analyzer: str | dict = DEFAULT_ENGLISH_ANALYZER,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", collection_prefix):
            raise ConfigurationError(
                f"collection_prefix {collection_prefix!r} must be letters, digits and underscores"
            )
        self.uri = uri
        self.collection_prefix = collection_prefix
        self.text_analyzer = analyzer_params(text_analyzer)
        self.english_analyzer = english_analyzer_params(english_analyzer)
        self.bm25_k1 = in_range("bm25_k1", bm25_k1, BM25_K1_RANGE)
        self.bm25_b = in_range("bm25_b", bm25_b, BM25_B_RANGE)
        self._lite_path = lite_path(uri)
        self._loaded: dict[str, frozenset[str]] = {}  # collection -> its optional fields
        if self._lite_path is None:
            # pymilvus takes over a second to load: only when an index is opened.
            from pymilvus import MilvusClient

            self._client = MilvusClient(uri=uri, token=token or "")
        else:
            self._client = open_lite(self._lite_path)

    def close(self) -> None:
        """Release the connection and, for Milvus Lite, the file once no one here uses it."""
        if self._client is None:
            return
        self._client.close()
        self._client = None
        if self._lite_path is not None:
            release_lite(self._lite_path)

    def __enter__(self) -> MilvusIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def collection_name(self, model_name: str, dim: int) -> str:
        slug = re.sub(r"[^a-z0-9]+", "_", model_name.lower()).strip("_") or "model"
        name = f"{self.collection_prefix}__{slug}__{dim}"
        if len(name) <= MAX_NAME_LENGTH:
            return name
        digest = hashlib.sha256(model_name.encode()).hexdigest()[:8]
        room = MAX_NAME_LENGTH - len(f"{self.collection_prefix}____{dim}") - len(digest) - 1
        return f"{self.collection_prefix}__{slug[:room]}_{digest}__{dim}"

    def list_collections(self) -> list[str]:
        """This index's collections (those under its prefix)."""
        return sorted(
            name
            for name in self._client.list_collections()
            if name.startswith(f"{self.collection_prefix}__")
        )

    def ensure_collection(self, model_name: str, dim: int, has_sparse: bool) -> str:
        """Create the model's collection, or check that the existing one was made for it."""
        existing = self.open_collection(model_name, dim, has_sparse)
        if existing is not None:
            return existing
        name = self.collection_name(model_name, dim)
        create_collection(
            self._client,
            name,
            dim,
            has_sparse,
            self._made_for(model_name, dim, has_sparse),
            self.text_analyzer,
            self.bm25_k1,
            self.bm25_b,
            self.english_analyzer,
        )
        self._ready(name)
        return name

    def open_collection(self, model_name: str, dim: int, has_sparse: bool) -> str | None:
        """The model's existing collection, checked to be made for these settings; None if absent.

        Different model names can sanitize to one collection name, so the model name, the
        dimension, the sparse head, the analyzer and BM25's k1 and b are recorded as collection
        properties and compared on reuse, after the schema version. A search checks them as an
        insert does: the engine analyzes a query with the collection's analyzer whatever is
        configured, so a mismatch is refused rather than answered under settings not in force.
        """
        name = self.collection_name(model_name, dim)
        if not self._client.has_collection(name):
            return None
        description = self._client.describe_collection(name)
        wanted = self._made_for(model_name, dim, has_sparse)
        check_made_for(name, self.uri, checked_schema(description, name, self.uri), wanted)
        first_use = name not in self._loaded
        fields = self._ready(name, description)
        if self.english_analyzer and ENGLISH_BM25_FIELD not in fields and first_use:
            log.warning(
                "collection %r was made without an English BM25 field: English questions are "
                "searched with the analyzer of every question, unstemmed; re-index into a fresh "
                "collection (drop this one, or use another collection_prefix) to stem them",
                name,
            )
        return name

    def _made_for(self, model_name: str, dim: int, has_sparse: bool) -> dict[str, str]:
        return schema_properties(
            model_name,
            dim,
            has_sparse,
            self.text_analyzer,
            self.bm25_k1,
            self.bm25_b,
            self.english_analyzer,
        )

    def has_english_field(self, collection: str) -> bool:
        """Whether English questions' BM25 reads a stemmed copy of the text (schema.py)."""
        return ENGLISH_BM25_FIELD in self._ready(collection)

    def _ready(self, collection: str, description: dict[str, Any] | None = None) -> frozenset[str]:
        """Load the collection once per client (a reopened Lite file starts released); its
        `description`, when the caller has just read it, is not read again.

        Returns which optional fields the collection has (learned sparse, English BM25).
        """
        if collection not in self._loaded:
            if description is None:
                if not self._client.has_collection(collection):
                    raise ConfigurationError(
                        f"no collection {collection!r} at {redact_url(self.uri)}"
                    )
                description = self._client.describe_collection(collection)
            checked_schema(description, collection, self.uri)
            self._client.load_collection(collection)
            names = {f["name"] for f in description["fields"]}
            optional = {SPARSE_FIELD, ENGLISH_TEXT_FIELD, ENGLISH_BM25_FIELD}
            self._loaded[collection] = frozenset(names & optional)
        return self._loaded[collection]

    def replace_document(self, collection: str, doc_id: str, rows: list[IndexRow]) -> ReplaceResult:
        """Make `rows` the document's rows (see `replace_documents`)."""
        return self.replace_documents(collection, {doc_id: rows})[doc_id]

    def replace_documents(
        self, collection: str, rows_by_document: dict[str, list[IndexRow]]
    ) -> dict[str, ReplaceResult]:
        """Make each document's rows its `rows`: upsert them, then delete its rows not among
        them; a batch of documents in shared upserts, one query for the stale rows and one
        flush.

        Chunk ids are deterministic (a hash of document, template, position and text), so an
        upsert of an id that already exists writes the same content again. Upserting first means
        a document is never missing from search while it is replaced. If the call fails
        midway, a document holds its old rows plus some of the new ones, never anything
        else; the next run upserts the rest and deletes exactly the ids outside the new set,
        leaving one row per chunk. Readers during a replacement may briefly see both
        generations.
        """
        started = time.perf_counter()
        fields = self._ready(collection)
        entities, upserted = [], dict.fromkeys(rows_by_document, 0)
        for doc_id, rows in rows_by_document.items():
            ids = [row.chunk_id for row in rows]
            if len(set(ids)) != len(ids):
                raise ValueError(f"document {doc_id!r}: duplicate chunk ids in the rows to index")
            entities += [self._entity(doc_id, row, fields) for row in rows]
        for start in range(0, len(entities), UPSERT_BATCH):
            part = entities[start : start + UPSERT_BATCH]
            self._client.upsert(collection, part)
            for entity in part:
                upserted[entity["doc_id"]] += 1
        # The stale ids are listed here: in milvus-lite 2.5, once a collection holds some 40,000
        # rows, `chunk_id not in [...]` matches every row of the document, new ones included.
        kept = {row.chunk_id for rows in rows_by_document.values() for row in rows}
        stale = [
            row
            for row in self.scan(
                collection, ["chunk_id", "doc_id"], documents_in(list(rows_by_document))
            )
            if row["chunk_id"] not in kept
        ]
        deleted = dict.fromkeys(rows_by_document, 0)
        for start in range(0, len(stale), UPSERT_BATCH):
            part = stale[start : start + UPSERT_BATCH]
            self._delete(collection, chunk_id_in([row["chunk_id"] for row in part]))
            for row in part:
                deleted[row["doc_id"]] += 1
        self._settle(collection)
        seconds = time.perf_counter() - started
        return {
            doc_id: ReplaceResult(
                collection=collection,
                doc_id=doc_id,
                upserted=upserted[doc_id],
                deleted=deleted[doc_id],
                row_count=self.count_document(collection, doc_id),
                seconds=seconds,
            )
            for doc_id in rows_by_document
        }

    @staticmethod
    def _entity(doc_id: str, row: IndexRow, fields: frozenset[str]) -> dict[str, Any]:
        if row.doc_id != doc_id:
            raise ValueError(f"chunk {row.chunk_id} belongs to {row.doc_id!r}, not {doc_id!r}")
        entity = row.model_dump(exclude={"sparse_learned"})
        for page in ("page_start", "page_end"):
            if entity[page] is None:
                entity[page] = NO_PAGE
        if SPARSE_FIELD in fields:
            entity[SPARSE_FIELD] = row.sparse_learned or EMPTY_SPARSE_PLACEHOLDER
        if ENGLISH_TEXT_FIELD in fields:
            entity[ENGLISH_TEXT_FIELD] = row.context_text
        return entity

    def document_snapshot(self, collection: str, doc_id: str) -> list[dict[str, Any]]:
        """The document's stored rows (vectors included), to put back if a replacement fails."""
        return self.documents_snapshot(collection, [doc_id])[doc_id]

    def documents_snapshot(
        self, collection: str, doc_ids: list[str]
    ) -> dict[str, list[dict[str, Any]]]:
        """Each document's stored rows (vectors included), read in one query."""
        optional = self._ready(collection)
        fields = [
            *SCALAR_FIELDS,
            "context_text",
            "dense",
            *(f for f in (SPARSE_FIELD, ENGLISH_TEXT_FIELD) if f in optional),
        ]
        snapshots: dict[str, list[dict[str, Any]]] = {doc_id: [] for doc_id in doc_ids}
        for row in self.scan(collection, fields, documents_in(doc_ids)):
            snapshots[row["doc_id"]].append(row)
        return snapshots

    def scan(self, collection: str, fields: list[str], expr: str = "") -> list[dict[str, Any]]:
        """Every row matching `expr` (all rows when empty), with `fields`, in batches."""
        self._ready(collection)
        iterator = self._client.query_iterator(
            collection, batch_size=1000, filter=expr, output_fields=fields
        )
        rows: list[dict[str, Any]] = []
        try:
            while batch := iterator.next():
                rows.extend({k: row[k] for k in fields} for row in batch)
        finally:
            iterator.close()
        return rows

    def rows_by_id(
        self, collection: str, chunk_ids: list[str], fields: list[str]
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for start in range(0, len(chunk_ids), UPSERT_BATCH):
            batch = chunk_ids[start : start + UPSERT_BATCH]
            rows.extend(self.scan(collection, fields, chunk_id_in(batch)))
        return rows

    def restore_document(self, collection: str, doc_id: str, rows: list[dict[str, Any]]) -> int:
        """Make a snapshot the document's rows again; an empty snapshot removes the document."""
        self.restore_documents(collection, {doc_id: rows})
        return self.count_document(collection, doc_id)

    def restore_documents(
        self, collection: str, snapshots: dict[str, list[dict[str, Any]]]
    ) -> None:
        """Make each snapshot its document's rows again (empty: the document removed)."""
        if not snapshots:
            return
        self._ready(collection)
        self._delete(collection, documents_in(list(snapshots)))
        rows = [row for snapshot in snapshots.values() for row in snapshot]
        for start in range(0, len(rows), UPSERT_BATCH):
            self._client.upsert(collection, rows[start : start + UPSERT_BATCH])
        self._settle(collection)

    def delete_document(self, collection: str, doc_id: str) -> int:
        return self.delete_documents(collection, [doc_id])[doc_id]

    def delete_documents(self, collection: str, doc_ids: Sequence[str]) -> dict[str, int]:
        """The rows of these documents deleted in one write (and one flush): {doc id: rows}."""
        self._ready(collection)
        counts = Counter(
            row["doc_id"]
            for start in range(0, len(doc_ids), UPSERT_BATCH)
            for row in self.scan(
                collection, ["doc_id"], documents_in(doc_ids[start : start + UPSERT_BATCH])
            )
        )
        for start in range(0, len(doc_ids), UPSERT_BATCH):
            self._delete(collection, documents_in(doc_ids[start : start + UPSERT_BATCH]))
        if counts:
            self._settle(collection)
        return {doc_id: counts.get(doc_id, 0) for doc_id in doc_ids}

    def _delete(self, collection: str, expression: str) -> int:
        result = self._client.delete(collection, filter=expression)
        # Milvus Lite answers with the deleted ids, a server with a count (omitted when 0).
        return len(result) if isinstance(result, list) else int(result.get("delete_count", 0))

    def _settle(self, collection: str) -> None:
        # Milvus Lite scans rows still in its memtable by brute force: at 10k rows a search
        # takes ~1.2 s before a flush and ~20 ms after. A server flushes on its own and
        # throttles explicit flushes, so only Lite gets one.
        if self._lite_path is not None:
            self._client.flush(collection)

    def has_sparse(self, collection: str) -> bool:
        """Whether the collection holds learned sparse vectors (made for a BGE-M3 model)."""
        return SPARSE_FIELD in self._ready(collection)

    def count_document(self, collection: str, doc_id: str) -> int:
        self._ready(collection)
        result = self._client.query(
            collection,
            filter=document_is(doc_id),
            output_fields=["count(*)"],
            consistency_level="Strong",
        )
        return int(result[0]["count(*)"])

    def dense_search(
        self,
        collection: str,
        vector: Sequence[float],
        top_k: int,
        doc_id: str | None = None,
        expr: str = "",
    ) -> list[SearchHit]:
        """Nearest rows by cosine, optionally within one document and a filter expression."""
        found = self._search(collection, "dense", unit_vector(vector), top_k, expr, doc_id)
        return [SearchHit.from_stored(hit) for hit in found]

    def dense_search_many(
        self,
        collection: str,
        vectors: Sequence[Sequence[float]],
        top_k: int,
        doc_id: str | None = None,
    ) -> list[list[SearchHit]]:
        """Nearest rows by cosine for each vector, over the whole collection or within one
        document, in batched calls."""
        self._ready(collection)
        hits: list[list[SearchHit]] = []
        for start in range(0, len(vectors), UPSERT_BATCH):
            result = self._client.search(
                collection,
                data=[unit_vector(v) for v in vectors[start : start + UPSERT_BATCH]],
                anns_field="dense",
                limit=top_k,
                filter=within(doc_id, ""),
                output_fields=SCALAR_FIELDS,
                search_params={"metric_type": "IP"},
            )
            hits.extend([SearchHit.from_stored(h) for h in found] for found in result)
        return hits

    def bm25_search(
        self, collection: str, text: str, top_k: int, expr: str = "", language: str | None = None
    ) -> list[SearchHit]:
        """BM25 over context_text, through the analyzer of the question's `language` (detected
        from `text` when None): an English one reads the stemmed copy when there is one."""
        if not text.strip():
            return []
        found = self._search(collection, "bm25", text, top_k, expr, language=language)
        return [SearchHit.from_stored(hit) for hit in found]

    def sparse_search(
        self, collection: str, weights: dict[int, float], top_k: int, expr: str = ""
    ) -> list[SearchHit]:
        """Learned sparse (BGE-M3) by inner product; nothing when the collection has none."""
        if SPARSE_FIELD not in self._ready(collection) or not weights:
            return []
        found = self._search(collection, "sparse", weights, top_k, expr)
        return [SearchHit.from_stored(hit) for hit in found]

    def ranked_ids(
        self,
        collection: str,
        retriever: str,
        query: Any,
        top_k: int,
        expr: str = "",
        fields: Sequence[str] = (),
        language: str | None = None,
    ) -> list[RankedId]:
        """One retriever's ranking ("dense", "bm25" or "sparse"): ids, scores and only `fields`;
        BM25 analyzes the query as `bm25_search` does.

        The text and metadata of the shown hits come from `rows_for_hits`, so a candidate's
        text (up to 64 KB) crosses the wire only when it is shown.
        """
        if retriever == "bm25" and not query.strip():
            return []
        if retriever == "sparse" and (SPARSE_FIELD not in self._ready(collection) or not query):
            return []
        if retriever == "dense":
            query = unit_vector(query)
        # Naming the primary key: Milvus Lite returns every field when output_fields is empty.
        found = self._search(
            collection,
            retriever,
            query,
            top_k,
            expr,
            fields=["chunk_id", *fields],
            language=language,
        )
        return [
            RankedId(
                hit["chunk_id"],
                float(hit["distance"]),
                {k: v for k, v in hit["entity"].items() if k != "chunk_id"},
            )
            for hit in found
        ]

    def rows_for_hits(self, collection: str, chunk_ids: Sequence[str]) -> dict[str, dict]:
        """The SearchHit fields but `score` of these chunks, by id, in one primary-key read."""
        if not chunk_ids:
            return {}
        self._ready(collection)
        rows = self._client.get(collection, ids=list(chunk_ids), output_fields=SCALAR_FIELDS)
        return {row["chunk_id"]: stored_fields(row) for row in rows}

    def _search(
        self,
        collection: str,
        retriever: str,
        query: Any,
        top_k: int,
        expr: str,
        doc_id: str | None = None,
        fields: Sequence[str] = SCALAR_FIELDS,
        language: str | None = None,
    ) -> list[Any]:
        """One retriever's search ("dense", "bm25" or "sparse"), its hits as Milvus returns them."""
        field, metric = RETRIEVERS[retriever]
        optional = self._ready(collection)  # refuses a collection of another schema
        if retriever == "bm25" and ENGLISH_BM25_FIELD in optional:
            field = ENGLISH_BM25_FIELD if (language or detect_language(query)) == "en" else field
        result = self._client.search(
            collection,
            data=[query],
            anns_field=field,
            limit=top_k,
            filter=within(doc_id, expr),
            output_fields=list(fields),
            search_params={"metric_type": metric},
        )
        return list(result[0])
