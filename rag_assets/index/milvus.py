"""The vector index: one Milvus collection per embedding model, documents replaced as a whole.

The uri is a Milvus Lite path (`<data_dir>/milvus.db`, which Milvus Lite 3 keeps as a folder)
or a server address (`http://host:19530`); the code paths are the same. pymilvus is imported
inside methods because it costs most of a second to import.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.errors import ConfigurationError

logger = logging.getLogger(__name__)

SCALAR_FIELDS = [
    "chunk_id",
    "doc_id",
    "text",
    "metadata",
    "chunk_type",
    "header_path",
    "source_path",
    "template",
    "page_start",
    "page_end",
    "chunk_index",
]
TEXT_MAX_BYTES = 65535  # Milvus VARCHAR limit, counted in UTF-8 bytes
DEFAULT_ANALYZER: dict[str, Any] = {"type": "standard"}
# Milvus refuses an empty sparse vector, but a learned model may give a chunk no positive weight
# (and callers may pass None for it). This id lies beyond every tokenizer's vocabulary, so no
# query ever matches it.
EMPTY_SPARSE_PLACEHOLDER = {2**32 - 2: 1e-9}
UPSERT_BATCH = 500
OPEN_DELAYS = (0.5, 1.0, 2.0, 4.0)  # retries after the first attempt: about 10 s in all
MAX_NAME_LENGTH = 255

_lite_lock = threading.Lock()
_lite_users: dict[str, int] = {}  # Lite folder -> open MilvusIndex objects in this process


class IndexUnavailableError(RuntimeError):
    """The index could not be opened (for Milvus Lite: another process holds the file)."""


class IndexRow(BaseModel):
    chunk_id: str
    doc_id: str
    text: str
    dense: list[float]
    sparse_learned: dict[int, float] | None = None
    metadata: dict = Field(default_factory=dict)
    chunk_type: str = "text"
    header_path: str = "/"
    source_path: str = ""
    template: str = ""
    page_start: int | None = None
    page_end: int | None = None
    chunk_index: int = 0

    @field_validator("dense", mode="before")
    @classmethod
    def _array_to_list(cls, value: Any) -> Any:
        return value.tolist() if hasattr(value, "tolist") else value

    @field_validator("text")
    @classmethod
    def _fits_varchar(cls, value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > TEXT_MAX_BYTES:
            raise ValueError(
                f"chunk text is {size} bytes; the index holds {TEXT_MAX_BYTES} at most"
            )
        return value

    @classmethod
    def from_chunk(
        cls, chunk: ChunkRow, dense: Any, sparse: dict[int, float] | None = None
    ) -> IndexRow:
        """An index row for a chunk; provenance the schema has no column for goes to metadata."""
        provenance = chunk.model_dump(
            include={"source_sha256", "headings", "logical_unit", "start_char", "end_char"}
        )
        return cls(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            text=chunk.text,
            dense=dense,
            sparse_learned=sparse,
            metadata={**chunk.metadata, **provenance},
            chunk_type=chunk.chunk_type,
            header_path=chunk.header_path,
            source_path=chunk.source_path,
            template=chunk.template,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
            chunk_index=chunk.chunk_index,
        )


class SearchHit(BaseModel):
    chunk_id: str
    doc_id: str
    source_path: str
    header_path: str
    page_start: int | None
    page_end: int | None
    score: float  # cosine for dense search, the RRF score for hybrid search
    text: str
    chunk_type: str
    template: str
    chunk_index: int
    metadata: dict


class ReplaceResult(BaseModel):
    collection: str
    doc_id: str
    upserted: int
    deleted: int  # stale rows of an earlier generation
    row_count: int  # the document's rows after the replacement
    seconds: float


def quote(value: str) -> str:
    """A Milvus filter string literal; ids may hold quotes and backslashes."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class MilvusIndex:
    def __init__(
        self,
        uri: str,
        token: str | None = None,
        collection_prefix: str = "rag_chunks",
        text_analyzer: dict | None = None,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", collection_prefix):
            raise ConfigurationError(
                f"collection_prefix {collection_prefix!r} must be letters, digits and underscores"
            )
        self.uri = uri
        self.collection_prefix = collection_prefix
        self.text_analyzer = text_analyzer or DEFAULT_ANALYZER
        # pymilvus treats a uri ending in .db as a Milvus Lite folder.
        self._lite_path = str(Path(uri).resolve()) if uri.endswith(".db") else None
        self._loaded: dict[str, bool] = {}  # collection -> has a sparse_learned field
        self._client = self._open(token)

    def _open(self, token: str | None) -> Any:
        from pymilvus import MilvusClient
        from pymilvus.exceptions import ConnectionConfigException

        if self._lite_path is None:
            return MilvusClient(uri=self.uri, token=token or "")
        Path(self._lite_path).parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        attempts = len(OPEN_DELAYS) + 1
        for attempt in range(attempts):
            try:
                client = MilvusClient(uri=self._lite_path)
                break
            except ConnectionConfigException as exc:
                if attempt == attempts - 1:
                    raise IndexUnavailableError(
                        f"could not open the Milvus Lite file {self._lite_path} after {attempts} "
                        f"attempts over {time.monotonic() - started:.0f} s: most likely another "
                        f"process holds it (Milvus Lite allows one process at a time). Run the "
                        f"steps that touch it one at a time, or use a Milvus server uri."
                    ) from exc
                delay = OPEN_DELAYS[attempt]
                logger.info("Milvus Lite file %s busy, retrying in %.1f s", self._lite_path, delay)
                time.sleep(delay)
        with _lite_lock:
            _lite_users[self._lite_path] = _lite_users.get(self._lite_path, 0) + 1
        return client

    def close(self) -> None:
        """Release the connection and, for Milvus Lite, the file once no one here uses it.

        MilvusClient.close() alone keeps Milvus Lite's in-process server, and with it the file
        lock, until the process exits; other processes could not open the file meanwhile.
        """
        if self._client is None:
            return
        self._client.close()
        self._client = None
        if self._lite_path is None:
            return
        from milvus_lite.server_manager import server_manager_instance

        with _lite_lock:
            users = _lite_users.get(self._lite_path, 1) - 1
            if users > 0:
                _lite_users[self._lite_path] = users
                return
            _lite_users.pop(self._lite_path, None)
        server_manager_instance.release_server(self._lite_path)

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
        """Create the model's collection, or check that the existing one was made for it.

        Different model names can sanitize to one collection name, so the model name, the
        dimension, the sparse head and the analyzer are recorded as collection properties and
        compared on reuse.
        """
        name = self.collection_name(model_name, dim)
        wanted = {
            "rag.model_name": model_name,
            "rag.dim": str(dim),
            "rag.has_sparse": str(has_sparse).lower(),
            "rag.text_analyzer": json.dumps(self.text_analyzer, sort_keys=True),
        }
        if self._client.has_collection(name):
            found = self._client.describe_collection(name).get("properties", {})
            mismatch = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k) != v}
            if mismatch:
                details = "; ".join(
                    f"{k}: has {h!r}, wanted {w!r}" for k, (h, w) in mismatch.items()
                )
                raise ConfigurationError(
                    f"collection {name!r} at {self.uri} was made for another model or analyzer "
                    f"({details}); use another collection_prefix or drop the collection"
                )
        else:
            self._create(name, dim, has_sparse, wanted)
        self._ready(name)
        return name

    def _create(self, name: str, dim: int, has_sparse: bool, properties: dict[str, str]) -> None:
        from pymilvus import DataType, Function, FunctionType

        schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("chunk_id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=512)
        schema.add_field(
            "text",
            DataType.VARCHAR,
            max_length=TEXT_MAX_BYTES,
            enable_analyzer=True,
            analyzer_params=self.text_analyzer,
        )
        schema.add_field("sparse_bm25", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
        if has_sparse:
            schema.add_field("sparse_learned", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("metadata", DataType.JSON)
        schema.add_field("chunk_type", DataType.VARCHAR, max_length=64)
        schema.add_field("header_path", DataType.VARCHAR, max_length=8192)
        schema.add_field("source_path", DataType.VARCHAR, max_length=4096)
        schema.add_field("template", DataType.VARCHAR, max_length=64)
        schema.add_field("page_start", DataType.INT64, nullable=True)
        schema.add_field("page_end", DataType.INT64, nullable=True)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse_bm25"],
            )
        )
        indexes = self._client.prepare_index_params()
        # Vectors are L2-normalized, so COSINE ranks exactly like IP and reads as a similarity.
        indexes.add_index("dense", index_type="AUTOINDEX", metric_type="COSINE")
        indexes.add_index("sparse_bm25", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        if has_sparse:
            indexes.add_index(
                "sparse_learned", index_type="SPARSE_INVERTED_INDEX", metric_type="IP"
            )
        # Every replace, delete and count filters on doc_id.
        indexes.add_index("doc_id", index_type="INVERTED")
        self._client.create_collection(
            name,
            schema=schema,
            # Strong: a check that runs right after a write must see it, on a server too.
            consistency_level="Strong",
            properties=properties,
        )
        # sync=False: pymilvus otherwise polls every index with a fixed 0.5 s sleep, though
        # indexes on an empty collection are ready at once; loading waits for them anyway.
        self._client.create_index(name, indexes, sync=False)

    def _ready(self, collection: str) -> bool:
        """Load the collection once per client (a reopened Lite file starts released).

        Returns whether the collection has a learned sparse field.
        """
        if collection not in self._loaded:
            if not self._client.has_collection(collection):
                raise ConfigurationError(f"no collection {collection!r} at {self.uri}")
            fields = self._client.describe_collection(collection)["fields"]
            self._client.load_collection(collection)
            self._loaded[collection] = any(f["name"] == "sparse_learned" for f in fields)
        return self._loaded[collection]

    def replace_document(self, collection: str, doc_id: str, rows: list[IndexRow]) -> ReplaceResult:
        """Make `rows` the document's rows: upsert them, then delete its rows not among them.

        Chunk ids are deterministic (a hash of document, template, position and text), so an
        upsert of an id that already exists writes the same content again. Upserting first means
        the document is never missing from search while it is replaced. If the call fails
        midway, the document holds its old rows plus some of the new ones, never anything
        else; the next run upserts the rest and deletes exactly the ids outside the new set,
        leaving one row per chunk. Readers during a replacement may briefly see both
        generations.
        """
        started = time.perf_counter()
        has_sparse = self._ready(collection)
        ids = [row.chunk_id for row in rows]
        if len(set(ids)) != len(ids):
            raise ValueError(f"document {doc_id!r}: duplicate chunk ids in the rows to index")
        entities = [self._entity(doc_id, row, has_sparse) for row in rows]
        upserted = 0
        for start in range(0, len(entities), UPSERT_BATCH):
            result = self._client.upsert(collection, entities[start : start + UPSERT_BATCH])
            upserted += int(result.get("upsert_count", 0))
        stale = f"doc_id == {quote(doc_id)}"
        if ids:
            stale += f" and chunk_id not in [{', '.join(quote(i) for i in ids)}]"
        deleted = self._delete(collection, stale)
        self._settle(collection)
        return ReplaceResult(
            collection=collection,
            doc_id=doc_id,
            upserted=upserted,
            deleted=deleted,
            row_count=self.count_document(collection, doc_id),
            seconds=time.perf_counter() - started,
        )

    @staticmethod
    def _entity(doc_id: str, row: IndexRow, has_sparse: bool) -> dict[str, Any]:
        if row.doc_id != doc_id:
            raise ValueError(f"chunk {row.chunk_id} belongs to {row.doc_id!r}, not {doc_id!r}")
        entity = row.model_dump(exclude={"sparse_learned"})
        if has_sparse:
            entity["sparse_learned"] = row.sparse_learned or EMPTY_SPARSE_PLACEHOLDER
        return entity

    def delete_document(self, collection: str, doc_id: str) -> int:
        self._ready(collection)
        deleted = self._delete(collection, f"doc_id == {quote(doc_id)}")
        self._settle(collection)
        return deleted

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

    def count_document(self, collection: str, doc_id: str) -> int:
        self._ready(collection)
        result = self._client.query(
            collection,
            filter=f"doc_id == {quote(doc_id)}",
            output_fields=["count(*)"],
            consistency_level="Strong",
        )
        return int(result[0]["count(*)"])

    def dense_search(
        self, collection: str, vector: Sequence[float], top_k: int, doc_id: str | None = None
    ) -> list[SearchHit]:
        self._ready(collection)
        result = self._client.search(
            collection,
            data=[[float(x) for x in vector]],
            anns_field="dense",
            limit=top_k,
            filter=f"doc_id == {quote(doc_id)}" if doc_id is not None else "",
            output_fields=SCALAR_FIELDS,
            search_params={"metric_type": "COSINE"},
        )
        return [_hit(hit) for hit in result[0]]

    def hybrid_search(
        self,
        collection: str,
        query_text: str,
        dense_vector: Sequence[float],
        top_k: int,
        sparse_weights: dict[int, float] | None = None,
        doc_id: str | None = None,
    ) -> list[SearchHit]:
        """Dense + BM25 on the raw query text (+ learned sparse when both sides have it), by RRF.

        Each list contributes more candidates than top_k so that fusion can promote a chunk
        that only one of them ranks highly.
        """
        from pymilvus import AnnSearchRequest, RRFRanker

        has_sparse = self._ready(collection)
        expr = f"doc_id == {quote(doc_id)}" if doc_id is not None else None
        pool = max(top_k * 4, 20)
        requests = [
            AnnSearchRequest(
                [[float(x) for x in dense_vector]], "dense", {"metric_type": "COSINE"}, pool, expr
            )
        ]
        if query_text.strip():
            requests.append(
                AnnSearchRequest([query_text], "sparse_bm25", {"metric_type": "BM25"}, pool, expr)
            )
        if has_sparse and sparse_weights:
            requests.append(
                AnnSearchRequest(
                    [sparse_weights], "sparse_learned", {"metric_type": "IP"}, pool, expr
                )
            )
        result = self._client.hybrid_search(
            collection, requests, RRFRanker(60), limit=top_k, output_fields=SCALAR_FIELDS
        )
        return [_hit(hit) for hit in result[0]]


def _hit(hit: Any) -> SearchHit:
    entity = hit["entity"]
    return SearchHit(score=float(hit["distance"]), **{k: entity[k] for k in SCALAR_FIELDS})
