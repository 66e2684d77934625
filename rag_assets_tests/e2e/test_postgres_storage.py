"""The scale instance's PostgreSQL storage keeps its connection between writes, on a real server.

Dagster's opens one a statement; PostgreSQL counts every session it accepts
(`pg_stat_database.sessions`), so the count tells the two apart.
"""

from __future__ import annotations

import os
import shutil

import pytest
from dagster import AssetKey, AssetMaterialization, AssetObservation, DagsterInstance

from rag_assets_tests.e2e.test_postgres_deployment import dagster_database, postgres_server
from rag_assets_tests.project.test_deployments import SCALE_INSTANCE

pytestmark = pytest.mark.slow

EVENTS = 40


def sessions_opened(pg_env: dict[str, str]) -> int:
    """Sessions the server has accepted on Dagster's database (this query's own among them)."""
    connection = dagster_database(pg_env)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_force_next_flush()")
            cursor.execute(
                "SELECT sessions FROM pg_stat_database WHERE datname = %s",
                (pg_env["DAGSTER_PG_DB"],),
            )
            return cursor.fetchone()[0]
    finally:
        connection.close()


@pytest.fixture
def scale_instance(tmp_path, monkeypatch):
    with postgres_server() as pg_env:
        for name, value in pg_env.items():
            monkeypatch.setenv(name, value)
        home = tmp_path / "dagster"
        home.mkdir()
        shutil.copyfile(SCALE_INSTANCE, home / "dagster.yaml")
        with DagsterInstance.from_config(str(home)) as instance:
            yield instance, pg_env


def observe(instance, count: int, name: str = "inbox_file") -> None:
    for i in range(count):
        instance.report_runless_asset_event(
            AssetObservation(AssetKey(name), tags={"dagster/data_version": str(i)})
        )


def test_events_and_runs_written_over_one_kept_connection(scale_instance):
    instance, pg_env = scale_instance
    observe(instance, 1)  # the first write opens the connection that is kept
    before = sessions_opened(pg_env)
    observe(instance, EVENTS)
    for _ in range(EVENTS // 4):
        instance.get_runs(limit=1)
    # Dagster's own storage opened at least one session an event (two or three, in fact).
    assert sessions_opened(pg_env) - before <= 2
    records = instance.fetch_observations(AssetKey("inbox_file"), limit=EVENTS + 1).records
    assert len(records) == EVENTS + 1


def test_a_forked_child_writes_on_its_own_connection_and_leaves_the_parents(scale_instance):
    instance, _ = scale_instance
    observe(instance, 1)
    child = os.fork()
    if child == 0:  # the child: it must not use, or close, the parent's connection
        code = 1
        try:
            observe(instance, 3, "written_by_child")
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    observe(instance, 3)  # the parent's kept connection still works
    assert len(instance.fetch_observations(AssetKey("written_by_child"), limit=10).records) == 3
    assert len(instance.fetch_observations(AssetKey("inbox_file"), limit=10).records) == 4


def test_source_events_reported_together_read_back_as_each_documents_latest(scale_instance):
    from rag_assets.defs.dagster_private import report_events_together

    instance, pg_env = scale_instance
    observe(instance, 1)
    before = sessions_opened(pg_env)
    report_events_together(
        instance,
        [
            kind(asset, partition=f"p{i}", tags={"dagster/data_version": f"{asset}{i}"})
            for kind in (AssetMaterialization, AssetObservation)
            for i in range(5)
            for asset in ("inbox_files", "parser_settings")
        ],
    )
    assert sessions_opened(pg_env) - before <= 2
    for asset in ("inbox_files", "parser_settings"):
        for i in range(5):
            record = instance.get_latest_data_version_record(AssetKey(asset), True, f"p{i}")
            assert record.event_log_entry.tags["dagster/data_version"] == f"{asset}{i}"
        # Each observation stored before every materialization, whatever the order given.
        observed = instance.fetch_observations(AssetKey(asset), limit=1).records[0]
        recorded = instance.fetch_materializations(AssetKey(asset), limit=5, ascending=True)
        assert observed.storage_id < recorded.records[0].storage_id
        assert instance.get_materialized_partitions(AssetKey(asset)) == {f"p{i}" for i in range(5)}
    # Each asset's entry is there, as the UI's asset list reads it.
    assert {AssetKey("inbox_files"), AssetKey("parser_settings")} <= set(instance.get_asset_keys())
