"""A backfill through Dagster's own backfill daemon logic, on a real instance and code location."""

import importlib
import logging
import time

import pytest
from dagster import AssetCheckKey, AssetKey, AssetRecordsFilter, DagsterRunStatus, RunsFilter
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.instance_for_test import instance_for_test
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    BACKFILL_ID_TAG,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.backfill import execute_backfill_iteration

from rag_assets.defs.assets import PIPELINE
from rag_assets.embedding.models import load_embedder
from rag_assets.settings import Settings
from rag_assets.sources.keys import partition_key_for
from rag_assets_tests.conftest import REPO_ROOT
from rag_assets_tests.support.sensors import (
    batch_split_tick,
    requested_documents,
    run_as_the_daemon,
)

pytestmark = pytest.mark.slow

GOOD = 20


@pytest.fixture
def instance(tmp_path):
    """A real instance whose launcher runs each launched run in this process, one by one."""
    home = tmp_path / "dagster"
    home.mkdir()
    with instance_for_test(
        temp_dir=str(home), synchronous_run_coordinator=True, synchronous_run_launcher=True
    ) as instance:
        yield instance


def test_a_backfill_runs_twenty_documents_in_one_run_and_a_broken_one_fails_alone(
    tmp_path, monkeypatch, instance
):
    monkeypatch.setenv("RAG_ASSETS_DATA_DIR", str(tmp_path / "data"))
    settings = Settings.from_env()
    settings.inbox_dir.mkdir(parents=True)
    names = [f"note-{i:02}.md" for i in range(GOOD)]
    for i, name in enumerate(names):
        (settings.inbox_dir / name).write_text(
            f"# Note {i}\n\n## Pump {i}\n\nService pump {i} every {100 + i} hours.\n"
        )
    (settings.inbox_dir / "note-05b.pdf").write_bytes(b"not a pdf")
    keys = [partition_key_for(n) for n in [*names[:6], "note-05b.pdf", *names[6:]]]
    broken = keys[6]
    instance.add_dynamic_partitions("documents", keys)
    import rag_assets.definitions

    importlib.reload(rag_assets.definitions)  # the code location under this data dir
    defs = rag_assets.definitions.defs
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(
            module_name="rag_assets.definitions", working_directory=str(REPO_ROOT)
        ),
        location_name="rag_assets",
    )
    load_embedder.cache_clear()
    split_cursor = batch_split_tick(defs, instance, None).cursor  # the sensor starts
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget([origin])) as workspace:
        backfill = PartitionBackfill.from_asset_partitions(
            backfill_id="docs",
            asset_graph=workspace.create_request_context().asset_graph,
            partition_names=keys,
            asset_selection=[AssetKey(a) for a in PIPELINE],
            backfill_timestamp=time.time(),
            tags={},
            dynamic_partitions_store=instance,
            all_partitions=False,
            title=None,
            description=None,
            run_config=None,
        )
        instance.add_backfill(backfill)
        for _ in range(30):
            list(execute_backfill_iteration(workspace, logging.getLogger("backfill")))
            if instance.get_backfill("docs").status != BulkActionStatus.REQUESTED:
                break
    # The backfill cut one run for all 21 documents and every step: it fails, naming the
    # broken one; batch_split_sensor runs that one alone and the others again, in two groups.
    (batched,) = instance.get_runs(filters=RunsFilter(tags={BACKFILL_ID_TAG: "docs"}))
    assert batched.status == DagsterRunStatus.FAILURE
    assert batched.tags[ASSET_PARTITION_RANGE_START_TAG] == keys[0]
    assert batched.tags[ASSET_PARTITION_RANGE_END_TAG] == keys[-1]
    tick = batch_split_tick(defs, instance, split_cursor)
    split = tick.run_requests
    assert [requested_documents(instance, r) for r in split] == [[broken], keys[:6], keys[7:]]
    results = [run_as_the_daemon(defs, instance, r) for r in split]
    assert [r.success for r in results] == [False, True, True]
    # Every run of the good documents loaded the model once and embedded them as a batch.
    assert load_embedder.cache_info().misses == 1
    (record,) = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("chunk_embeddings"), asset_partitions=[keys[-1]]),
        limit=1,
    ).records
    assert record.asset_materialization.metadata["documents_in_batch"].value == GOOD - 6
    indexed = instance.get_materialized_partitions(AssetKey("vector_index"))
    assert indexed == set(keys) - {broken}
    # Each document keeps its own check result, though all were embedded in one step.
    check = AssetCheckKey(AssetKey("chunk_embeddings"), "embeddings_valid")
    for key in set(keys) - {broken}:
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [check], partition_filter=PartitionKeyFilter(key=key)
        )
        assert latest[check].status == AssetCheckExecutionRecordStatus.SUCCEEDED, key
    # The broken document's own run failed too: that failure is its own, nothing is split.
    assert batch_split_tick(defs, instance, tick.cursor).run_requests == []
