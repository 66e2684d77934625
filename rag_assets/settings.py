"""Runtime settings shared by the CLI and the Dagster definitions, read from the environment."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from rag_assets.embedding.models import DEFAULT_RUNTIME, Runtime
from rag_assets.normalize.repairs import REPAIR_NAMES
from rag_assets.parsers.page_pool import available_cores
from rag_assets.retrieval.fusion import FusionSettings
from rag_assets.sources.limits import DocumentLimits

DEFAULT_EMBEDDING_MODEL = "bundled:all-MiniLM-L6-v2"


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


class Settings(BaseModel):
    """One place for every path and default; `from_env` is what `dagster dev` and the CLI use."""

    data_dir: Path
    storage_root: str | None = (
        None  # UPath root for asset files (s3://... works); default data_dir/assets
    )
    parser: str = "auto"
    # `auto` scored best on both evaluation sets (README, Retrieval evaluation).
    template: str = "auto"
    # Set by CLI flags: win over rag_collections.yaml, where `parser`/`template` only fill gaps.
    force_parser: str | None = None
    force_template: str | None = None
    collections_file: Path | None = None  # default: <data_dir>/rag_collections.yaml
    # all-MiniLM-L6-v2 was trained on 256-token inputs; raise both with a long-context model.
    # IR repairs left out (names in normalize.repairs.REPAIR_NAMES): to measure what each earns
    # (bench/repairs.py) or to get round one that harms a collection.
    repairs_off: list[str] = Field(default_factory=list)
    chunk_max_tokens: int = 256
    chunk_overlap_tokens: int = 32
    docling_artifacts_path: str | None = None
    # Processes parsing the page ranges of a long PDF at once (PyMuPDF): one per core; 1 = off.
    parse_workers: int = Field(default_factory=available_cores, ge=1)
    eval_dir: Path | None = None  # retrieval evaluation sets; default data_dir/eval
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    # Comma-separated ISO 639-1 codes the model covers, "*" for any; unset: judged by its name.
    embedding_languages: str | None = None
    # onnx, onnx-int8 or flag (FlagEmbedding, the reference; always so for BGE-M3).
    embedding_runtime: Runtime = DEFAULT_RUNTIME
    milvus_uri: str | None = None  # default: a Milvus Lite file under data_dir
    milvus_token: str | None = None
    text_analyzer: str = "jieba"  # BM25: "jieba" (Chinese and English alike) or "standard"
    # BM25's k1 and b, fixed when a collection is made; README, Retrieval evaluation.
    bm25_k1: float = Field(default=1.2, ge=0, le=3)
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    fusion: FusionSettings = Field(default_factory=FusionSettings)  # RAG_ASSETS_FUSION_*
    # Symbolic links in the inbox that lead out of it are skipped unless this is on.
    inbox_follow_symlinks: bool = False
    # Larger files fail before they are copied or parsed (a 150 MB text file would embed for hours).
    max_file_mb: float = Field(default=100, gt=0)
    # What one document may expand to or cost once read: pages, archive size, elements.
    limits: DocumentLimits = Field(default_factory=DocumentLimits)  # RAG_ASSETS_MAX_*
    # When the refresh schedule rescans the inbox and settings and runs what is stale (UTC cron).
    refresh_cron: str = "0 2 * * *"
    evaluation_cron: str = "0 4 * * 0"  # the evaluation schedule: weekly, Sunday 04:00 UTC
    # The coverage check warns below this share of the IR's characters inside some chunk.
    chunk_coverage_floor: float = Field(default=0.9, ge=0, le=1)
    # Rerank is off unless a model folder (or cached hub name) or a /rerank endpoint is set.
    # The endpoint's key is read from RAG_ASSETS_RERANK_API_KEY when the client is made, never held here.
    rerank_model: str | None = None  # with rerank_url: the model name sent to the endpoint
    rerank_url: str | None = None  # the full endpoint, e.g. http://127.0.0.1:8080/v1/rerank
    rerank_top_n: int = Field(default=20, ge=1)  # fused hits handed to the reranker
    rerank_timeout_s: float = Field(default=10, gt=0)  # per HTTP attempt
    rerank_max_retries: int = Field(default=2, ge=0)  # on timeouts, connection errors, 408/429/5xx

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

    @classmethod
    def from_env(cls, data_dir: str | Path | None = None) -> Settings:
        root = data_dir or _env("RAG_ASSETS_DATA_DIR") or "data"
        values = {
            "storage_root": _env("RAG_ASSETS_STORAGE_ROOT"),
            "parser": _env("RAG_ASSETS_PARSER"),
            "template": _env("RAG_ASSETS_TEMPLATE"),
            "collections_file": _env("RAG_ASSETS_COLLECTIONS"),
            "repairs_off": _env("RAG_ASSETS_REPAIRS_OFF"),
            "chunk_max_tokens": _env("RAG_ASSETS_CHUNK_MAX_TOKENS"),
            "chunk_overlap_tokens": _env("RAG_ASSETS_CHUNK_OVERLAP_TOKENS"),
            "docling_artifacts_path": _env("RAG_ASSETS_DOCLING_ARTIFACTS"),
            "parse_workers": _env("RAG_ASSETS_PARSE_WORKERS"),
            "eval_dir": _env("RAG_ASSETS_EVAL_DIR"),
            "embedding_model": _env("RAG_ASSETS_EMBEDDING_MODEL"),
            "embedding_languages": _env("RAG_ASSETS_EMBEDDING_LANGUAGES"),
            "embedding_runtime": _env("RAG_ASSETS_EMBEDDING_RUNTIME"),
            "milvus_uri": _env("RAG_ASSETS_MILVUS_URI"),
            "milvus_token": _env("RAG_ASSETS_MILVUS_TOKEN"),
            "text_analyzer": _env("RAG_ASSETS_TEXT_ANALYZER"),
            "bm25_k1": _env("RAG_ASSETS_BM25_K1"),
            "bm25_b": _env("RAG_ASSETS_BM25_B"),
            "fusion": FusionSettings.from_env(),
            "inbox_follow_symlinks": _env("RAG_ASSETS_INBOX_FOLLOW_SYMLINKS"),
            "max_file_mb": _env("RAG_ASSETS_MAX_FILE_MB"),
            "limits": DocumentLimits.from_env(),
            "refresh_cron": _env("RAG_ASSETS_REFRESH_CRON"),
            "evaluation_cron": _env("RAG_ASSETS_EVALUATION_CRON"),
            "chunk_coverage_floor": _env("RAG_ASSETS_CHUNK_COVERAGE_FLOOR"),
            "rerank_model": _env("RAG_ASSETS_RERANK_MODEL"),
            "rerank_url": _env("RAG_ASSETS_RERANK_URL"),
            "rerank_top_n": _env("RAG_ASSETS_RERANK_TOP_N"),
            "rerank_timeout_s": _env("RAG_ASSETS_RERANK_TIMEOUT_S"),
            "rerank_max_retries": _env("RAG_ASSETS_RERANK_MAX_RETRIES"),
        }
        return cls(
            data_dir=Path(root).expanduser().resolve(),
            **{k: v for k, v in values.items() if v is not None},
        )

    @property
    def inbox_dir(self) -> Path:
        return self.data_dir / "inbox"

    @property
    def raw_dir(self) -> Path:
        return self.data_dir / "raw"

    @property
    def collections_path(self) -> Path:
        return self.collections_file or self.data_dir / "rag_collections.yaml"

    @property
    def dagster_home(self) -> Path:
        return self.data_dir / "dagster"

    @property
    def evaluation_dir(self) -> Path:
        return self.eval_dir or self.data_dir / "eval"

    @property
    def asset_storage_root(self) -> str:
        return self.storage_root or str(self.data_dir / "assets")

    @property
    def resolved_milvus_uri(self) -> str:
        return self.milvus_uri or str(self.data_dir / "milvus.db")
