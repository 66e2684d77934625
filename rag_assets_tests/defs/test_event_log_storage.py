"""A data folder's instance: its event log storage, named in the folder's dagster.yaml, and the
checks' partition statuses it answers with one read of the documents' partitions."""

from __future__ import annotations

import shutil

import yaml
from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetKey,
    DagsterInstance,
    partition_loading_context,
)
from dagster._core.storage.asset_check_state import AssetCheckState, bulk_update_asset_check_state

from rag_assets.defs.event_log_storage import DocumentsEventLogStorage
from rag_assets.defs.partitions import documents_partitions
from rag_assets.instance import EVENT_LOG_MARK, ensure_dagster_home, storage_elsewhere
from rag_assets.settings import Settings

CHECK = AssetCheckKey(AssetKey("document_chunks"), "chunk_metadata_complete")


def _instance(data_dir) -> DagsterInstance:
    return DagsterInstance.from_config(str(ensure_dagster_home(Settings(data_dir=data_dir))))


def test_the_folder_instance_keeps_its_event_log_in_the_folder_wherever_it_moves(tmp_path):
    with _instance(tmp_path / "first") as instance:
        assert isinstance(instance.event_log_storage, DocumentsEventLogStorage)
        instance.add_dynamic_partitions(documents_partitions.name, ["a.md--x"])
        config = yaml.safe_load((tmp_path / "first" / "dagster" / "dagster.yaml").read_text())
        assert "run_coordinator" in config  # the repository's settings, with the block after them
        assert not storage_elsewhere(config)
    shutil.move(tmp_path / "first", tmp_path / "moved")
    moved_yaml = tmp_path / "moved" / "dagster" / "dagster.yaml"
    with _instance(tmp_path / "moved") as instance:
        assert instance.get_dynamic_partitions(documents_partitions.name) == ["a.md--x"]
    base_dir = yaml.safe_load(moved_yaml.read_text())["event_log_storage"]["config"]["base_dir"]
    assert base_dir == str((tmp_path / "moved" / "dagster" / "history" / "runs").resolve())
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


def test_check_statuses_read_the_documents_partitions_once(tmp_path, monkeypatch):
    kept = [f"note-{i:03}.md--n" for i in range(40)]
    with _instance(tmp_path) as instance:
        instance.add_dynamic_partitions(documents_partitions.name, [*kept, "removed.md--n"])
        for key in [*kept, "removed.md--n"]:
            instance.report_runless_asset_event(
                AssetCheckEvaluation(
                    asset_key=CHECK.asset_key,
                    check_name=CHECK.name,
                    passed=key != "note-007.md--n",
                    partition=key,
                )
            )
        instance.delete_dynamic_partition(documents_partitions.name, "removed.md--n")

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
            assert len(asked) == len(kept) + 1  # a query for each document with a result
            asked.clear()
            ours = instance.event_log_storage.get_asset_check_state(keys)[CHECK]
        assert asked == []
        assert ours.subsets == dagsters.subsets

    def statuses(state) -> dict[str, set[str]]:
        return {
            status.value: set(subset.subset_value.get_partition_keys())
            for status, subset in state.subsets.items()
            if not subset.is_empty
        }

    assert statuses(ours) == {
        "SUCCEEDED": set(kept) - {"note-007.md--n"},
        "FAILED": {"note-007.md--n"},
    }
