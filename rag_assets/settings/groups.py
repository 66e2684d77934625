"""The settings `Settings` is made of, one model per concern, each field its variable's
reference entry (docs/configuration.md is rendered from these descriptions)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from rag_assets.cores import available_cores
from rag_assets.settings.base import EnvSettings, shown
from rag_assets.settings.repairs import REPAIR_NAMES

DEFAULT_EMBEDDING_MODEL = "bundled:all-MiniLM-L6-v2"
# The runtimes that run the model's ONNX export, and FlagEmbedding (the reference).
ExportRuntime = Literal["openvino-bf16", "openvino", "onnx", "onnx-int8"]
Runtime = Literal["openvino-bf16", "openvino", "onnx", "onnx-int8", "flag"]
RUNTIMES: tuple[Runtime, ...] = ("openvino-bf16", "openvino", "onnx", "onnx-int8", "flag")
OPENVINO_RUNTIMES: tuple[Runtime, ...] = ("openvino-bf16", "openvino")
# The fastest runtime whose vectors agree with FlagEmbedding's within the stated tolerance
# (cosine >= 0.999 for every text): OpenVINO bf16, 2.3x ONNX Runtime fp32's word pieces/s on
# two AVX-512 BF16 cores with MRR@10 equal on the sample and filings and higher on the
# fixtures; int8 falls short of the tolerance (bench/README.md).
DEFAULT_RUNTIME: Runtime = "openvino-bf16"
# What of a chunk its vector is computed from. `text`: on the sample, fixtures and filings,
# MRR@10 as high as with the breadcrumb or higher, on 11-26% fewer word pieces (bench/README.md).
EmbeddedPart = Literal["text", "context"]
DEFAULT_EMBEDDED_PART: EmbeddedPart = "text"


def in_data_folder(place: str, description: str, **field: Any) -> Any:
    """An optional location whose default is `place` in the data folder (a `Settings` property
    resolves it there)."""
    return Field(
        None, description=description, json_schema_extra=shown(f"`<data>/{place}`"), **field
    )


class StorageSettings(EnvSettings):
    """Where data, assets, collections files, evaluation sets and the index live."""

    data_dir: Path = Field(
        Path("data"), description="the data folder", json_schema_extra=shown("`./data`")
    )
    storage_root: str | None = in_data_folder(
        "assets", "where asset partitions are stored (any UPath, e.g. `s3://bucket/rag`)"
    )
    collections_file: Path | None = in_data_folder(
        "rag_collections.yaml",
        "per-document parser, template and options (see Collections)",
        validation_alias="RAG_ASSETS_COLLECTIONS",
    )
    eval_dir: Path | None = in_data_folder(
        "eval", "evaluation sets for `retrieval_evaluation` (see Retrieval evaluation)"
    )
    milvus_uri: str | None = in_data_folder("milvus.db", "Milvus Lite file, or `http://host:19530`")
    milvus_token: str | None = Field(None, description="Milvus credentials")


class ParsingSettings(EnvSettings):
    """Which files are read, and how."""

    parser: str = Field(
        "auto", description="`auto`, `docling`, `pymupdf`, `unstructured` or `plaintext`"
    )
    docling_artifacts_path: str | None = Field(
        None,
        validation_alias="RAG_ASSETS_DOCLING_ARTIFACTS",
        description="a folder with Docling's layout models; enables Docling for PDF",
    )
    parse_workers: int = Field(
        default_factory=available_cores,
        ge=1,
        description=(
            "processes parsing the page ranges of a PDF of 16 pages or more at once (PyMuPDF), "
            "started once per process; `1` parses one range at a time (in the run's own process "
            "when `RAG_ASSETS_PARSE_PAGE_TIMEOUT_S` is `0`)"
        ),
        json_schema_extra=shown("one per core (within a container's CPU quota)"),
    )
    # Left out to measure what each repair earns (bench/repairs.py) or to get round one that
    # harms a collection.
    repairs_off: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description=(
            f"IR repairs to leave out, comma-separated ({', '.join(f'`{n}`' for n in REPAIR_NAMES)}); "
            "a change re-runs `normalized_documents` and below; `bench/repairs.py` measures what "
            "each earns"
        ),
    )
    inbox_follow_symlinks: bool = Field(
        False,
        description=(
            "follow symbolic links that lead out of the inbox (or out of a folder given to `ingest`)"
        ),
    )
    max_file_mb: float = Field(
        100,
        gt=0,
        description=(
            "a larger file fails with that reason before it is copied or parsed (raise it for "
            "big scanned PDFs)"
        ),
    )

    @field_validator("repairs_off", mode="before")
    @classmethod
    def _repair_names(cls, value: object) -> object:
        names = (
            [n.strip() for n in value.split(",") if n.strip()] if isinstance(value, str) else value
        )
        unknown = sorted(set(names) - set(REPAIR_NAMES)) if isinstance(names, list) else []
        if unknown:
            raise ValueError(f"unknown repairs {unknown}; repairs are {', '.join(REPAIR_NAMES)}")
        return names


class ChunkingSettings(EnvSettings):
    """How documents are cut into chunks, and how much of them the chunks must cover."""

    template: str = Field(
        "auto",
        description=(
            "the chunking template (`auto`, `semantic`, `fixed`, `qa_pairs`, `clauses`, `spec`); "
            "`auto` retrieved best on both evaluation sets (see Retrieval evaluation)"
        ),
    )
    # all-MiniLM-L6-v2 was trained on 256-token inputs; raise both with a long-context model.
    chunk_max_tokens: int = Field(
        256, description="chunk size limit, in the embedding model's tokens"
    )
    chunk_overlap_tokens: int = Field(
        32, description="overlap between consecutive chunks of a section"
    )
    vocabularies: str = Field(
        "auto",
        description=(
            "domain vocabulary packs the templates and the search read (`auto`: the shipped "
            "packs made for a document's profile kind, `finance` for filings; `none`; or "
            "comma-separated pack names or YAML files); a collection of rag_collections.yaml "
            "chooses its own with the `vocabularies` option"
        ),
    )
    chunk_coverage_floor: float = Field(
        0.9,
        ge=0,
        le=1,
        description=(
            "the `document_chunks` coverage check warns below this share of the IR's non-blank "
            "characters inside some chunk's span"
        ),
    )


class EmbeddingSettings(EnvSettings):
    """The embedding model and the runtime it runs on."""

    embedding_model: str = Field(
        DEFAULT_EMBEDDING_MODEL,
        description=(
            "a local model folder or a name in the local Hugging Face cache (e.g. `BAAI/bge-m3`)"
        ),
    )
    embedding_languages: str | None = Field(
        None,
        description="languages the model covers, e.g. `en` or `zh,en`, `*` for any (see Search)",
        json_schema_extra=shown("by the model's name"),
    )
    embedding_runtime: Runtime = Field(
        DEFAULT_RUNTIME,
        description=(
            "`openvino-bf16` (OpenVINO, bf16 where the CPU computes it natively, else fp32), "
            "`openvino` (OpenVINO, fp32), `onnx` (ONNX Runtime, fp32), `onnx-int8` (int8 "
            "weights) or `flag` (FlagEmbedding, the reference; always so for BGE-M3); see "
            "Embeddings"
        ),
    )
    embedded_text: EmbeddedPart = Field(
        DEFAULT_EMBEDDED_PART,
        description=(
            "what of a chunk is embedded: `text` (what a person reads) or `context` (the "
            "document's identity and heading breadcrumb, then the text); BM25 matches the "
            "context either way; see Embeddings"
        ),
    )


class IndexSettings(EnvSettings):
    """The BM25 side of the index, fixed when a collection is made."""

    text_analyzer: str = Field(
        "jieba",
        description=(
            "BM25 analyzer: `jieba` (lowercased; Chinese and English in one collection), "
            "`jieba-english` (also English stop words and stems, for English collections) or "
            "`standard`; fixed when a collection is made, and a collection made with another "
            "is refused by ingest and search alike"
        ),
    )
    english_analyzer: str = Field(
        "jieba-english",
        description=(
            "BM25 analyzer of a second copy of the text that questions in English (Latin "
            "script) search instead: `jieba-english` (stop words and stems: `liability` finds "
            "`liabilities`), another of the text analyzers, or `none` for no copy; fixed when "
            "a collection is made. A collection made without the copy still serves, English "
            "questions going through `text_analyzer` (said in the log)"
        ),
    )
    bm25_k1: float = Field(
        1.2,
        ge=0,
        le=3,
        description=(
            "BM25's term-frequency saturation (0-3), fixed when a collection is made; a collection "
            "made with another value is refused (see Retrieval evaluation)"
        ),
    )
    bm25_b: float = Field(
        0.75,
        ge=0,
        le=1,
        description=(
            "BM25's length normalisation (0-1), fixed when a collection is made; a collection "
            "made with another value is refused (see Retrieval evaluation)"
        ),
    )


class RerankSettings(EnvSettings):
    """Reranking of the fused hits, off unless a model folder (or cached hub name) or a
    `/rerank` endpoint is set. The endpoint's key is read from `RAG_ASSETS_RERANK_API_KEY` when
    the client is made, never held in the settings."""

    rerank_model: str | None = Field(
        None,
        description=(
            "a local model folder or a name in the local Hugging Face cache (e.g. "
            "`BAAI/bge-reranker-v2-m3`); never downloaded. With `RAG_ASSETS_RERANK_URL`, the model "
            "name sent to the endpoint"
        ),
    )
    rerank_url: str | None = Field(
        None,
        description=(
            "a `/rerank` endpoint (Jina, Cohere v2, vLLM shape), e.g. "
            "`http://127.0.0.1:8080/v1/rerank`: POST `{model, query, documents, top_n}` -> "
            "`{results: [{index, relevance_score}]}`"
        ),
    )
    rerank_top_n: int = Field(20, ge=1, description="fused hits handed to the reranker")
    rerank_timeout_s: float = Field(10, gt=0, description="seconds per attempt to the endpoint")
    rerank_max_retries: int = Field(
        2,
        ge=0,
        description="retries with backoff on timeouts, connection errors, 408, 429 and 5xx",
    )


# A run carries up to this many documents and pages (runs: defs/batches.py; backfills: the
# assets' BackfillPolicy, which takes the documents' figure as it is here).
BATCH_DOCUMENTS = 50
BATCH_PAGES = 400


class ScheduleSettings(EnvSettings):
    """When the schedules run (cron, UTC), and how many documents a run carries."""

    refresh_cron: str = Field(
        "0 2 * * *",
        description="when the refresh schedule rescans the inbox and settings and runs what is stale",
    )
    evaluation_cron: str = Field(
        "0 4 * * 0",
        description="when `retrieval_evaluation` is re-run: weekly, Sunday 04:00 UTC",
    )
    batch_documents: int = Field(
        BATCH_DOCUMENTS,
        ge=1,
        description=(
            "documents a run of `ingest`, the inbox sensor or the refresh schedule carries at "
            "most (neighbours needing the same steps; a backfill from the UI takes "
            f"{BATCH_DOCUMENTS})"
        ),
    )
    batch_pages: int = Field(
        BATCH_PAGES,
        ge=1,
        description="pages a run's batch holds at most; a longer document runs alone",
    )
