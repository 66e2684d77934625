"""The code location loads and its wiring is what the design says."""

from dagster import AssetKey, Definitions, DynamicPartitionsDefinition

from rag_assets.defs.build import build_defs
from rag_assets.settings import Settings
from rag_assets.templates.registry import templates_version

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
    assert upstream["document_chunks"] == {
        "raw_documents",
        "normalized_documents",
        "table_markdown",
    }
    assert upstream["table_markdown"] == {"raw_documents", "normalized_documents"}
    assert upstream["vector_index"] == {"document_chunks", "chunk_embeddings"}


def test_template_versions_are_the_chunks_code_version(tmp_path):
    node = (
        build_defs(Settings(data_dir=tmp_path))
        .resolve_asset_graph()
        .get(AssetKey("document_chunks"))
    )
    assert node.code_version == templates_version()
    assert {"fixed:1", "semantic:1"} <= set(node.code_version.split(","))


def test_chunk_and_embedding_checks_block_and_the_index_is_pooled(tmp_path):
    defs = build_defs(Settings(data_dir=tmp_path))
    graph = defs.resolve_asset_graph()
    blocking = {key.name: graph.get_check_spec(key).blocking for key in graph.asset_check_keys}
    assert blocking == {
        "chunk_metadata_complete": True,
        "chunk_ids_unique_deterministic": True,
        "header_paths_consistent": True,
        "pages_within_document": True,
        "embeddings_valid": True,
        "index_rows_match_chunks": False,
        "chunks_find_themselves": False,
    }
    assert defs.resolve_job_def("ingest_documents").executor_def.name == "in_process"
    assert defs.get_assets_def("vector_index").op.pool == "milvus"
