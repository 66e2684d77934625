"""Each default has one source, its settings group: the resources and the templates' options
take theirs from it, and the definitions hand each resource the settings' values whole."""

from __future__ import annotations

from pathlib import Path

from rag_assets.defs.assets.evaluation import EvaluationResource
from rag_assets.defs.build import build_defs
from rag_assets.defs.resources import (
    CollectionsResource,
    EmbeddingResource,
    LLMResource,
    MilvusResource,
)
from rag_assets.llm.settings import LLMSettings
from rag_assets.settings import Settings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.settings.groups import ChunkingSettings, EmbeddingSettings, IndexSettings
from rag_assets.templates.base import TemplateOptions


def test_resource_defaults_are_the_settings_groups_defaults() -> None:
    collections = CollectionsResource(config_path="rag_collections.yaml")
    assert collections.chunking.model_dump() == ChunkingSettings().model_dump()
    assert collections.parser == Settings().parser
    assert MilvusResource(uri="milvus.db").index.model_dump() == IndexSettings().model_dump()
    assert LLMResource(cache_dir="cache").settings() == LLMSettings()
    assert EmbeddingResource(model="m").runtime == EmbeddingSettings().embedding_runtime
    evaluation = EvaluationResource(eval_dir="eval", storage_root="assets")
    assert evaluation.fusion.model_dump() == FusionSettings().model_dump()


def test_template_options_default_to_the_chunking_settings() -> None:
    options, chunking = TemplateOptions(), ChunkingSettings()
    assert (options.max_tokens, options.overlap_tokens) == (
        chunking.chunk_max_tokens,
        chunking.chunk_overlap_tokens,
    )


def test_the_definitions_hand_each_resource_its_settings_group(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        chunk_max_tokens=400,
        chunk_coverage_floor=0.5,
        bm25_k1=0.9,
        text_analyzer="standard",
        fusion=FusionSettings(rrf_k=10),
    )
    resources = build_defs(settings).resources
    assert resources["collections"].chunking.model_dump() == (
        settings.group(ChunkingSettings).model_dump()
    )
    assert resources["milvus"].index.model_dump() == settings.group(IndexSettings).model_dump()
    assert resources["milvus"].uri == settings.resolved_milvus_uri
    assert resources["evaluation"].fusion.rrf_k == 10
    assert resources["llm"].settings() == LLMSettings()
