"""The refresh schedule and the inbox sensor on a real instance: only stale steps are requested."""

import pytest
import yaml
from dagster import AssetKey, DagsterInstance, build_schedule_context, build_sensor_context

from rag_assets.defs.build import build_defs
from rag_assets.defs.ingest import ingest
from rag_assets.instance import ensure_dagster_home
from rag_assets.settings import Settings

pytestmark = pytest.mark.slow


def evaluate(defs, instance):
    schedule = defs.get_schedule_def("refresh_schedule")
    context = build_schedule_context(
        instance=instance, resources=defs.resources, repository_def=defs.get_repository_def()
    )
    return schedule.evaluate_tick(context)


def test_the_refresh_schedule_requests_only_what_is_stale(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    sources = tmp_path / "docs"
    sources.mkdir()
    (sources / "pumps.md").write_text("# Pumps\n\n## Priming\n\nPrime the pump first.\n")
    (sources / "valves.md").write_text("# Valves\n\n## Checks\n\nTest each valve monthly.\n")
    # Schedules are evaluated against a stored instance (they carry a reference to it).
    instance = DagsterInstance.from_config(str(ensure_dagster_home(settings)))
    outcomes = {o.source_path: o for o in ingest(settings, [sources], instance=instance)}
    assert all(o.success for o in outcomes.values())

    defs = build_defs(settings)
    tick = evaluate(defs, instance)
    assert not tick.run_requests and isinstance(tick.skip_message, str)
    assert "nothing stale" in tick.skip_message

    # One collection's template changes: its document's chunks and what follows, nothing else.
    settings.collections_path.write_text(
        yaml.safe_dump(
            {"collections": [{"name": "pumps", "match": ["**/pumps.md"], "template": "fixed"}]}
        )
    )
    defs = build_defs(settings)
    (request,) = evaluate(defs, instance).run_requests
    assert request.partition_key == outcomes["docs/pumps.md"].doc_id
    assert request.asset_selection == [
        AssetKey("document_chunks"),
        AssetKey("chunk_embeddings"),
        AssetKey("vector_index"),
    ]


def test_the_inbox_sensor_reports_file_versions_for_the_stale_status(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    settings.inbox_dir.mkdir(parents=True)
    (settings.inbox_dir / "a.md").write_text("# Alpha\n\nThe alpha document.\n")
    defs = build_defs(settings)
    instance = DagsterInstance.ephemeral()
    sensor = defs.get_sensor_def("inbox_sensor")
    result = sensor(build_sensor_context(instance=instance, resources=defs.resources))
    observed = {e.asset_key.to_user_string() for e in result.asset_events}
    assert {"inbox_files", "parser_settings", "template_settings"} <= observed
    assert [r.partition_key for r in result.run_requests] == list(
        {e.partition for e in result.asset_events if e.partition}
    )
