"""An ingest of many short documents runs them in batches: a run per batch part, not per
document, with exactly the chunks, vectors and index rows one run per document makes; a
document failing inside a batch fails alone, on its own partition, with its own reason."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import yaml
from dagster import AssetKey, DagsterEventType, DagsterRunStatus, RunsFilter

from rag_assets.defs.dagster_private import DATA_VERSION_TAG, PARTITION_NAME_TAG
from rag_assets.defs.status import document_status, documents_status, latest_metadata
from rag_assets.index.store import MilvusIndex
from rag_assets.instance import open_instance
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.templates import registry
from rag_assets.templates.registry import register_template
from rag_assets_tests.support.templates import PagesBeyondTheDocument

pytestmark = pytest.mark.slow

NOTES = 44
BROKEN = "note-20b.pdf"  # between good documents: it sits inside a batch's range


def _inbox(root):
    folder = root / "notes"
    folder.mkdir(parents=True)
    for i in range(NOTES):
        (folder / f"note-{i:02}.md").write_text(
            f"# Note {i}\n\n## Pump {i}\n\nService pump {i} every {100 + i} hours.\n\n"
            f"## Valve {i}\n\nReplace valve seal {i} after {2000 + i} cycles.\n"
        )
    (folder / BROKEN).write_bytes(b"%PDF-1.4\nnot really a pdf")
    return folder


def _ingest(root, batch_documents: int):
    settings = Settings(data_dir=root / "data", batch_documents=batch_documents)
    outcomes = ingest(settings, [_inbox(root)])
    return settings, {o.source_path.rsplit("/", 1)[-1]: o for o in outcomes}


def _made(settings: Settings) -> dict[str, object]:
    """Every document's stored chunks and vectors, and its rows in the index."""
    assets = settings.data_dir / "assets"
    made = {}
    for asset in ("document_chunks", "chunk_embeddings"):
        for path in sorted((assets / asset).glob("*.parquet")):
            made[f"{asset}/{path.stem}"] = pq.read_table(path).to_pylist()
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        (collection,) = index.list_collections()
        rows = index.scan(collection, ["chunk_id", "doc_id", "text", "dense"])
    made["index"] = sorted(
        ({**r, "dense": [round(v, 5) for v in r["dense"]]} for r in rows),
        key=lambda r: r["chunk_id"],
    )
    return made


def _content_versions(settings: Settings) -> dict[str, dict[str, str]]:
    instance = open_instance(settings)
    keys = instance.get_dynamic_partitions("documents")
    versions = {}
    # (the raw record and the parse name the data folder's paths: their versions differ by folder)
    for asset in ("table_markdown", "document_chunks"):
        tags = instance.event_log_storage.get_latest_tags_by_partition(
            AssetKey(asset), DagsterEventType.ASSET_MATERIALIZATION, [DATA_VERSION_TAG], keys
        )
        versions[asset] = {key: t[DATA_VERSION_TAG] for key, t in tags.items()}
    return versions


def test_a_batched_ingest_makes_what_one_run_a_document_makes(tmp_path, monkeypatch):
    from rag_assets.defs.event_log_storage import DocumentsEventLogStorage

    check_reads: list[object] = []
    read_checks = DocumentsEventLogStorage.get_asset_check_partition_info
    monkeypatch.setattr(
        DocumentsEventLogStorage,
        "get_asset_check_partition_info",
        lambda self, *a, **k: check_reads.append(a) or read_checks(self, *a, **k),
    )
    batched, by_name = _ingest(tmp_path / "batched", batch_documents=20)
    monkeypatch.undo()
    # A batch's outcomes read the checks its runs did not evaluate at once, not a document
    # at a time (the receipt's reading after the ingest among them).
    assert len(check_reads) <= 10
    alone, _ = _ingest(tmp_path / "alone", batch_documents=1)

    good = [o for name, o in by_name.items() if name != BROKEN]
    assert len(good) == NOTES and all(o.success and o.chunks > 0 for o in good)
    broken = by_name[BROKEN]
    assert not broken.success
    assert "note-20b.pdf" in broken.error and "documents failed" not in broken.error

    assert _made(batched) == _made(alone)
    # Each document's content version is its own, as alone: one re-made identically in a batch
    # leaves its children fresh.
    assert _content_versions(batched) == _content_versions(alone)

    instance = open_instance(batched)
    runs = instance.get_runs()
    # 45 documents: batches of at most 20 in two parts each, plus the failed batch's split.
    assert len(runs) <= 2 * 4 + 2
    # The broken document's failure is its own run's, on its own partition.
    failed = instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.FAILURE]))
    alone_failures = [r for r in failed if PARTITION_NAME_TAG in r.tags]
    assert [r.tags[PARTITION_NAME_TAG] for r in alone_failures] == [by_name[BROKEN].doc_id]
    # Each document's materializations carry its own metadata and check results.
    for name, outcome in by_name.items():
        if name == BROKEN:
            continue
        raw = latest_metadata(instance, "raw_documents", outcome.doc_id)
        assert raw["source_path"] == outcome.source_path
        assert outcome.checks_total == 10, name
    indexed = instance.get_materialized_partitions(AssetKey("vector_index"))
    assert indexed == {o.doc_id for o in good}
    assert document_status(instance, good[0].doc_id).outcome == "ok"
    assert document_status(instance, broken.doc_id).outcome == "FAILED"
    # `status` reads each run's events once, not once for each document the run carried.
    read_runs: list[str] = []
    all_logs = instance.all_logs
    monkeypatch.setattr(
        instance,
        "all_logs",
        lambda run_id, **kw: read_runs.append(run_id) or all_logs(run_id, **kw),
    )
    statuses = {s.doc_id: s for s in documents_status(instance)}
    monkeypatch.undo()
    assert len(read_runs) == len(set(read_runs)) <= len(runs)
    assert {k: s.outcome for k, s in statuses.items()} == {
        o.doc_id: "ok" if o.success else "FAILED" for o in by_name.values()
    }
    assert statuses[broken.doc_id].reason and statuses[good[0].doc_id].chunks == good[0].chunks

    # Mended, the document lands alone; then an unchanged ingest starts no run at all.
    folder = tmp_path / "batched" / "notes"
    pymupdf = pytest.importorskip("pymupdf")
    with pymupdf.open() as pdf:
        pdf.new_page().insert_text((72, 72), "Compressor 20b runs at 4,000 rpm.")
        pdf.save(folder / BROKEN)
    before = len(instance.get_runs())
    mended = ingest(batched, [folder])
    assert [o.doc_id for o in mended if o.ran] == [broken.doc_id]
    assert all(o.success for o in mended)
    assert document_status(instance, broken.doc_id).outcome == "ok"
    assert len(instance.get_runs()) == before + 2
    again = ingest(batched, [folder])
    assert all(o.success and not o.ran for o in again)
    assert len(instance.get_runs()) == before + 2


def test_a_blocking_check_failing_in_a_batch_stops_that_document_alone(tmp_path, monkeypatch):
    pymupdf = pytest.importorskip("pymupdf")
    # The registry is process-wide: a copy for this test keeps the broken template out of others.
    monkeypatch.setattr(registry, "_templates", dict(registry._templates))
    register_template("broken_pages", PagesBeyondTheDocument)
    settings = Settings(data_dir=tmp_path / "data")
    settings.collections_path.parent.mkdir(parents=True)
    settings.collections_path.write_text(
        yaml.safe_dump(
            {"collections": [{"name": "broken", "match": ["**/b.pdf"], "template": "broken_pages"}]}
        )
    )
    folder = tmp_path / "manuals"
    folder.mkdir()
    for name in ("a", "b", "c", "d"):
        with pymupdf.open() as pdf:
            pdf.new_page().insert_text((72, 72), f"Manual {name}: grease bearing {name} weekly.")
            pdf.save(folder / f"{name}.pdf")
    outcomes = {o.source_path[-5:]: o for o in ingest(settings, [folder])}
    good = [outcomes[name].doc_id for name in ("a.pdf", "c.pdf", "d.pdf")]
    assert all(outcomes[name].success for name in ("a.pdf", "c.pdf", "d.pdf"))
    assert not outcomes["b.pdf"].success
    assert outcomes["b.pdf"].failed_checks == ["pages_within_document"]
    instance = open_instance(settings)
    assert instance.get_materialized_partitions(AssetKey("chunk_embeddings")) == set(good)
    # The batch's landing run, its checked run failing naming b, then b alone, a, and c with d.
    assert len(instance.get_runs()) == 5
