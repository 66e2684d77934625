"""Where runs land, by Dagster's own daemons on a real instance and code location: a backfill
launched from the job's page runs as `ingest_documents`, beside the CLI's runs; what automation
and the asset graph launch runs as the asset job (`__ASSET_JOB`), tagged with who started it."""

from __future__ import annotations

import importlib
import logging

import pytest
from dagster import AssetKey, RunsFilter
from dagster._core.instance_for_test import instance_for_test
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.storage.tags import BACKFILL_ID_TAG
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon import asset_daemon
from dagster._daemon.backfill import execute_backfill_iteration
from dagster_graphql.test.utils import execute_dagster_graphql

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.jobs import INGEST_JOB, LAUNCHED_BY_TAG
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

ASSET_JOB = "__ASSET_JOB"
LOCATION = "rag_assets"
REPOSITORY = "__repository__"

# What the UI's "Materialize" dialog sends for several partitions (dagster-webapp's
# LaunchAssetChoosePartitionsDialog): with the partition set of the job whose page it was
# opened from, or, from the asset graph, without one.
LAUNCH_BACKFILL = """
mutation ($backfillParams: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $backfillParams) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
  }
}
"""


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A document ingested by the CLI's runner, and the code location as the daemons load it,
    on an instance that runs each launched run in this process."""
    monkeypatch.setenv("RAG_ASSETS_DATA_DIR", str(tmp_path / "data"))
    settings = Settings.from_env()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pumps.md").write_text("# Pumps\n\n## Priming\n\nPrime the pump before starting.\n")
    (tmp_path / "dagster").mkdir()
    with instance_for_test(
        temp_dir=str(tmp_path / "dagster"),
        synchronous_run_coordinator=True,
        synchronous_run_launcher=True,
    ) as instance:
        (outcome,) = ingest(settings, [docs], instance=instance)
        assert outcome.success, outcome.summary()
        import rag_assets.definitions

        importlib.reload(rag_assets.definitions)  # the code location under this data dir
        origin = InProcessCodeLocationOrigin(
            LoadableTargetOrigin(
                module_name="rag_assets.definitions", working_directory=str(REPO_ROOT)
            ),
            location_name=LOCATION,
        )
        with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget([origin])) as context:
            yield context, instance, outcome.doc_id


def _backfill_runs(context, instance, params: dict) -> list:
    answer = execute_dagster_graphql(
        context.create_request_context(), LAUNCH_BACKFILL, {"backfillParams": params}
    )
    launched = answer.data["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]
    for _ in range(20):
        list(execute_backfill_iteration(context, logging.getLogger("backfill")))
        runs = instance.get_runs(filters=RunsFilter(tags={BACKFILL_ID_TAG: backfill_id}))
        if runs and all(r.is_finished for r in runs):
            return runs
    raise AssertionError("the backfill launched no run")


def test_a_backfill_from_the_jobs_page_runs_as_the_job_and_one_from_the_graph_does_not(
    workspace,
):
    context, instance, key = workspace
    steps = [{"path": [a]} for a in PIPELINE]
    repository = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}
    from_job_page = {
        "selector": {
            "partitionSetName": f"{INGEST_JOB}_partition_set",
            "repositorySelector": repository,
        },
        "assetSelection": steps,
        "partitionNames": [key],
        "fromFailure": False,
    }
    runs = _backfill_runs(context, instance, from_job_page)
    assert {(r.job_name, r.is_success) for r in runs} == {(INGEST_JOB, True)}
    # The CLI's runs (the document's two parts) are on the same job's Runs tab, tagged as its.
    cli_runs = [r for r in instance.get_runs() if r.tags.get(LAUNCHED_BY_TAG) == "cli"]
    assert [r.job_name for r in cli_runs] == [INGEST_JOB] * 2

    from_graph = {"assetSelection": steps, "partitionNames": [key], "fromFailure": False}
    assert {r.job_name for r in _backfill_runs(context, instance, from_graph)} == {ASSET_JOB}


def test_an_automation_run_is_an_asset_job_run_tagged_as_automations(workspace, monkeypatch):
    context, instance, key = workspace
    daemon = asset_daemon.AssetDaemon(
        settings=instance.get_settings("auto_materialize"), pre_sensor_interval_seconds=0
    )
    # Every tick evaluates now: the sensor's 30 seconds between ticks are not waited for.
    monkeypatch.setattr(asset_daemon, "is_under_min_interval", lambda *args, **kwargs: False)

    def tick() -> list:
        before = {r.run_id for r in instance.get_runs()}
        daemon._run_iteration_impl(
            context, threadpool_executor=None, amp_tick_futures={}, debug_crash_flags={}
        )
        return [r for r in instance.get_runs() if r.run_id not in before]

    assert tick() == []  # the first tick takes in what is there
    # parsed_documents materialized again alone, as the asset graph's "Materialize" does.
    import rag_assets.definitions

    reparse = rag_assets.definitions.defs.resolve_implicit_global_asset_job_def()
    assert reparse.execute_in_process(
        partition_key=key, instance=instance, asset_selection=[AssetKey("parsed_documents")]
    ).success

    (run,) = tick()
    assert run.job_name == ASSET_JOB
    assert run.tags[LAUNCHED_BY_TAG] == "automation"
    assert run.tags["dagster/partition"] == key
    below = PIPELINE[PIPELINE.index("parsed_documents") + 1 :]
    assert {k.to_user_string() for k in run.asset_selection} == set(below)
