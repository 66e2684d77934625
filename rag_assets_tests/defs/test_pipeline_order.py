"""A document's run is ordered by the asset graph: the derived order is the one the pipeline has
always run in, it holds every asset partitioned by document, and an added asset takes its place."""

from __future__ import annotations

from dagster import AssetKey, asset

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.build import build_defs
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.pipeline import pipeline_order
from rag_assets.settings import Settings

RUN_ORDER = [
    "raw_documents",
    "parsed_documents",
    "normalized_documents",
    "table_markdown",
    "document_chunks",
    "chunk_embeddings",
    "vector_index",
]


def test_the_derived_order_is_the_run_order() -> None:
    assert PIPELINE == RUN_ORDER


def test_every_asset_partitioned_by_document_is_a_step(tmp_path) -> None:
    graph = build_defs(Settings(data_dir=tmp_path)).resolve_asset_graph()
    per_document = {
        node.key.to_user_string()
        for node in graph.asset_nodes
        if node.is_materializable and node.partitions_def == documents_partitions
    }
    assert per_document == set(PIPELINE)
    assert pipeline_order(graph.assets_defs) == PIPELINE


def test_an_added_asset_takes_its_place_after_what_it_reads(tmp_path) -> None:
    @asset(partitions_def=documents_partitions, deps=[AssetKey("normalized_documents")])
    def document_summary() -> None: ...

    @asset(deps=[AssetKey("document_chunks")])
    def collection_report() -> None: ...

    graph = build_defs(Settings(data_dir=tmp_path)).resolve_asset_graph()
    order = pipeline_order([*graph.assets_defs, document_summary, collection_report])
    assert order.index("document_summary") > order.index("normalized_documents")
    assert "collection_report" not in order  # not partitioned by document: not a step
    assert [a for a in order if a != "document_summary"] == RUN_ORDER
