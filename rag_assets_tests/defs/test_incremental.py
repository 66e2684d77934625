"""Incremental ingest on a real instance: only what is stale runs, unchanged documents cost no run."""

import shutil

import pytest
import yaml
from dagster import AssetKey, AssetObservation, DagsterEventType, DagsterInstance
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import (
    DATA_VERSION_TAG,
    CachingStaleStatusResolver,
    StaleStatus,
)
from dagster._time import get_current_datetime

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.build import build_defs
from rag_assets.defs.change_reports import report_changes
from rag_assets.defs.run_plan import _fresh_documents, _latest_ids, plan_runs
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.sources.inbox import scan_folder
from rag_assets.storage import read_chunks

pytestmark = pytest.mark.slow

DOWNSTREAM_OF_CHUNKS = ("document_chunks", "chunk_embeddings", "vector_index")


@pytest.fixture
def ingested(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    sources = tmp_path / "docs"
    sources.mkdir()
    (sources / "pumps.md").write_text(
        "# Pumps\n\n## Priming\n\nPrime the pump before the first start.\n\n"
        "## Seals\n\nReplace the seal every 4000 hours.\n"
    )
    (sources / "valves.md").write_text("# Valves\n\n## Checks\n\nTest each valve monthly.\n")
    instance = DagsterInstance.ephemeral()
    first = ingest(settings, [sources], instance=instance)
    assert all(o.success and o.ran == tuple(PIPELINE) for o in first), [o.summary() for o in first]
    return settings, sources, instance, {o.source_path.split("/")[-1]: o for o in first}


def fresh_both_ways(settings: Settings, instance) -> tuple[set[str], set[str]]:
    """Documents all fresh by the batch reads, and by Dagster's resolver asked one by one."""
    graph = build_defs(settings).resolve_asset_graph()
    keys = [f.partition_key for f in scan_folder(settings.inbox_dir).files]
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    resolver = CachingStaleStatusResolver(instance, graph, view)
    by_dagster = {
        k
        for k in keys
        if all(resolver.get_status(AssetKey(a), k) == StaleStatus.FRESH for a in PIPELINE)
    }
    latest = _latest_ids(instance, list(PIPELINE), keys)
    return _fresh_documents(instance, graph, keys, latest), by_dagster


def test_a_new_documents_plan_is_every_step_missing_as_dagster_says(ingested, monkeypatch):
    settings, _, instance, _ = ingested
    (settings.inbox_dir / "seals.md").write_text("# Seals\n\nReplace them yearly.\n")
    defs = build_defs(settings)
    graph = defs.resolve_asset_graph()
    new = next(f for f in scan_folder(settings.inbox_dir).files if f.relative_path == "seals.md")
    instance.add_dynamic_partitions("documents", [new.partition_key])
    report_changes(instance, defs.resources, [new])
    # Planned from the batch reads alone: the resolver is not asked about a new document.
    with monkeypatch.context() as patched:
        patched.setattr(CachingStaleStatusResolver, "get_status", None)
        (plan,) = plan_runs(instance, graph, [new.partition_key])
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    resolver = CachingStaleStatusResolver(instance, graph, view)
    assert all(
        resolver.get_status(AssetKey(a), new.partition_key) == StaleStatus.MISSING for a in PIPELINE
    )
    assert plan.assets == tuple(PIPELINE)
    assert plan.reasons == tuple(f"{a} missing" for a in PIPELINE)


def stored_files(settings: Settings) -> dict[str, int]:
    root = settings.data_dir / "assets"
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_unchanged_reingest_runs_nothing_and_rewrites_nothing(ingested):
    settings, sources, instance, first = ingested
    assert fresh_both_ways(settings, instance) == ({o.doc_id for o in first.values()},) * 2
    runs_before = instance.get_runs_count()
    files_before = stored_files(settings)
    again = ingest(settings, [sources], instance=instance)
    assert instance.get_runs_count() == runs_before
    assert stored_files(settings) == files_before
    for outcome in again:
        assert outcome.success and outcome.ran == (), outcome.summary()
        assert outcome.summary().endswith("unchanged")
        name = outcome.source_path.split("/")[-1]
        # Reported from the stored materializations and the per-document check results.
        assert (outcome.parser, outcome.template, outcome.chunks) == (
            first[name].parser,
            first[name].template,
            first[name].chunks,
        )
        assert outcome.checks_total == first[name].checks_total > 0
        assert outcome.checks_passed == first[name].checks_passed
        assert outcome.warned_checks == first[name].warned_checks and not outcome.failed_checks


def test_a_template_change_for_one_document_reruns_its_chunks_and_below_only(ingested):
    settings, sources, instance, _ = ingested
    settings.collections_path.write_text(
        yaml.safe_dump(
            {"collections": [{"name": "pumps", "match": ["**/pumps.md"], "template": "fixed"}]}
        )
    )
    defs = build_defs(settings)
    files = scan_folder(settings.inbox_dir).files
    assert report_changes(instance, defs.resources, files) == 1  # pumps' template settings
    plans = {
        p.partition_key: p
        for p in plan_runs(instance, defs.resolve_asset_graph(), [f.partition_key for f in files])
    }
    pumps = next(f.partition_key for f in files if f.relative_path.endswith("pumps.md"))
    valves = next(f.partition_key for f in files if f.relative_path.endswith("valves.md"))
    assert plans[pumps].assets == DOWNSTREAM_OF_CHUNKS
    assert "template_settings" in plans[pumps].reasons[0]
    assert plans[valves].assets == ()
    assert fresh_both_ways(settings, instance) == ({valves}, {valves})

    again = {o.doc_id: o for o in ingest(settings, [sources], instance=instance)}
    assert again[pumps].ran == DOWNSTREAM_OF_CHUNKS and again[pumps].success
    assert again[pumps].template.startswith("fixed")
    assert again[valves].ran == ()
    assert {c.template for c in read_chunks(settings, pumps)} == {"fixed"}


def test_a_collections_own_vocabulary_pack_edited_rechunks_its_documents(ingested, tmp_path):
    settings, _, instance, _ = ingested
    pack = tmp_path / "maintenance.yaml"
    pack.write_text(
        "name: maintenance\nmetadata_key: maintenance_task\nsections:\n"
        "  - {kind: seal change, titles: ['\\bseals?\\b'], names: seal change}\n"
    )
    settings.collections_path.write_text(
        yaml.safe_dump(
            {
                "collections": [
                    {
                        "name": "pumps",
                        "match": ["**/pumps.md"],
                        "options": {"vocabularies": [str(pack)]},
                    }
                ]
            }
        )
    )
    files = scan_folder(settings.inbox_dir).files
    assert report_changes(instance, build_defs(settings).resources, files) == 1  # pumps' options
    assert report_changes(instance, build_defs(settings).resources, files) == 0
    pack.write_text(pack.read_text().replace("names: seal change", "names: seal replacement"))
    assert report_changes(instance, build_defs(settings).resources, files) == 1  # the pack


def test_a_changed_file_reruns_its_own_partition(ingested):
    settings, sources, instance, first = ingested
    (sources / "valves.md").write_text("# Valves\n\n## Checks\n\nTest each valve weekly.\n")
    shutil.copyfile(sources / "valves.md", settings.inbox_dir / "docs" / "valves.md")
    files = scan_folder(settings.inbox_dir).files
    assert report_changes(instance, build_defs(settings).resources, files) == 1
    pumps = first["pumps.md"].doc_id
    assert fresh_both_ways(settings, instance) == ({pumps}, {pumps})
    again = {
        o.source_path.split("/")[-1]: o for o in ingest(settings, [sources], instance=instance)
    }
    assert again["valves.md"].ran == tuple(PIPELINE)
    assert again["pumps.md"].ran == ()
    graph = build_defs(settings).resolve_asset_graph()
    (plan,) = plan_runs(instance, graph, [first["valves.md"].doc_id])
    assert plan.assets == ()
    assert "weekly" in " ".join(c.text for c in read_chunks(settings, first["valves.md"].doc_id))


def test_a_failed_document_runs_again_in_full(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"not a pdf")
    instance = DagsterInstance.ephemeral()
    (first,) = ingest(settings, [broken], instance=instance)
    assert not first.success
    graph = build_defs(settings).resolve_asset_graph()
    (plan,) = plan_runs(instance, graph, [first.doc_id])
    assert plan.assets == tuple(PIPELINE)
    (again,) = ingest(settings, [broken], instance=instance)
    # Planned in full; a file raw_documents refuses runs that step alone (defs/landing.py).
    assert not again.success and again.ran == ("raw_documents",)
    assert instance.get_runs_count() == 2


def test_a_source_observed_again_unchanged_is_left_to_dagster_and_stays_fresh(ingested):
    settings, _, instance, first = ingested
    pumps, valves = first["pumps.md"].doc_id, first["valves.md"].doc_id
    # What the UI's "Observe" does: a newer observation, with the same version.
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        AssetKey("inbox_files"), DagsterEventType.ASSET_OBSERVATION, [DATA_VERSION_TAG], [pumps]
    )[pumps]
    instance.report_runless_asset_event(AssetObservation("inbox_files", partition=pumps, tags=tags))
    assert fresh_both_ways(settings, instance) == ({valves}, {pumps, valves})
    graph = build_defs(settings).resolve_asset_graph()
    assert [p.assets for p in plan_runs(instance, graph, [pumps, valves])] == [(), ()]


def test_repairs_switched_off_rerun_every_document_from_its_normalized_ir(ingested):
    settings, sources, instance, _ = ingested
    settings = settings.model_copy(update={"repairs_off": ["heading_levels"]})
    defs = build_defs(settings)
    files = scan_folder(settings.inbox_dir).files
    assert report_changes(instance, defs.resources, files) == 1  # the shared normalize settings
    plans = plan_runs(instance, defs.resolve_asset_graph(), [f.partition_key for f in files])
    assert {p.assets for p in plans} == {tuple(PIPELINE[2:])}
    assert all("normalize_settings" in p.reasons[0] for p in plans)
    again = ingest(settings, [sources], instance=instance)
    assert all(o.ran == tuple(PIPELINE[2:]) and o.success for o in again)
