"""The refresh schedule and the inbox sensor on a real instance: only stale steps are requested."""

import threading
import time

import pytest
import yaml
from dagster import AssetKey, DagsterInstance, build_schedule_context, build_sensor_context

from rag_assets.defs.build import build_defs
from rag_assets.instance import ensure_dagster_home
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets_tests.support.sensors import (
    checked_part_tick,
    requested_documents,
    run_as_the_daemon,
)

pytestmark = pytest.mark.slow


def evaluate(defs, instance):
    schedule = defs.get_schedule_def("refresh_schedule")
    # Closed here: the context opens its own instance from the ref, which would otherwise stay
    # Dagster's current one after the test (a later test then loads definitions against it).
    with build_schedule_context(
        instance=instance, resources=defs.resources, repository_def=defs.get_repository_def()
    ) as context:
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

    # The template of every document changes: one run carries both, as an ingest batches them.
    settings.collections_path.write_text(
        yaml.safe_dump({"collections": [{"name": "all", "match": ["**"], "template": "fixed"}]})
    )
    (batch,) = evaluate(build_defs(settings), instance).run_requests
    assert sorted(requested_documents(instance, batch)) == sorted(
        o.doc_id for o in outcomes.values()
    )
    assert batch.tags["rag_assets/refresh"] == "stale"


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


PIPELINE_BELOW_RAW = [
    "parsed_documents",
    "normalized_documents",
    "table_markdown",
    "document_chunks",
    "chunk_embeddings",
    "vector_index",
]


def _requested(result, key: str) -> list[str]:
    return [a for a in PIPELINE_BELOW_RAW if key in result.get_requested_partitions(AssetKey(a))]


def _waiting_for(instance, pool: str, run_id: str) -> bool:
    pending = instance.event_log_storage.get_concurrency_info(pool).pending_steps
    return any(step.run_id == run_id for step in pending)


def _hold_milvus(instance):
    """Another run holding the milvus slot: a run stops before vector_index until it is freed."""
    from dagster import DagsterRun, DagsterRunStatus
    from dagster._core.utils import make_new_run_id

    from rag_assets.defs.jobs import INGEST_JOB

    holder = instance.add_run(
        DagsterRun(job_name=INGEST_JOB, run_id=make_new_run_id(), status=DagsterRunStatus.STARTED)
    )
    storage = instance.event_log_storage
    storage.initialize_concurrency_limit_to_default("milvus")
    assert storage.claim_concurrency_slot("milvus", holder.run_id, "vector_index").is_claimed
    return holder


def _requests_while_running_and_ending(defs, instance, key, cursor, execute, monkeypatch):
    """Ticks while `execute` (in a thread) waits for the held milvus slot, then a tick during
    which its last step ends: what each requested of `key`, and the run's result."""
    from dagster import evaluate_automation_conditions
    from dagster._core.definitions.declarative_automation.automation_condition_evaluator import (
        AutomationConditionEvaluator,
    )

    holder = _hold_milvus(instance)
    runs = []
    worker = threading.Thread(target=lambda: runs.append(execute()))
    worker.start()
    deadline = time.monotonic() + 600
    while not any(
        _waiting_for(instance, "milvus", r.run_id)
        for r in instance.get_runs()
        if r.run_id != holder.run_id
    ):
        assert worker.is_alive() and time.monotonic() < deadline, "the run never reached the pool"
        time.sleep(0.1)
    result = evaluate_automation_conditions(defs, instance, cursor=cursor)
    requested = [_requested(result, key)]

    # A tick reads updates from a snapshot taken as it starts and in-progress status live: the
    # run's last step ending in between is the interleaving that requested steps a second time.
    prefetch = AutomationConditionEvaluator.prefetch

    def prefetch_then_let_the_run_finish(evaluator):
        prefetch(evaluator)
        instance.event_log_storage.free_concurrency_slots_for_run(holder.run_id)
        worker.join(timeout=600)

    monkeypatch.setattr(AutomationConditionEvaluator, "prefetch", prefetch_then_let_the_run_finish)
    result = evaluate_automation_conditions(defs, instance, cursor=result.cursor)
    monkeypatch.undo()
    requested.append(_requested(result, key))
    result = evaluate_automation_conditions(defs, instance, cursor=result.cursor)
    requested.append(_requested(result, key))
    (run,) = runs
    return requested, run, result.cursor


def test_automation_requests_nothing_a_running_inbox_run_does_and_reacts_after_it(
    tmp_path, monkeypatch
):
    from dagster import evaluate_automation_conditions

    from rag_assets.instance import open_instance

    settings = Settings(data_dir=tmp_path / "data")
    settings.inbox_dir.mkdir(parents=True)
    (settings.inbox_dir / "pumps.md").write_text("# Pumps\n\n## Priming\n\nPrime the pump first.\n")
    instance = open_instance(settings)  # the repository's instance: pools of one slot
    defs = build_defs(settings)

    cursor = evaluate_automation_conditions(defs, instance).cursor
    inbox_sensor = defs.get_sensor_def("inbox_sensor")
    result = inbox_sensor(build_sensor_context(instance=instance, resources=defs.resources))
    (add,) = result.dynamic_partitions_requests
    instance.add_dynamic_partitions(add.partitions_def_name, list(add.partition_keys))
    (request,) = result.run_requests
    key = request.partition_key
    cursor = evaluate_automation_conditions(defs, instance, cursor=cursor).cursor
    checked_cursor = checked_part_tick(defs, instance, None).cursor

    # The runs the daemon would launch: the request's landing part, then the checked part
    # checked_part_sensor requests. Automation leaves the checked steps to that second run.
    assert run_as_the_daemon(defs, instance, request).success
    result = evaluate_automation_conditions(defs, instance, cursor=cursor)
    assert _requested(result, key) == []
    (checked,) = checked_part_tick(defs, instance, checked_cursor).run_requests
    requested, run, cursor = _requests_while_running_and_ending(
        defs,
        instance,
        key,
        result.cursor,
        lambda: run_as_the_daemon(defs, instance, checked),
        monkeypatch,
    )
    assert run.success
    assert requested == [[], [], []]

    # A real change once the run is over: parsed_documents alone materialized again (as from
    # the UI) flows down in one run.
    reparse = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        partition_key=key, instance=instance, asset_selection=[AssetKey("parsed_documents")]
    )
    assert reparse.success
    result = evaluate_automation_conditions(defs, instance, cursor=cursor)
    assert _requested(result, key) == PIPELINE_BELOW_RAW[1:]


def test_automation_requests_nothing_a_running_cli_ingest_run_does(tmp_path, monkeypatch):
    """`rag-assets ingest` while the UI's daemon is up: its run is one the condition knows."""
    from dagster import evaluate_automation_conditions

    from rag_assets.defs.assets import PIPELINE
    from rag_assets.defs.landing import split_parts
    from rag_assets.defs.partitions import documents_partitions
    from rag_assets.instance import open_instance
    from rag_assets.runner.ingest import _execute
    from rag_assets.runner.progress import RunProgress
    from rag_assets.sources.keys import partition_key_for

    settings = Settings(data_dir=tmp_path / "data")
    settings.inbox_dir.mkdir(parents=True)
    (settings.inbox_dir / "pumps.md").write_text("# Pumps\n\n## Priming\n\nPrime the pump first.\n")
    instance = open_instance(settings)
    defs = build_defs(settings)
    cursor = evaluate_automation_conditions(defs, instance).cursor
    # What the ingest does before its run: the document's partition, then every asset stale.
    key = partition_key_for("pumps.md")
    instance.add_dynamic_partitions(documents_partitions.name, [key])
    cursor = evaluate_automation_conditions(defs, instance, cursor=cursor).cursor

    # Its two runs: the steps without checks, then the checked ones.
    landing, checked = split_parts(PIPELINE)
    assert _execute(instance, defs, [key], landing, {}, RunProgress(), ["pumps.md"]).success
    result = evaluate_automation_conditions(defs, instance, cursor=cursor)
    assert _requested(result, key) == []
    requested, run, _ = _requests_while_running_and_ending(
        defs,
        instance,
        key,
        result.cursor,
        lambda: _execute(instance, defs, [key], checked, {}, RunProgress(), ["pumps.md"]),
        monkeypatch,
    )
    assert run.success
    assert requested == [[], [], []]


def test_automation_does_not_retry_a_failed_inbox_run(tmp_path):
    from dagster import evaluate_automation_conditions

    settings = Settings(data_dir=tmp_path / "data")
    settings.inbox_dir.mkdir(parents=True)
    (settings.inbox_dir / "title.md").write_text("# Only a title\n")  # nothing to chunk
    defs = build_defs(settings)
    instance = DagsterInstance.ephemeral()
    cursor = evaluate_automation_conditions(defs, instance).cursor
    checked_cursor = checked_part_tick(defs, instance, None).cursor
    result = defs.get_sensor_def("inbox_sensor")(
        build_sensor_context(instance=instance, resources=defs.resources)
    )
    (add,) = result.dynamic_partitions_requests
    instance.add_dynamic_partitions(add.partitions_def_name, list(add.partition_keys))
    (request,) = result.run_requests
    cursor = evaluate_automation_conditions(defs, instance, cursor=cursor).cursor

    # It lands, then its checked part fails: there is nothing to chunk.
    assert run_as_the_daemon(defs, instance, request).success
    (checked,) = checked_part_tick(defs, instance, checked_cursor).run_requests
    assert not run_as_the_daemon(defs, instance, checked).success
    # The same file would fail the same way: a run waits for a change.
    for _ in range(2):
        result = evaluate_automation_conditions(defs, instance, cursor=cursor)
        assert _requested(result, request.partition_key) == []
        cursor = result.cursor
