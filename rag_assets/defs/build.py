"""Assemble the Dagster skin from its per-concern modules for one set of settings."""

from __future__ import annotations

import os

from dagster import Definitions, EnvVar, in_process_executor
from pydantic import ValidationError

from rag_assets.defs.assets.chunking import document_chunks, table_markdown
from rag_assets.defs.assets.documents import normalized_documents, parsed_documents, raw_documents
from rag_assets.defs.assets.evaluation import (
    EvaluationResource,
    FusionConfig,
    retrieval_evaluation,
)
from rag_assets.defs.assets.indexing import chunk_embeddings, vector_index
from rag_assets.defs.automation import automation_sensor, eager
from rag_assets.defs.io_managers import JsonIOManagerFactory, ParquetIOManagerFactory
from rag_assets.defs.jobs import evaluate_retrieval, ingest_documents
from rag_assets.defs.observed_sources import observed_sources
from rag_assets.defs.resources import (
    ChunkingConfig,
    CollectionsResource,
    EmbeddingConfig,
    EmbeddingResource,
    InboxResource,
    LLMConfig,
    LLMResource,
    MilvusResource,
    ParserResource,
    ParsingConfig,
)
from rag_assets.defs.schedules import build_evaluation_schedule, build_refresh_schedule
from rag_assets.defs.sensors import (
    build_batch_split_sensor,
    build_checked_part_sensor,
    build_inbox_sensor,
    recovery_sensor,
)
from rag_assets.errors import ConfigurationError
from rag_assets.llm.settings import LLMSettings, VisionSettings
from rag_assets.removal import DataFolder
from rag_assets.settings import Settings
from rag_assets.settings.groups import ChunkingSettings, EmbeddingSettings, ParsingSettings
from rag_assets.sources.collections import load_collections
from rag_assets.sources.template_picks import PICKS_FILE


def _secret(value: str | None, variable: str) -> str | EnvVar | None:
    """A setting that may hold credentials, as Dagster's EnvVar when it came from `variable`:
    the instance then stores the variable's name in run and job snapshots, not its value."""
    if value is not None and value == (os.environ.get(variable) or "").strip():
        return EnvVar(variable)
    return value


def llm_settings(settings: Settings) -> LLMSettings:
    """rag_collections.yaml's `llm:` section under the environment, so CLI and UI agree."""
    file_values = load_collections(settings.collections_path).llm
    try:
        return LLMSettings.from_env(file_values)
    except ValidationError as error:
        detail = error.errors()[0]
        key = ".".join(str(part) for part in detail["loc"])
        raise ConfigurationError(
            f"{settings.collections_path}: invalid `llm:` settings: llm.{key}: {detail['msg']}"
        ) from None
    except ConfigurationError as error:
        raise ConfigurationError(f"{settings.collections_path}: {error}") from None


def build_defs(settings: Settings) -> Definitions:
    root = settings.asset_storage_root.rstrip("/")
    llm = llm_settings(settings)
    return Definitions(
        assets=[
            *observed_sources,
            raw_documents,
            *(
                eager(a)
                for a in (
                    parsed_documents,
                    normalized_documents,
                    table_markdown,
                    document_chunks,
                    chunk_embeddings,
                    vector_index,
                )
            ),
            retrieval_evaluation,
        ],
        jobs=[ingest_documents, evaluate_retrieval],
        # Every run, backfills and automation included, executes its steps in one process: models
        # and parsers load once per run, not once per step.
        executor=in_process_executor,
        sensors=[
            build_inbox_sensor(ingest_documents, DataFolder.of(settings)),
            build_checked_part_sensor(ingest_documents),
            build_batch_split_sensor(ingest_documents),
            automation_sensor,
            recovery_sensor,
        ],
        schedules=[
            build_refresh_schedule(ingest_documents, settings.refresh_cron),
            build_evaluation_schedule(evaluate_retrieval, settings.evaluation_cron),
        ],
        resources={
            "json_io_manager": JsonIOManagerFactory(base_path=root),
            "parquet_io_manager": ParquetIOManagerFactory(base_path=root),
            "inbox": InboxResource(
                inbox_dir=str(settings.inbox_dir),
                raw_dir=str(settings.raw_dir),
                follow_symlinks=settings.inbox_follow_symlinks,
                max_file_mb=settings.max_file_mb,
                **settings.limits.model_dump(),
                batch_documents=settings.batch_documents,
                batch_pages=settings.batch_pages,
            ),
            "parser": ParserResource(
                parsing=ParsingConfig(**settings.group(ParsingSettings).model_dump())
            ),
            "collections": CollectionsResource(
                config_path=str(settings.collections_path),
                parser=settings.parser,
                chunking=ChunkingConfig(**settings.group(ChunkingSettings).model_dump()),
                force_parser=settings.force_parser,
                force_template=settings.force_template,
                picks_path=str(settings.data_dir / PICKS_FILE),
            ),
            "embedding": EmbeddingResource(
                embedding=EmbeddingConfig(**settings.group(EmbeddingSettings).model_dump()),
                vector_store=str(settings.data_dir / "cache" / "vectors"),
            ),
            "llm": LLMResource(
                endpoint=LLMConfig(
                    **{
                        **llm.model_dump(),
                        "base_url": _secret(llm.base_url, "RAG_ASSETS_LLM_BASE_URL"),
                    }
                ),
                **VisionSettings.from_env().model_dump(),
                cache_dir=str(settings.data_dir / "cache"),
            ),
            "evaluation": EvaluationResource(
                eval_dir=str(settings.evaluation_dir),
                storage_root=root,
                fusion=FusionConfig(**settings.fusion.model_dump()),
            ),
            "milvus": MilvusResource.of(settings, _secret),
        },
    )
