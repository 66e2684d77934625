"""The collection schema: fields, the BM25 function, the analyzer, the indexes, its version.

The C++ engine of Milvus Lite keeps no collection properties and refuses nullable fields, so the
schema version is recorded as JSON in the collection's description, and a chunk without pages
stores `NO_PAGE`.

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

English questions: a second analyzed copy, `context_text_en` (`jieba-english`: stop words and
stems, so `liability` finds `liabilities`), feeds `sparse_bm25_en`, which a question detected
as English searches instead of `sparse_bm25`. The analyzer is thus chosen by the question's
language, not the row's: stemming alone lifted English questions on every evaluation set and
cost Chinese ones (sample MRR@10 .875 to .801), since a Chinese question quoting English terms
then lost their exact forms (docs/evaluation.md). The copy doubles the stored text: about 40%
more file and a second BM25 pass on insert (docs/search.md). A collection made without it (before it existed, or with
`english_analyzer` `none`) still serves, every question going through `sparse_bm25`.

BM25's k1 and b are index parameters, fixed when a collection is made and recorded beside the
analyzer (the engine ignores them as search parameters). The defaults are the engine's own, 1.2
and 0.75: lower b or k1 lifted BM25 alone but moved the fused templates both ways, one question
at a time (docs/evaluation.md).
"""

from __future__ import annotations

import json
from typing import Any

from rag_assets.errors import ConfigurationError
from rag_assets.redaction import redact_url

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
ENGLISH_PROPERTY = "rag.english_analyzer"
# The copy of context_text that English questions' BM25 reads, and its sparse vectors.
ENGLISH_TEXT_FIELD, ENGLISH_BM25_FIELD = "context_text_en", "sparse_bm25_en"
NO_ENGLISH_ANALYZER = "none"
# Milvus Lite's C++ engine (milvus-lite 2.5) refuses nullable fields and ignores default values
# (an omitted INT64 reads back as garbage), so a chunk without pages stores this, always sent.
NO_PAGE = -1
ANALYZERS: dict[str, dict[str, Any]] = {
    "jieba": {"tokenizer": "jieba", "filter": ["lowercase"]},  # Chinese and English (module doc)
    # For English collections: `liability` finds `liabilities`, `the`/`of` weigh nothing.
    # Chinese words pass through, yet a Chinese question quoting English terms ranked lower on
    # the sample (docs/evaluation.md), so it is not the default.
    "jieba-english": {
        "tokenizer": "jieba",
        "filter": [
            "lowercase",
            {"type": "stop", "stop_words": ["_english_"]},
            {"type": "stemmer", "language": "english"},
        ],
    },
    "standard": {"type": "standard"},
}
DEFAULT_ANALYZER = "jieba"
DEFAULT_ENGLISH_ANALYZER = "jieba-english"
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

# retriever -> (vector field, metric)
RETRIEVERS = {
    "dense": ("dense", "IP"),  # over unit vectors: the cosine
    "bm25": ("sparse_bm25", "BM25"),
    "sparse": ("sparse_learned", "IP"),
}


class OutdatedCollectionError(ConfigurationError):
    """The collection was made by another schema version; it must be rebuilt, not mixed."""


def analyzer_params(text_analyzer: str | dict) -> dict:
    """The analyzer's parameters: one of `ANALYZERS` by name, or given as they are."""
    if not isinstance(text_analyzer, str):
        return text_analyzer
    if text_analyzer not in ANALYZERS:
        raise ConfigurationError(
            f"text analyzer {text_analyzer!r} is not one of {sorted(ANALYZERS)}"
        )
    return ANALYZERS[text_analyzer]


def english_analyzer_params(english_analyzer: str | dict | None) -> dict | None:
    """The English field's analyzer parameters; None for no English field."""
    if english_analyzer in (None, NO_ENGLISH_ANALYZER):
        return None
    return analyzer_params(english_analyzer)


def in_range(name: str, value: float, bounds: tuple[float, float]) -> float:
    """The value as a float, refused before Milvus would refuse the index of a new collection."""
    low, high = bounds
    if not low <= value <= high:
        raise ConfigurationError(f"{name} {value} is outside [{low}, {high}], the engine's range")
    return float(value)


def schema_properties(
    model_name: str,
    dim: int,
    has_sparse: bool,
    text_analyzer: dict,
    bm25_k1: float,
    bm25_b: float,
    english_analyzer: dict | None = None,
) -> dict[str, str]:
    """What a collection records about what it was made for, compared when it is reused."""
    english = json.dumps(english_analyzer, sort_keys=True) if english_analyzer else None
    return {
        ENGLISH_PROPERTY: english or NO_ENGLISH_ANALYZER,
        SCHEMA_PROPERTY: SCHEMA_VERSION,
        "rag.model_name": model_name,
        "rag.dim": str(dim),
        "rag.has_sparse": str(has_sparse).lower(),
        "rag.text_analyzer": json.dumps(text_analyzer, sort_keys=True),
        "rag.bm25_k1": repr(bm25_k1),
        "rag.bm25_b": repr(bm25_b),
    }


def check_made_for(name: str, uri: str, recorded: dict[str, str], wanted: dict[str, str]) -> None:
    """Refuse a collection whose recorded properties are not `wanted`; one made without an
    English field serves as it was made (module docstring)."""
    # Collections made before k1 and b were recorded have the engine's own, and those made
    # before the English field, none.
    found = {**UNRECORDED_BM25, ENGLISH_PROPERTY: NO_ENGLISH_ANALYZER, **recorded}
    if found[ENGLISH_PROPERTY] == NO_ENGLISH_ANALYZER:
        wanted = {**wanted, ENGLISH_PROPERTY: NO_ENGLISH_ANALYZER}
    mismatch = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k) != v}
    if mismatch:
        details = "; ".join(f"{k}: has {h!r}, wanted {w!r}" for k, (h, w) in mismatch.items())
        raise ConfigurationError(
            f"collection {name!r} at {redact_url(uri)} was made for another model, "
            f"analyzer or BM25 parameters ({details}); use another collection_prefix or "
            f"drop the collection and re-index"
        )


def checked_schema(description: dict[str, Any], collection: str, uri: str) -> dict[str, str]:
    """The properties in the collection's description, once its schema version is known to be
    this code's."""
    properties = _recorded_schema(description)
    found = properties.get(SCHEMA_PROPERTY)
    if found != SCHEMA_VERSION:
        made_by = f"schema version {found}" if found else "an older schema (no version recorded)"
        raise OutdatedCollectionError(
            f"collection {collection!r} at {redact_url(uri)} was made by {made_by}; this code "
            f"reads and writes schema version {SCHEMA_VERSION}. Re-index the documents "
            f"into a fresh collection (drop this one, or use another collection_prefix)."
        )
    return properties


def _recorded_schema(description: dict[str, Any]) -> dict[str, str]:
    """What `schema_properties` recorded: JSON in the description (properties before v4)."""
    properties = description.get("properties") or {}
    if SCHEMA_PROPERTY in properties:
        return properties
    try:
        recorded = json.loads(description.get("description") or "{}")
    except json.JSONDecodeError:
        return {}
    return recorded if isinstance(recorded, dict) else {}


def collection_schema(
    client: Any,
    dim: int,
    has_sparse: bool,
    properties: dict[str, str],
    text_analyzer: dict,
    english_analyzer: dict | None = None,
) -> Any:
    """The fields of a chunk row and the BM25 functions that fill `sparse_bm25` from
    `context_text` and, with `english_analyzer`, `sparse_bm25_en` from its English copy."""
    # pymilvus takes over a second to load: only when an index is opened.
    from pymilvus import DataType, Function, FunctionType

    # The C++ engine of Milvus Lite keeps no collection properties but keeps the description.
    schema = client.create_schema(
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
        analyzer_params=text_analyzer,
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
    if english_analyzer:
        schema.add_field(
            ENGLISH_TEXT_FIELD,
            DataType.VARCHAR,
            max_length=TEXT_MAX_BYTES,
            enable_analyzer=True,
            analyzer_params=english_analyzer,
        )
        schema.add_field(ENGLISH_BM25_FIELD, DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="context_bm25_en",
                function_type=FunctionType.BM25,
                input_field_names=[ENGLISH_TEXT_FIELD],
                output_field_names=[ENGLISH_BM25_FIELD],
            )
        )
    return schema


def collection_indexes(
    client: Any, has_sparse: bool, bm25_k1: float, bm25_b: float, has_english: bool = False
) -> Any:
    """One index per retriever's field, and doc_id's."""
    indexes = client.prepare_index_params()
    # FLAT: exact, and immune to duplicate vectors; IP over unit vectors (module docstring).
    indexes.add_index("dense", index_type="FLAT", metric_type="IP")
    for field in ["sparse_bm25", *([ENGLISH_BM25_FIELD] if has_english else [])]:
        indexes.add_index(
            field,
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params={"bm25_k1": bm25_k1, "bm25_b": bm25_b},
        )
    if has_sparse:
        indexes.add_index("sparse_learned", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    # Every replace, delete and count filters on doc_id.
    indexes.add_index("doc_id", index_type="INVERTED")
    return indexes


def create_collection(
    client: Any,
    name: str,
    dim: int,
    has_sparse: bool,
    properties: dict[str, str],
    text_analyzer: dict,
    bm25_k1: float,
    bm25_b: float,
    english_analyzer: dict | None = None,
) -> None:
    schema = collection_schema(client, dim, has_sparse, properties, text_analyzer, english_analyzer)
    indexes = collection_indexes(
        client, has_sparse, bm25_k1, bm25_b, has_english=english_analyzer is not None
    )
    client.create_collection(
        name,
        schema=schema,
        # Strong: a check that runs right after a write must see it, on a server too.
        consistency_level="Strong",
    )
    # sync=False: pymilvus otherwise polls every index with a fixed 0.5 s sleep, though
    # indexes on an empty collection are ready at once; loading waits for them anyway.
    client.create_index(name, indexes, sync=False)
