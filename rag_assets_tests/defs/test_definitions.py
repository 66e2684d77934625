"""The code location loads and its wiring is what the design says."""

from dagster import (
    AssetKey,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    DynamicPartitionsDefinition,
)

from rag_assets.defs.build import build_defs
from rag_assets.settings import Settings
from rag_assets.templates.fixed import FixedTemplate
from rag_assets.templates.registry import templates_version
from rag_assets.templates.semantic import SemanticTemplate

OBSERVED_SOURCES = [
    "inbox_files",
    "parser_settings",
    "template_settings",
    "normalize_settings",
    "vision_settings",
    "embedding_settings",
    "index_settings",
]
ASSETS = [
    "raw_documents",
    "parsed_documents",
    "normalized_documents",
    "table_markdown",
    "document_chunks",
    "chunk_embeddings",
    "vector_index",
]


def test_definitions_module_loads(monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_ASSETS_DATA_DIR", str(tmp_path))
    from rag_assets.definitions import defs

    Definitions.validate_loadable(defs)


def test_every_asset_is_partitioned_per_document_with_a_code_version(tmp_path):
    graph = build_defs(Settings(data_dir=tmp_path)).resolve_asset_graph()
    for name in ASSETS:
        node = graph.get(AssetKey(name))
        assert isinstance(node.partitions_def, DynamicPartitionsDefinition), name
        assert node.partitions_def.name == "documents"
        assert node.code_version, name
    upstream = {
        name: {k.to_user_string() for k in graph.get(AssetKey(name)).parent_keys} for name in ASSETS
    }
    # Besides its parents, each step reads an observed source: the file or the settings it uses.
    assert upstream["raw_documents"] == {"inbox_files"}
    assert upstream["parsed_documents"] == {"raw_documents", "parser_settings"}
    assert upstream["normalized_documents"] == {
        "raw_documents",
        "parsed_documents",
        "normalize_settings",
    }
    assert upstream["document_chunks"] == {
        "normalized_documents",
        "table_markdown",
        "template_settings",
    }
    assert upstream["table_markdown"] == {
        "raw_documents",
        "normalized_documents",
        "vision_settings",
    }
    assert upstream["chunk_embeddings"] == {"document_chunks", "embedding_settings"}
    assert upstream["vector_index"] == {"document_chunks", "chunk_embeddings", "index_settings"}
    for name in OBSERVED_SOURCES:
        assert graph.get(AssetKey(name)).is_observable, name


def test_template_versions_are_the_chunks_code_version(tmp_path):
    node = (
        build_defs(Settings(data_dir=tmp_path))
        .resolve_asset_graph()
        .get(AssetKey("document_chunks"))
    )
    assert node.code_version == templates_version()
    assert {f"fixed:{FixedTemplate.version}", f"semantic:{SemanticTemplate.version}"} <= set(
        node.code_version.split(",")
    )


def test_chunk_and_embedding_checks_block_and_the_index_is_pooled(tmp_path):
    defs = build_defs(Settings(data_dir=tmp_path))
    graph = defs.resolve_asset_graph()
    blocking = {key.name: graph.get_check_spec(key).blocking for key in graph.asset_check_keys}
    assert blocking == {
        "chunk_metadata_complete": True,
        "chunk_ids_unique_deterministic": True,
        "header_paths_consistent": True,
        "pages_within_document": True,
        "chunks_have_content": True,
        "chunks_cover_document": False,
        "embeddings_valid": True,
        "index_rows_match_chunks": False,
        "chunks_find_themselves": False,
        "collection_chunks_find_themselves": False,
        "metrics_above_floors": False,
    }
    assert defs.resolve_job_def("ingest_documents").executor_def.name == "in_process"
    assert defs.get_assets_def("vector_index").op.pool == "milvus"


def test_every_check_is_partitioned_per_document(tmp_path):
    graph = build_defs(Settings(data_dir=tmp_path)).resolve_asset_graph()
    for key in graph.asset_check_keys:
        if key.asset_key.to_user_string() not in ASSETS:
            continue  # retrieval_evaluation is one for all documents
        partitions_def = graph.get_check_spec(key).partitions_def
        assert isinstance(partitions_def, DynamicPartitionsDefinition), key
        assert partitions_def.name == "documents"


def test_llm_steps_share_a_pool(tmp_path):
    defs = build_defs(Settings(data_dir=tmp_path))
    assert defs.get_assets_def("table_markdown").op.pool == "llm"
    assert defs.get_assets_def("document_chunks").op.pool == "llm"


def test_automation_is_on_by_default(tmp_path):
    settings = Settings(data_dir=tmp_path, refresh_cron="30 3 * * 1")
    defs = build_defs(settings)
    graph = defs.resolve_asset_graph()
    conditions = {name: graph.get(AssetKey(name)).automation_condition for name in ASSETS}
    assert conditions.pop("raw_documents") is None  # the inbox sensor starts documents
    assert all(c is not None and "eager" in c.get_label() for c in conditions.values())
    sensors = {s.name: s for s in defs.sensors}
    assert sensors["inbox_sensor"].default_status == DefaultSensorStatus.RUNNING
    assert sensors["automation_sensor"].default_status == DefaultSensorStatus.RUNNING
    schedules = {s.name: s for s in defs.schedules}
    assert schedules["refresh_schedule"].cron_schedule == "30 3 * * 1"
    assert Settings(data_dir=tmp_path).refresh_cron == "0 2 * * *"  # nightly
    assert schedules["evaluation_schedule"].job_name == "evaluate_retrieval"
    assert {s.default_status for s in schedules.values()} == {DefaultScheduleStatus.RUNNING}
    evaluation = defs.resolve_job_def("evaluate_retrieval")
    assert evaluation.asset_layer.executable_asset_keys == {AssetKey("retrieval_evaluation")}
    ingest = defs.resolve_job_def("ingest_documents")
    assert {k.to_user_string() for k in ingest.asset_layer.executable_asset_keys} == set(ASSETS)
