"""A data folder's instance: its event log storage, named in the folder's dagster.yaml, and the
checks' partition statuses it builds in one pass, the same as Dagster's."""

from __future__ import annotations

import shutil
import time

import yaml
from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetKey,
    AssetMaterialization,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    partition_loading_context,
)
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationPlanned,
)
from dagster._core.events import DagsterEvent
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.asset_check_state import AssetCheckState, bulk_update_asset_check_state
from dagster._core.storage.dagster_run import DagsterRun

from rag_assets.defs.event_log_storage import DocumentsEventLogStorage
from rag_assets.defs.partitions import documents_partitions
from rag_assets.instance import EVENT_LOG_MARK, ensure_dagster_home, storage_elsewhere
from rag_assets.settings import Settings
from rag_assets.sources.keys import partition_key_for

CHECK = AssetCheckKey(AssetKey("document_chunks"), "chunk_metadata_complete")


def _instance(data_dir) -> DagsterInstance:
    return DagsterInstance.from_config(str(ensure_dagster_home(Settings(data_dir=data_dir))))


def _in_inbox(data_dir, *names: str) -> list[str]:
    """The partition keys of new files in the folder's inbox, which alone get partitions."""
    inbox = Settings(data_dir=data_dir).inbox_dir
    inbox.mkdir(parents=True, exist_ok=True)
    for name in names:
        (inbox / name).write_text(f"# {name}\n")
    return [partition_key_for(name) for name in names]


def test_the_folder_instance_keeps_its_event_log_in_the_folder_wherever_it_moves(tmp_path):
    keys = _in_inbox(tmp_path / "first", "a.md")
    with _instance(tmp_path / "first") as instance:
        assert isinstance(instance.event_log_storage, DocumentsEventLogStorage)
        instance.add_dynamic_partitions(documents_partitions.name, keys)
        config = yaml.safe_load((tmp_path / "first" / "dagster" / "dagster.yaml").read_text())
        assert "run_coordinator" in config  # the repository's settings, with the block after them
        assert not storage_elsewhere(config)
    shutil.move(tmp_path / "first", tmp_path / "moved")
    moved_yaml = tmp_path / "moved" / "dagster" / "dagster.yaml"
    with _instance(tmp_path / "moved") as instance:
        assert instance.get_dynamic_partitions(documents_partitions.name) == keys
    config = yaml.safe_load(moved_yaml.read_text())["event_log_storage"]["config"]
    assert config["base_dir"] == str(
        (tmp_path / "moved" / "dagster" / "history" / "runs").resolve()
    )
    assert config["inbox_dir"] == str((tmp_path / "moved" / "inbox").resolve())
    assert moved_yaml.read_text().count(EVENT_LOG_MARK) == 1
    assert not (tmp_path / "first").exists()


def test_storage_the_folder_config_names_itself_is_kept_as_written(tmp_path):
    home = tmp_path / "dagster"
    home.mkdir()
    server = "storage:\n  postgres:\n    postgres_url: postgresql://db/dagster\n"
    (home / "dagster.yaml").write_text(server)
    ensure_dagster_home(Settings(data_dir=tmp_path))
    assert (home / "dagster.yaml").read_text() == server
    assert storage_elsewhere(yaml.safe_load(server))


def _plan_checks(instance: DagsterInstance, run_status: DagsterRunStatus, keys: list[str]) -> None:
    """The check planned for `keys` by a run that is now in `run_status`."""
    run = DagsterRun(job_name="__ASSET_JOB", status=run_status)
    instance.add_run(run)
    planned = AssetCheckEvaluationPlanned(
        asset_key=CHECK.asset_key,
        check_name=CHECK.name,
        partitions_subset=documents_partitions.subset_with_partition_keys(keys),
    )
    event = DagsterEvent(
        event_type_value=DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED.value,
        job_name=run.job_name,
        event_specific_data=planned,
    )
    instance.store_event(
        EventLogEntry(
            error_info=None,
            level="debug",
            user_message="",
            run_id=run.run_id,
            timestamp=time.time(),
            dagster_event=event,
        )
    )


def test_check_statuses_are_dagsters_read_with_the_partitions_once(tmp_path, monkeypatch):
    *kept, removed = _in_inbox(tmp_path, *(f"note-{i:03}.md" for i in range(40)), "removed.md")
    with _instance(tmp_path) as instance:
        instance.add_dynamic_partitions(documents_partitions.name, [*kept, removed])
        for key in [*kept[:30], removed]:
            instance.report_runless_asset_event(
                AssetCheckEvaluation(
                    asset_key=CHECK.asset_key,
                    check_name=CHECK.name,
                    passed=key != kept[7],
                    partition=key,
                )
            )
        # Materialized again after its result: the result no longer counts.
        instance.report_runless_asset_event(
            AssetMaterialization(CHECK.asset_key, partition=kept[8])
        )
        _plan_checks(instance, DagsterRunStatus.STARTED, kept[30:33])
        _plan_checks(instance, DagsterRunStatus.FAILURE, kept[33:36])
        _plan_checks(instance, DagsterRunStatus.SUCCESS, kept[36:38])
        instance.delete_dynamic_partition(documents_partitions.name, removed)

        asked: list[str] = []
        dagster_has_partition = DagsterInstance.has_dynamic_partition

        def counted(self, partitions_def_name, partition_key):
            asked.append(partition_key)
            return dagster_has_partition(self, partitions_def_name, partition_key)

        monkeypatch.setattr(DagsterInstance, "has_dynamic_partition", counted)
        keys = [(CHECK, documents_partitions)]
        with partition_loading_context(dynamic_partitions_store=instance):
            dagsters = bulk_update_asset_check_state(
                instance, keys, {CHECK: AssetCheckState.empty()}
            )[CHECK]
            assert len(asked) == 38 + 1  # a query for each document with a result
            asked.clear()
        ours = instance.event_log_storage.get_asset_check_state(keys)[CHECK]
        assert asked == []

    def statuses(state) -> dict[str, set[str]]:
        return {
            status.value: set(subset.subset_value.get_partition_keys())
            for status, subset in state.subsets.items()
            if not subset.is_empty
        }

    assert (
        statuses(ours)
        == statuses(dagsters)
        == {
            "SUCCEEDED": set(kept[:30]) - {kept[7], kept[8]},
            "FAILED": {kept[7]},
            "IN_PROGRESS": set(kept[30:33]),
            "EXECUTION_FAILED": set(kept[33:36]),
            "SKIPPED": set(kept[36:38]),
        }
    )
    assert ours.latest_storage_id == dagsters.latest_storage_id
    assert {
        run: set(s.subset_value.get_partition_keys()) for run, s in ours.in_progress_runs.items()
    } == {
        run: set(s.subset_value.get_partition_keys())
        for run, s in dagsters.in_progress_runs.items()
    }
