"""The whole asset graph on a real ephemeral Dagster instance, the bundled model and Milvus Lite."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance
from upath import UPath

from rag_assets.defs.checks import CHUNK_CHECKS, COVERAGE_CHECKS, EMBEDDING_CHECKS, INDEX_CHECKS
from rag_assets.embedding.models import load_embedder
from rag_assets.index.store import MilvusIndex
from rag_assets.retrieval.search import search
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.storage import read_chunks
from rag_assets.templates import registry
from rag_assets.templates.registry import register_template
from rag_assets.templates.spec import SpecTemplate
from rag_assets_tests.conftest import REPO_ROOT
from rag_assets_tests.support.templates import PagesBeyondTheDocument

pytestmark = pytest.mark.slow

# One result per check of the graph for each document.
CHECKS = len({**CHUNK_CHECKS, **COVERAGE_CHECKS, **EMBEDDING_CHECKS, **INDEX_CHECKS})

CORPUS = REPO_ROOT / "examples" / "corpus"
DOCUMENTS = ["host-controller-spec.pdf", "operator-guide.md", "travel-policy.docx"]
ASSETS = [
    ("raw_documents", "json"),
    ("parsed_documents", "json"),
    ("normalized_documents", "json"),
    ("table_markdown", "parquet"),
    ("document_chunks", "parquet"),
    ("chunk_embeddings", "parquet"),
    ("vector_index", "json"),
]


def index_counts(settings: Settings, doc_ids: list[str]) -> dict[str, int]:
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        (collection,) = index.list_collections()
        return {doc_id: index.count_document(collection, doc_id) for doc_id in doc_ids}


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("data"))
    instance = DagsterInstance.ephemeral()
    load_embedder.cache_clear()  # count this module's model loads only
    outcomes = ingest(settings, [CORPUS / name for name in DOCUMENTS], instance=instance)
    loads = load_embedder.cache_info()
    return SimpleNamespace(settings=settings, instance=instance, outcomes=outcomes, loads=loads)


def test_every_format_goes_through_all_seven_assets(pipeline):
    by_name = {Path(o.source_path).name: o for o in pipeline.outcomes}
    assert set(by_name) == set(DOCUMENTS)
    assert {name: o.parser for name, o in by_name.items()} == {
        "host-controller-spec.pdf": "pymupdf",
        "operator-guide.md": "docling",
        "travel-policy.docx": "docling",
    }
    for outcome in pipeline.outcomes:
        assert outcome.success, outcome.summary()
        assert outcome.checks_total == outcome.checks_passed == CHECKS, outcome.summary()
        assert outcome.chunks > 0
        for asset, extension in ASSETS:
            stored = (
                Path(pipeline.settings.asset_storage_root) / asset / f"{outcome.doc_id}.{extension}"
            )
            assert stored.is_file(), stored
            materializations = pipeline.instance.fetch_materializations(
                AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[outcome.doc_id]),
                limit=1,
            ).records
            assert materializations, f"{asset} not materialized for {outcome.doc_id}"
    counts = index_counts(pipeline.settings, [o.doc_id for o in pipeline.outcomes])
    assert counts == {o.doc_id: o.chunks for o in pipeline.outcomes}
    # The index says whether English questions read a stemmed copy (a new collection: yes).
    for outcome in pipeline.outcomes:
        (indexed,) = pipeline.instance.fetch_materializations(
            AssetRecordsFilter(
                asset_key=AssetKey("vector_index"), asset_partitions=[outcome.doc_id]
            ),
            limit=1,
        ).records
        metadata = indexed.asset_materialization.metadata
        assert metadata["english_bm25_copy"].value is True


def test_chunks_carry_structure_and_tables(pipeline):
    chunks = read_chunks(pipeline.settings, "host-controller-spec.pdf")
    timeout = [c for c in chunks if c.headings and c.headings[-1].startswith("2.1.1")]
    assert timeout and timeout[0].header_path == "/2 Register Map/2.1 Host Control Register/"
    assert any(c.chunk_type == "table" or c.metadata.get("contains_table") for c in chunks)
    guide = read_chunks(pipeline.settings, "operator-guide.md")
    # The `#` shell comments inside fenced code never become headings.
    bodiless = {"Installation", "Configuration", "Troubleshooting"}
    headings = {
        "ASHC Driver Operator Guide",
        *bodiless,
        "Requirements",
        "Loading the driver",
        "Module parameters",
        "Debug logging",
        "Monitoring",
        "Card not detected",
        "Data timeout errors",
        "Resetting the controller",
    }
    assert {h for c in guide for h in c.headings} == headings
    # A heading with no body of its own lives on only in the breadcrumbs below it.
    assert {c.headings[-1] for c in guide if c.headings} == headings - bodiless


def test_query_returns_cited_hits(pipeline):
    hits = search(
        pipeline.settings, "What do bits 15:8 of the Host Control Register hold?", top_k=3
    ).hits
    assert all(h.source_path.endswith("host-controller-spec.pdf") for h in hits)
    # `auto` chunks the spec with `spec`: the register row holding the answer is first or
    # second, after the conventions section explaining bit ranges (`1.3 Conventions`).
    answer = next(h for h in hits[:2] if "Timeout Counter" in h.text)
    assert answer.page_start and answer.header_path.startswith("/2 Register Map/")
    policy = search(
        pipeline.settings, "Which class can I book for a four hour flight?", top_k=3
    ).hits
    assert any(h.source_path.endswith("travel-policy.docx") for h in policy)


def test_rematerializing_gives_identical_chunks_and_rows(pipeline):
    doc_ids = [o.doc_id for o in pipeline.outcomes]
    before = {d: [c.chunk_id for c in read_chunks(pipeline.settings, d)] for d in doc_ids}
    again = ingest(
        pipeline.settings, [CORPUS / name for name in DOCUMENTS], instance=pipeline.instance
    )
    assert all(o.success for o in again)
    after = {d: [c.chunk_id for c in read_chunks(pipeline.settings, d)] for d in doc_ids}
    assert after == before
    assert index_counts(pipeline.settings, doc_ids) == {d: len(ids) for d, ids in before.items()}


def test_a_copy_of_a_document_reuses_the_stored_vectors_of_its_texts(pipeline, tmp_path):
    copy = tmp_path / "operator-guide-copy.md"
    copy.write_bytes((CORPUS / "operator-guide.md").read_bytes())
    (outcome,) = ingest(pipeline.settings, [copy], instance=pipeline.instance)
    assert outcome.success
    record = pipeline.instance.fetch_materializations(
        AssetRecordsFilter(AssetKey("chunk_embeddings"), asset_partitions=[outcome.doc_id]),
        limit=1,
    ).records[0]
    metadata = {k: v.value for k, v in record.asset_materialization.metadata.items()}
    assert metadata["vector_store"] == "ok"
    assert metadata["texts_embedded"] == 0
    assert metadata["texts_from_store"] + metadata["texts_repeated"] == metadata["vectors"] > 0


def test_bad_input_fails_its_own_partition_only(pipeline, tmp_path):
    doc_ids = [o.doc_id for o in pipeline.outcomes]
    counts_before = index_counts(pipeline.settings, doc_ids)
    (tmp_path / "truncated.pdf").write_bytes(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog")
    (tmp_path / "empty.docx").write_bytes(b"")
    (tmp_path / "fine.md").write_text("# Fine\n\nA document that must still land.\n")
    outcomes = {
        Path(o.source_path).name: o
        for o in ingest(
            pipeline.settings,
            [tmp_path / "truncated.pdf", tmp_path / "empty.docx", tmp_path / "fine.md"],
            instance=pipeline.instance,
        )
    }
    assert outcomes["fine.md"].success
    assert (
        not outcomes["truncated.pdf"].success and "truncated.pdf" in outcomes["truncated.pdf"].error
    )
    assert not outcomes["empty.docx"].success and "empty" in outcomes["empty.docx"].error
    counts = index_counts(
        pipeline.settings,
        [*doc_ids, outcomes["truncated.pdf"].doc_id, outcomes["empty.docx"].doc_id],
    )
    assert counts == {
        **counts_before,
        outcomes["truncated.pdf"].doc_id: 0,
        outcomes["empty.docx"].doc_id: 0,
    }


def test_a_failed_blocking_check_stops_the_document_before_the_index(tmp_path, monkeypatch):
    # The registry is process-wide: a copy for this test keeps the broken template out of others.
    monkeypatch.setattr(registry, "_templates", dict(registry._templates))
    register_template("broken_pages", PagesBeyondTheDocument)
    settings = Settings(data_dir=tmp_path, template="broken_pages")
    instance = DagsterInstance.ephemeral()
    (outcome,) = ingest(settings, [CORPUS / "host-controller-spec.pdf"], instance=instance)
    assert not outcome.success
    assert outcome.failed_checks == ["pages_within_document"]
    for downstream in ("chunk_embeddings", "vector_index"):
        assert not instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey(downstream), asset_partitions=[outcome.doc_id]),
            limit=1,
        ).records


def test_the_model_loads_once_for_many_documents(pipeline):
    # Three documents embedded and indexed in one batch: one load, the later use a cache hit.
    assert pipeline.loads.misses == 1
    assert pipeline.loads.hits >= 1


def test_asset_storage_works_on_any_upath_root(tmp_path):
    """The same graph with partitions stored on a non-local filesystem (fsspec's memory://)."""
    settings = Settings(data_dir=tmp_path, storage_root="memory://rag-assets-test")
    guide = tmp_path / "guide.md"
    guide.write_text("# Guide\n\n## Pumps\n\nPrime the pump before the first start.\n")
    (outcome,) = ingest(settings, [guide], instance=DagsterInstance.ephemeral())
    assert outcome.success, outcome.summary()
    stored = UPath("memory://rag-assets-test")
    assert (stored / "document_chunks" / f"{outcome.doc_id}.parquet").exists()
    assert not (tmp_path / "assets").exists()
    assert [c.doc_id for c in read_chunks(settings, "guide.md")] == [
        outcome.doc_id
    ] * outcome.chunks


def test_auto_gives_the_spec_its_rows_glossary_and_structure(tmp_path):
    settings = Settings(data_dir=tmp_path, template="auto")
    instance = DagsterInstance.ephemeral()
    (outcome,) = ingest(settings, [CORPUS / "host-controller-spec.pdf"], instance=instance)
    assert outcome.success and outcome.checks_passed == CHECKS, outcome.summary()
    assert outcome.template == f"spec v{SpecTemplate.version}"
    chunks = read_chunks(settings, "host-controller-spec.pdf")
    rows = [c for c in chunks if c.chunk_type == "table_row"]
    assert any("15:8" in c.text and "Timeout Counter Value" in c.text for c in rows)
    assert {c.metadata["term"] for c in chunks if c.chunk_type == "glossary"} >= {
        "ADMA",
        "Block Gap",
    }
    (record,) = instance.fetch_materializations(
        AssetRecordsFilter(
            asset_key=AssetKey("document_chunks"), asset_partitions=[outcome.doc_id]
        ),
        limit=1,
    ).records
    metadata = record.asset_materialization.metadata
    assert metadata["template_reason"].value.startswith("auto:")
    structure = metadata["document_structure"].value
    assert structure["xrefs"]["Table 3"]["page"] == 2
