"""The vector index: one Milvus collection per embedding model, documents replaced as a whole.

The uri is a Milvus Lite file (`<data_dir>/milvus.db`) or a server address (`http://host:19530`);
the code paths are the same. Milvus Lite here is milvus-lite 2.5: Milvus' own C++ engine (segcore,
knowhere, tantivy for BM25), run by pymilvus as a child process of the one process that holds the
file. milvus-lite 3 reimplements the engine in Python, and its searches walk every row in Python
per query: 1.1 s hybrid p95 at 100,000 rows against 47 ms in the C++ engine (`bench/latency.py`),
and 20-40 minutes against 74 s to index those rows. pymilvus is imported inside methods because it
costs most of a second to import.

The C++ engine keeps no collection properties and refuses nullable fields, so the schema version
is recorded as JSON in the collection's description, and a chunk without pages stores `NO_PAGE`.

Each row keeps `text` for display and `context_text` (title + heading breadcrumb + text) for
matching: the dense vector is computed from it and BM25 analyzes it.

Dense index: FLAT (exact) by inner product over unit vectors: rows and queries are L2-normalized
here, so the inner product is their cosine and ranks as COSINE would, without normalizing stored
vectors per search. FLAT is exact whatever the rows: in milvus-lite 3, whose IVF_FLAT and HNSW
were real approximate indexes, one document of 3000 rows sharing one vector cut recall@10 of
the others to .94-.95 (IVF_FLAT) and .92-.94 (HNSW) while FLAT stayed 1.000
(`bench/dense_index_types.py`). Milvus Lite 2.5 builds only FLAT, IVF_FLAT and AUTOINDEX
(1.000 in all three at these sizes) and refuses HNSW. A server collection of millions of rows
would want HNSW, with duplicate chunks deduplicated before indexing.

BM25 analyzer: `jieba` with a lowercase filter, one analyzer for Chinese and English rows alike
(jieba emits English words whole), measured by `bench/bm25_analyzers.py` on mixed English /
Chinese rows: `standard` and `english` keep a Chinese sentence as one token (8 of 16 queries
top-1, every Chinese one missed); `icu` and `language_identifier` are accepted at collection
creation and then fail every insert; `multi_analyzer_params` (per-row analyzer chosen by a language
field) is accepted but ignored by this engine, every row going through `standard`; jieba + lowercase:
15 of 16 top-1 (MRR@5 .97). A newer Milvus server supports the multi-language analyzer, but the
same jieba analyzer keeps Lite and server results alike. Each row still records its detected
`language`, for filters and for a server-side multi-language analyzer.

BM25's k1 and b are index parameters, fixed when a collection is made and recorded beside the
analyzer (the engine ignores them as search parameters). The defaults are the engine's own, 1.2
and 0.75: lower b or k1 lifted BM25 alone but moved the fused templates both ways, one question
at a time (README, Retrieval evaluation).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.errors import ConfigurationError
from rag_assets.interrupts import children_deaf_to_stop_signals, interruptible
from rag_assets.redaction import redact_url
from rag_assets.retrieval.language import detect_language

logger = logging.getLogger(__name__)
# milvus-lite 2.5 reads its own version through pkg_resources, which warns on every import.
warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning, "milvus_lite")

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
    "language",
]
TEXT_MAX_BYTES = 65535  # Milvus VARCHAR limit, counted in UTF-8 bytes
# Bump when the fields, the functions or the index types change: a collection made by another
# version is refused, never written to or searched as if it were current.
SCHEMA_VERSION = "4"  # 4: pages not nullable, NO_PAGE instead; schema recorded in description
SCHEMA_PROPERTY = "rag.schema_version"
# Milvus Lite's C++ engine (milvus-lite 2.5) refuses nullable fields and ignores default values
# (an omitted INT64 reads back as garbage), so a chunk without pages stores this, always sent.
NO_PAGE = -1
ANALYZERS: dict[str, dict[str, Any]] = {
    "jieba": {"tokenizer": "jieba", "filter": ["lowercase"]},  # Chinese and English (module doc)
    "standard": {"type": "standard"},
}
DEFAULT_ANALYZER = "jieba"
# BM25's term-frequency saturation (k1) and length normalisation (b), index parameters of the
# engine: they are fixed when the collection is made (search parameters are ignored), within
# the ranges the engine accepts.
ENGINE_BM25 = (1.2, 0.75)  # the engine's own k1 and b, which collections got before
DEFAULT_BM25_K1, DEFAULT_BM25_B = ENGINE_BM25
UNRECORDED_BM25 = {"rag.bm25_k1": repr(ENGINE_BM25[0]), "rag.bm25_b": repr(ENGINE_BM25[1])}
BM25_K1_RANGE = (0.0, 3.0)
BM25_B_RANGE = (0.0, 1.0)
# Milvus refuses an empty sparse vector, but a learned model may give a chunk no positive weight
# (and callers may pass None for it). This id lies beyond every tokenizer's vocabulary, so no
# query ever matches it.
EMPTY_SPARSE_PLACEHOLDER = {2**32 - 2: 1e-9}
UPSERT_BATCH = 500
OPEN_DELAYS = (0.5, 1.0, 2.0, 4.0)  # retries after the first attempt: about 10 s in all
MAX_NAME_LENGTH = 255

_lite_lock = threading.Lock()


class _NoLiteSnapshotWarning(logging.Filter):
    """Milvus Lite gives a query iterator no MVCC timestamp; pymilvus then warns on every scan
    and reads at the client's clock, which is exact for a file only this process writes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to get mvccTs" not in record.getMessage()


_lite_snapshot_filter = _NoLiteSnapshotWarning()
_lite_users: dict[str, int] = {}  # Lite folder -> open MilvusIndex objects in this process
_lite_holds: dict[str, Any] = {}  # Lite folder -> this process's FileLock on it
LITE_WAIT_S = 600.0  # how long another rag_assets process's use of the Lite file is waited for
# The engine is a local socket: pymilvus' keepalive pings (every 10 s, even between calls) only
# make it answer "too_many_pings" with a GOAWAY that gRPC logs as an error on stderr.
LITE_GRPC_OPTIONS = {"grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": 0}
WAITING_TOUCH_S = 1.0  # a waiting process renews `<file>.waiting` this often


class IndexUnavailableError(RuntimeError):
    """The index could not be opened (for Milvus Lite: another process holds the file)."""


class OutdatedCollectionError(ConfigurationError):
    """The collection was made by another schema version; it must be rebuilt, not mixed."""


class IndexRow(BaseModel):
    chunk_id: str
    doc_id: str
    text: str
    # What the dense vector and BM25 see: title + breadcrumb + text; empty means `text`.
    context_text: str = ""
    language: str = ""  # empty: detected from context_text
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
    def _unit_list(cls, value: Any) -> Any:
        return unit_vector(value)

    @field_validator("text", "context_text")
    @classmethod
    def _fits_varchar(cls, value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > TEXT_MAX_BYTES:
            raise ValueError(
                f"chunk text is {size} bytes; the index holds {TEXT_MAX_BYTES} at most"
            )
        return value

    @model_validator(mode="after")
    def _fill_context(self) -> IndexRow:
        if not self.context_text:
            self.context_text = self.text
        if not self.language:
            self.language = detect_language(self.context_text)
        return self

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
            context_text=chunk.context_text,
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
    score: float  # the retriever's own: cosine (dense), BM25, or inner product (sparse)
    text: str
    chunk_type: str
    template: str
    chunk_index: int
    metadata: dict
    language: str


class RankedId(NamedTuple):
    chunk_id: str
    score: float  # as in SearchHit
    fields: dict[str, Any]  # only the output fields asked for


# retriever -> (vector field, metric)
RETRIEVERS = {
    "dense": ("dense", "IP"),  # over unit vectors: the cosine
    "bm25": ("sparse_bm25", "BM25"),
    "sparse": ("sparse_learned", "IP"),
}


class ReplaceResult(BaseModel):
    collection: str
    doc_id: str
    upserted: int
    deleted: int  # stale rows of an earlier generation
    row_count: int  # the document's rows after the replacement
    seconds: float


def unit_vector(vector: Any) -> list[float]:
    """The vector scaled to length 1 (a zero vector as it is): its inner products are cosines."""
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return (array / norm if norm > 0 else array).tolist()


# Milvus' expression language has no escape that matches a control character in a literal, and
# a line break inside a `like` pattern ends Milvus Lite's engine process.
_UNQUOTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def quote(value: str) -> str:
    """A Milvus filter string literal; ids may hold quotes and backslashes. A value holding a
    control character is refused (ValueError)."""
    if _UNQUOTABLE.search(value):
        raise ValueError(f"a filter value holds a control character: {value[:60]!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class MilvusIndex:
    def __init__(
        self,
        uri: str,
        token: str | None = None,
        collection_prefix: str = "rag_chunks",
        text_analyzer: str | dict = DEFAULT_ANALYZER,
        bm25_k1: float = DEFAULT_BM25_K1,
        bm25_b: float = DEFAULT_BM25_B,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", collection_prefix):
            raise ConfigurationError(
                f"collection_prefix {collection_prefix!r} must be letters, digits and underscores"
            )
        self.uri = uri
        self.collection_prefix = collection_prefix
        if isinstance(text_analyzer, str):
            if text_analyzer not in ANALYZERS:
                raise ConfigurationError(
                    f"text analyzer {text_analyzer!r} is not one of {sorted(ANALYZERS)}"
                )
            text_analyzer = ANALYZERS[text_analyzer]
        self.text_analyzer = text_analyzer
        self.bm25_k1 = _in_range("bm25_k1", bm25_k1, BM25_K1_RANGE)
        self.bm25_b = _in_range("bm25_b", bm25_b, BM25_B_RANGE)
        # pymilvus treats a uri ending in .db as a Milvus Lite folder.
        self._lite_path = str(Path(uri).resolve()) if uri.endswith(".db") else None
        self._loaded: dict[str, bool] = {}  # collection -> has a sparse_learned field
        self._client = self._open(token)

    def _open(self, token: str | None) -> Any:
        import grpc
        from pymilvus import MilvusClient
        from pymilvus.exceptions import ConnectionConfigException

        if self._lite_path is None:
            return MilvusClient(uri=self.uri, token=token or "")
        if Path(self._lite_path).is_dir():
            # milvus-lite 2.5 keeps one file; a folder is Milvus Lite 3's, which it cannot read.
            raise ConfigurationError(
                f"{self._lite_path} is a Milvus Lite 3 folder; this engine keeps a single file: "
                f"move it aside and re-index the documents"
            )
        Path(self._lite_path).parent.mkdir(parents=True, exist_ok=True)
        with _lite_lock:
            if self._lite_path not in _lite_holds:
                _lite_holds[self._lite_path] = _hold_lite_file(self._lite_path)
        started = time.monotonic()
        attempts = len(OPEN_DELAYS) + 1
        for attempt in range(attempts):
            try:
                _check_engine_free(self._lite_path)
                # The engine is a child process: Ctrl-C in the terminal must not stop it under
                # an ingest that still has a document to undo (rag_assets.interrupts).
                with children_deaf_to_stop_signals():
                    client = MilvusClient(uri=self._lite_path, grpc_options=LITE_GRPC_OPTIONS)
                break
            except (ConnectionConfigException, grpc.RpcError) as exc:
                # RpcError: milvus-lite takes its engine for started after 0.5 s; on a busy
                # machine the engine's socket may not exist yet, and a later attempt finds it.
                if attempt == attempts - 1:
                    with _lite_lock:
                        if not _lite_users.get(self._lite_path):
                            _lite_holds.pop(self._lite_path).release()
                    raise IndexUnavailableError(
                        f"could not open the Milvus Lite file {self._lite_path} after {attempts} "
                        f"attempts over {time.monotonic() - started:.0f} s: most likely another "
                        f"process holds it (Milvus Lite allows one process at a time). Run the "
                        f"steps that touch it one at a time, or use a Milvus server uri."
                    ) from exc
                delay = OPEN_DELAYS[attempt]
                logger.info("Milvus Lite file %s busy, retrying in %.1f s", self._lite_path, delay)
                with interruptible():
                    time.sleep(delay)
        with _lite_lock:
            _lite_users[self._lite_path] = _lite_users.get(self._lite_path, 0) + 1
        # addFilter ignores a filter already there.
        logging.getLogger("pymilvus.client.iterator.query_iterator").addFilter(
            _lite_snapshot_filter
        )
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
            _lite_holds.pop(self._lite_path).release()

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
        dimension, the sparse head, the analyzer and BM25's k1 and b are recorded as collection
        properties and compared on reuse, after the schema version.
        """
        name = self.collection_name(model_name, dim)
        wanted = {
            SCHEMA_PROPERTY: SCHEMA_VERSION,
            "rag.model_name": model_name,
            "rag.dim": str(dim),
            "rag.has_sparse": str(has_sparse).lower(),
            "rag.text_analyzer": json.dumps(self.text_analyzer, sort_keys=True),
            "rag.bm25_k1": repr(self.bm25_k1),
            "rag.bm25_b": repr(self.bm25_b),
        }
        if self._client.has_collection(name):
            # Collections made before k1 and b were recorded have the engine's own.
            found = {**UNRECORDED_BM25, **self._check_schema(name)}
            mismatch = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k) != v}
            if mismatch:
                details = "; ".join(
                    f"{k}: has {h!r}, wanted {w!r}" for k, (h, w) in mismatch.items()
                )
                raise ConfigurationError(
                    f"collection {name!r} at {redact_url(self.uri)} was made for another model, "
                    f"analyzer or BM25 parameters ({details}); use another collection_prefix or "
                    f"drop the collection and re-index"
                )
        else:
            self._create(name, dim, has_sparse, wanted)
        self._ready(name)
        return name

    def _create(self, name: str, dim: int, has_sparse: bool, properties: dict[str, str]) -> None:
        from pymilvus import DataType, Function, FunctionType

        # The C++ engine of Milvus Lite keeps no collection properties but keeps the description.
        schema = self._client.create_schema(
            auto_id=False, enable_dynamic_field=False, description=json.dumps(properties)
        )
        schema.add_field("chunk_id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=512)
        schema.add_field("text", DataType.VARCHAR, max_length=TEXT_MAX_BYTES)
        schema.add_field(
            "context_text",
            DataType.VARCHAR,
            max_length=TEXT_MAX_BYTES,
            enable_analyzer=True,
            analyzer_params=self.text_analyzer,
        )
        schema.add_field("language", DataType.VARCHAR, max_length=16)
        schema.add_field("sparse_bm25", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
        if has_sparse:
            schema.add_field("sparse_learned", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("metadata", DataType.JSON)
        schema.add_field("chunk_type", DataType.VARCHAR, max_length=64)
        schema.add_field("header_path", DataType.VARCHAR, max_length=8192)
        schema.add_field("source_path", DataType.VARCHAR, max_length=4096)
        schema.add_field("template", DataType.VARCHAR, max_length=64)
        schema.add_field("page_start", DataType.INT64)
        schema.add_field("page_end", DataType.INT64)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_function(
            Function(
                name="context_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["context_text"],
                output_field_names=["sparse_bm25"],
            )
        )
        indexes = self._client.prepare_index_params()
        # FLAT: exact, and immune to duplicate vectors; IP over unit vectors (module docstring).
        indexes.add_index("dense", index_type="FLAT", metric_type="IP")
        indexes.add_index(
            "sparse_bm25",
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params={"bm25_k1": self.bm25_k1, "bm25_b": self.bm25_b},
        )
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
                raise ConfigurationError(f"no collection {collection!r} at {redact_url(self.uri)}")
            self._check_schema(collection)
            fields = self._client.describe_collection(collection)["fields"]
            self._client.load_collection(collection)
            self._loaded[collection] = any(f["name"] == "sparse_learned" for f in fields)
        return self._loaded[collection]

    def _check_schema(self, collection: str) -> dict[str, str]:
        """The collection's properties, once its schema version is known to be this code's."""
        properties = _recorded_schema(self._client.describe_collection(collection))
        found = properties.get(SCHEMA_PROPERTY)
        if found != SCHEMA_VERSION:
            made_by = (
                f"schema version {found}" if found else "an older schema (no version recorded)"
            )
            raise OutdatedCollectionError(
                f"collection {collection!r} at {redact_url(self.uri)} was made by {made_by}; this code "
                f"reads and writes schema version {SCHEMA_VERSION}. Re-index the documents "
                f"into a fresh collection (drop this one, or use another collection_prefix)."
            )
        return properties

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
        # The stale ids are listed here: in milvus-lite 2.5, once a collection holds some 40,000
        # rows, `chunk_id not in [...]` matches every row of the document, new ones included.
        kept = set(ids)
        stale = [
            row["chunk_id"]
            for row in self.scan(collection, ["chunk_id"], f"doc_id == {quote(doc_id)}")
            if row["chunk_id"] not in kept
        ]
        deleted = 0
        for start in range(0, len(stale), UPSERT_BATCH):
            batch = ", ".join(quote(i) for i in stale[start : start + UPSERT_BATCH])
            deleted += self._delete(collection, f"chunk_id in [{batch}]")
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
        for page in ("page_start", "page_end"):
            if entity[page] is None:
                entity[page] = NO_PAGE
        if has_sparse:
            entity["sparse_learned"] = row.sparse_learned or EMPTY_SPARSE_PLACEHOLDER
        return entity

    def document_snapshot(self, collection: str, doc_id: str) -> list[dict[str, Any]]:
        """The document's stored rows (vectors included), to put back if a replacement fails."""
        has_sparse = self._ready(collection)
        fields = [
            *SCALAR_FIELDS,
            "context_text",
            "dense",
            *(["sparse_learned"] if has_sparse else []),
        ]
        return self.scan(collection, fields, f"doc_id == {quote(doc_id)}")

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
            batch = ", ".join(quote(i) for i in chunk_ids[start : start + UPSERT_BATCH])
            rows.extend(self.scan(collection, fields, f"chunk_id in [{batch}]"))
        return rows

    def restore_document(self, collection: str, doc_id: str, rows: list[dict[str, Any]]) -> int:
        """Make a snapshot the document's rows again; an empty snapshot removes the document."""
        self._ready(collection)
        self._delete(collection, f"doc_id == {quote(doc_id)}")
        for start in range(0, len(rows), UPSERT_BATCH):
            self._client.upsert(collection, rows[start : start + UPSERT_BATCH])
        self._settle(collection)
        return self.count_document(collection, doc_id)

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

    def has_sparse(self, collection: str) -> bool:
        """Whether the collection holds learned sparse vectors (made for a BGE-M3 model)."""
        return self._ready(collection)

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
        self,
        collection: str,
        vector: Sequence[float],
        top_k: int,
        doc_id: str | None = None,
        expr: str = "",
    ) -> list[SearchHit]:
        """Nearest rows by cosine, optionally within one document and a filter expression."""
        return self._search(collection, unit_vector(vector), "dense", "IP", top_k, expr, doc_id)

    def dense_search_many(
        self, collection: str, vectors: Sequence[Sequence[float]], top_k: int
    ) -> list[list[SearchHit]]:
        """Nearest rows by cosine for each vector, over the whole collection, in batched calls."""
        self._ready(collection)
        hits: list[list[SearchHit]] = []
        for start in range(0, len(vectors), UPSERT_BATCH):
            result = self._client.search(
                collection,
                data=[unit_vector(v) for v in vectors[start : start + UPSERT_BATCH]],
                anns_field="dense",
                limit=top_k,
                output_fields=SCALAR_FIELDS,
                search_params={"metric_type": "IP"},
            )
            hits.extend([_hit(h) for h in found] for found in result)
        return hits

    def bm25_search(
        self, collection: str, text: str, top_k: int, expr: str = ""
    ) -> list[SearchHit]:
        """BM25 over context_text; the query goes through the same analyzer as the rows."""
        if not text.strip():
            return []
        return self._search(collection, text, "sparse_bm25", "BM25", top_k, expr)

    def sparse_search(
        self, collection: str, weights: dict[int, float], top_k: int, expr: str = ""
    ) -> list[SearchHit]:
        """Learned sparse (BGE-M3) by inner product; nothing when the collection has none."""
        if not self._ready(collection) or not weights:
            return []
        return self._search(collection, weights, "sparse_learned", "IP", top_k, expr)

    def ranked_ids(
        self,
        collection: str,
        retriever: str,
        query: Any,
        top_k: int,
        expr: str = "",
        fields: Sequence[str] = (),
    ) -> list[RankedId]:
        """One retriever's ranking ("dense", "bm25" or "sparse"): ids, scores and only `fields`.

        The text and metadata of the shown hits come from `rows_for_hits`, so a candidate's
        text (up to 64 KB) crosses the wire only when it is shown.
        """
        if retriever == "bm25" and not query.strip():
            return []
        if retriever == "sparse" and (not self._ready(collection) or not query):
            return []
        if retriever == "dense":
            query = unit_vector(query)
        field, metric = RETRIEVERS[retriever]
        # Naming the primary key: Milvus Lite returns every field when output_fields is empty.
        found = self._search_raw(
            collection, query, field, metric, top_k, expr, None, ["chunk_id", *fields]
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
        return {row["chunk_id"]: _pages_or_none({k: row[k] for k in SCALAR_FIELDS}) for row in rows}

    def _search(
        self,
        collection: str,
        query: Any,
        field: str,
        metric: str,
        top_k: int,
        expr: str,
        doc_id: str | None = None,
    ) -> list[SearchHit]:
        found = self._search_raw(
            collection, query, field, metric, top_k, expr, doc_id, SCALAR_FIELDS
        )
        return [_hit(hit) for hit in found]

    def _search_raw(
        self,
        collection: str,
        query: Any,
        field: str,
        metric: str,
        top_k: int,
        expr: str,
        doc_id: str | None,
        fields: Sequence[str],
    ) -> list[Any]:
        self._ready(collection)
        clauses = [f"doc_id == {quote(doc_id)}"] if doc_id is not None else []
        clauses += [f"({expr})"] if expr else []
        result = self._client.search(
            collection,
            data=[query],
            anns_field=field,
            limit=top_k,
            filter=" and ".join(clauses),
            output_fields=list(fields),
            search_params={"metric_type": metric},
        )
        return list(result[0])


def _hold_lite_file(path: str) -> Any:
    """This process's claim on a Milvus Lite file, which serves one process at a time: another
    rag_assets process (an ingest, a query, the UI) waits for it and says so at INFO. A file
    lock, so a killed holder frees it."""
    from filelock import FileLock, Timeout

    lock = FileLock(f"{path}.lock", thread_local=False)
    try:
        lock.acquire(timeout=0)
        return lock
    except Timeout:
        logger.info("waiting for the Milvus Lite file %s: another process is using it", path)
    waiting = Path(f"{path}.waiting")
    deadline = time.monotonic() + LITE_WAIT_S
    while time.monotonic() < deadline:
        waiting.touch()  # a holder that keeps the file between writes steps aside (LiteHold)
        try:
            with interruptible():
                lock.acquire(timeout=WAITING_TOUCH_S)
            return lock
        except Timeout:
            continue
    raise IndexUnavailableError(
        f"another process has held the Milvus Lite file {path} for over "
        f"{LITE_WAIT_S:.0f} s (Milvus Lite serves one process at a time); "
        f"use a Milvus server uri to share the index."
    )


def purge_deleted_rows(uri: str) -> bool:
    """Rewrite a Milvus Lite file so deleted rows leave the disk; False when not done here.

    The engine keeps rows in SQLite, whose deletes leave the bytes in free pages until the file
    is rewritten: a removed document's text would stay readable in `milvus.db`. VACUUM runs with
    the file held and no engine running (it stops when its last user here closes). A server
    compacts its segments on its own schedule.
    """
    if not uri.endswith(".db") or not Path(uri).is_file():
        return False
    path = str(Path(uri).resolve())
    with _lite_lock:
        if _lite_users.get(path):
            return False  # this process's engine still has the file open
    hold = _hold_lite_file(path)
    try:
        with closing(sqlite3.connect(path)) as db:
            db.execute("VACUUM")
    finally:
        hold.release()
    return True


class LiteHold:
    """Keeps this process's Milvus Lite engine running between index writes, since each start
    costs about half a second, and stops it whenever another process is waiting for the file.

    `hold()` before work that writes the index, `step_aside_if_wanted()` after it; a no-op for a
    server uri. The writes open their own `MilvusIndex`, which shares the running engine.
    """

    def __init__(self, uri: str) -> None:
        self._uri = uri if uri.endswith(".db") else None
        self._index: MilvusIndex | None = None

    def hold(self) -> None:
        if self._uri and self._index is None:
            self._index = MilvusIndex(self._uri)

    def step_aside_if_wanted(self) -> None:
        if self._index is None or self._index._lite_path is None:
            return
        waiting = Path(f"{self._index._lite_path}.waiting")
        try:
            wanted = time.time() - waiting.stat().st_mtime < 3 * WAITING_TOUCH_S
        except FileNotFoundError:
            wanted = False
        if wanted:
            self.close()

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> LiteHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _in_range(name: str, value: float, bounds: tuple[float, float]) -> float:
    """The value as a float, refused before Milvus would refuse the index of a new collection."""
    low, high = bounds
    if not low <= value <= high:
        raise ConfigurationError(f"{name} {value} is outside [{low}, {high}], the engine's range")
    return float(value)


def _recorded_schema(description: dict[str, Any]) -> dict[str, str]:
    """What `ensure_collection` recorded: JSON in the description (properties before v4)."""
    properties = description.get("properties") or {}
    if SCHEMA_PROPERTY in properties:
        return properties
    try:
        recorded = json.loads(description.get("description") or "{}")
    except json.JSONDecodeError:
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _pages_or_none(fields: dict[str, Any]) -> dict[str, Any]:
    for page in ("page_start", "page_end"):
        if fields.get(page) == NO_PAGE:
            fields[page] = None
    return fields


def _check_engine_free(path: str) -> None:
    """Refuse a Lite file another process's engine holds, without asking milvus-lite to open it.

    milvus-lite 2.5's refused open unlinks the holder's lock file (`.<name>.lock`), so the next
    open starts a second engine on the same file, whose writes the first never sees. No probe
    when this process runs the engine: closing the probe would drop this process's own lock
    (POSIX record locks), and the engine stops when its lock goes.
    """
    import fcntl

    from milvus_lite.server_manager import server_manager_instance
    from pymilvus.exceptions import ConnectionConfigException

    if path in server_manager_instance._servers:
        return
    lock_path = Path(path).parent / f".{Path(path).name}.lock"
    if not lock_path.exists():
        return
    with lock_path.open("a") as probe:
        try:
            fcntl.lockf(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise ConnectionConfigException(message=f"{path} is held by another process") from exc
        fcntl.lockf(probe, fcntl.LOCK_UN)


def _hit(hit: Any) -> SearchHit:
    entity = hit["entity"]
    fields = _pages_or_none({k: entity[k] for k in SCALAR_FIELDS})
    return SearchHit(score=float(hit["distance"]), **fields)
