"""Each default has one source, its settings group: the resources and the templates' options
take theirs from it, and the definitions hand each resource the settings' values whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import asset, materialize

from rag_assets.defs.assets.evaluation import EvaluationResource
from rag_assets.defs.build import build_defs
from rag_assets.defs.resources import (
    CollectionsResource,
    EmbeddingResource,
    InboxResource,
    LLMResource,
    MilvusResource,
    ParserResource,
)
from rag_assets.embedding.models import EmbeddingSpec
from rag_assets.llm.settings import LLMSettings, VisionSettings
from rag_assets.settings import Settings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.settings.groups import (
    ChunkingSettings,
    EmbeddingSettings,
    IndexSettings,
    ParsingSettings,
)
from rag_assets.templates.base import TemplateOptions


def test_resource_defaults_are_the_settings_groups_defaults() -> None:
    collections = CollectionsResource(config_path="rag_collections.yaml")
    assert collections.chunking.model_dump() == ChunkingSettings().model_dump()
    assert collections.parser == Settings().parser
    assert MilvusResource(uri="milvus.db").index.model_dump() == IndexSettings().model_dump()
    assert LLMResource(cache_dir="cache").settings() == LLMSettings()
    embedding = EmbeddingResource()
    assert embedding.embedding.model_dump() == EmbeddingSettings().model_dump()
    assert embedding.spec() == EmbeddingSpec(model=embedding.model)
    assert ParserResource().parsing.model_dump() == ParsingSettings().model_dump()
    evaluation = EvaluationResource(eval_dir="eval", storage_root="assets")
    assert evaluation.fusion.model_dump() == FusionSettings().model_dump()
    inbox = InboxResource(inbox_dir="inbox", raw_dir="raw", max_file_mb=1)
    assert inbox.follow_symlinks == ParsingSettings().inbox_follow_symlinks


def test_the_llm_resource_has_the_vision_settings_and_their_defaults() -> None:
    llm = LLMResource(cache_dir="cache")
    vision = {name: getattr(llm, name) for name in VisionSettings.model_fields}
    assert vision == VisionSettings().model_dump()
    for name, field in VisionSettings.model_fields.items():
        assert LLMResource.model_fields[name].description == field.description


def test_the_vision_settings_are_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAG_ASSETS_VISION_DPI", "200")
    monkeypatch.setenv("RAG_ASSETS_VISION_PICTURE_TABLES", "true")
    llm = build_defs(Settings(data_dir=tmp_path)).resources["llm"]
    assert (llm.vision_dpi, llm.include_picture_tables) == (200, True)


def test_a_run_config_sets_the_vision_settings_on_the_llm_resource(tmp_path: Path) -> None:
    @asset
    def rendering(llm: LLMResource) -> tuple[int, bool]:
        return llm.vision_dpi, llm.include_picture_tables

    config = {"cache_dir": str(tmp_path), "vision_dpi": 200, "include_picture_tables": True}
    result = materialize(
        [rendering],
        resources={"llm": LLMResource(cache_dir=str(tmp_path))},
        run_config={"resources": {"llm": {"config": config}}},
    )
    assert result.output_for_node("rendering") == (200, True)


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
        parse_workers=3,
        repairs_off=["tables_merged"],
        docling_artifacts_path=str(tmp_path / "docling"),
        embedding_runtime="flag",
        embedded_text="context",
        embedding_languages="en",
    )
    resources = build_defs(settings).resources
    assert resources["collections"].chunking.model_dump() == (
        settings.group(ChunkingSettings).model_dump()
    )
    assert resources["milvus"].index.model_dump() == settings.group(IndexSettings).model_dump()
    assert resources["milvus"].uri == settings.resolved_milvus_uri
    assert resources["evaluation"].fusion.rrf_k == 10
    assert resources["llm"].settings() == LLMSettings()
    assert resources["parser"].parsing.model_dump() == settings.group(ParsingSettings).model_dump()
    assert resources["embedding"].embedding.model_dump() == (
        settings.group(EmbeddingSettings).model_dump()
    )
