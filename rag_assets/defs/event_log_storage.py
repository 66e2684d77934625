"""The event log of the project's instances: Dagster's storage (SQLite in a data folder,
PostgreSQL at scale), with check views that stay fast at thousands of documents.

Configured in `dagster.yaml` (a data folder's is written by `rag_assets.instance`; the scale
deployment's names it), so the webserver, which never imports the code location, builds its
instance with it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dagster import DagsterRunStatus, DynamicPartitionsDefinition, Field, RunsFilter, StringSource
from dagster_postgres import PostgresEventLogStorage

from rag_assets.defs.dagster_private import (
    FINISHED_STATUSES,
    AssetCheckExecutionRecordStatus,
    AssetCheckExecutionResolvedStatus,
    AssetCheckState,
    SerializableEntitySubset,
    SqliteEventLogStorage,
)
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.postgres_storage import KeptConnection
from rag_assets.sources.inbox import scan_folder
from rag_assets.sources.keys import InvalidPartitionKey, check_partition_key, how_to_add_documents

RUNS_A_QUERY = 500


class _CheckStatesAtScale:
    """A check's partition statuses (the UI's check views) of documents' partitions, built from
    each document's latest result in one pass. Dagster's own asks the storage whether each
    document is still a partition (20 s a view at 10,000 documents on SQLite) and grows its
    status sets a document at a time (quadratic in the documents); the statuses are the same
    (test_event_log_storage.py compares them)."""

    def get_asset_check_state(self, keys: Sequence):
        if not all(isinstance(d, DynamicPartitionsDefinition) for _, d in keys):
            return super().get_asset_check_state(keys)
        infos = self.get_asset_check_partition_info([key for key, _ in keys])
        by_key: dict = {key: [] for key, _ in keys}
        for info in infos:
            by_key[info.check_key].append(info)
        planned_runs = {
            info.latest_planned_run_id
            for info in infos
            if info.latest_execution_status == AssetCheckExecutionRecordStatus.PLANNED
        }
        finished = _finished_runs(self._instance, sorted(planned_runs))
        # The checks of one asset share its definition: its partitions are read once.
        partitions = {
            name: frozenset(self._instance.get_dynamic_partitions(name))
            for name in {partitions_def.name for _, partitions_def in keys}
        }
        return {
            key: _check_state(
                key, partitions_def, by_key[key], partitions[partitions_def.name], finished
            )
            for key, partitions_def in keys
        }


def _finished_runs(instance, run_ids: list[str]) -> dict[str, DagsterRunStatus]:
    return {
        run.run_id: run.status
        for start in range(0, len(run_ids), RUNS_A_QUERY)
        for run in instance.get_runs(
            RunsFilter(run_ids=run_ids[start : start + RUNS_A_QUERY], statuses=FINISHED_STATUSES)
        )
    }


def _check_state(
    key, partitions_def, infos, partitions: frozenset[str], finished
) -> AssetCheckState:
    """Dagster's rules (`AssetCheckState.with_updates` from an empty state): a planned result
    is in progress until its run ends (failed: execution failed, else skipped); a result on
    the partition's latest materialization is its status; a result the partition was
    materialized again after counts for nothing."""
    Resolved = AssetCheckExecutionResolvedStatus
    found: dict = {status: [] for status in Resolved}
    running: dict[str, list[str]] = {}
    for info in infos:
        partition = info.partition_key
        if partition is None or partition not in partitions:
            continue
        status = info.latest_execution_status
        if status == AssetCheckExecutionRecordStatus.PLANNED:
            run_status = finished.get(info.latest_planned_run_id)
            if run_status is None:
                found[Resolved.IN_PROGRESS].append(partition)
                running.setdefault(info.latest_planned_run_id, []).append(partition)
            elif run_status == DagsterRunStatus.FAILURE:
                found[Resolved.EXECUTION_FAILED].append(partition)
            else:
                found[Resolved.SKIPPED].append(partition)
        elif info.is_current and status == AssetCheckExecutionRecordStatus.SUCCEEDED:
            found[Resolved.SUCCEEDED].append(partition)
        elif info.is_current and status == AssetCheckExecutionRecordStatus.FAILED:
            found[Resolved.FAILED].append(partition)
    latest = max(
        (
            max(i.latest_check_event_storage_id, i.latest_materialization_storage_id or 0)
            for i in infos
        ),
        default=0,
    )
    return AssetCheckState(
        latest_storage_id=latest,
        subsets={
            status: SerializableEntitySubset.from_coercible_value(key, keys, partitions_def)
            for status, keys in found.items()
        },
        in_progress_runs={
            run_id: SerializableEntitySubset.from_coercible_value(key, keys, partitions_def)
            for run_id, keys in running.items()
        },
    )


class _TablesOnceThere:
    """Dagster asks whether a table exists before every asset event's tags, check result and
    partition lookup it writes or reads, each time reading the schema anew (on PostgreSQL over a
    second connection, beside the one its write holds); a table once there stays (migrations
    only add)."""

    def has_table(self, table_name: str) -> bool:
        there = self.__dict__.setdefault("_tables_there", set())
        if table_name not in there and super().has_table(table_name):
            there.add(table_name)
        return table_name in there


class _DocumentKeysOnly:
    """A document's partition is made from its file (the inbox sensor, `rag-assets ingest`), but
    Dagster's Materialize dialog offers "Add a partition" for every dynamic partitions definition
    and no setting hides it. So a key of another shape than the project mints is refused here,
    before it is stored, and so is a new key no file in the inbox has, where the storage knows
    the inbox (a data folder's, `inbox_dir`): the dialog shows why and how to add a document
    instead, and what it adds is a document's own partition."""

    _inbox_dir: Path | None = None

    def add_dynamic_partitions(self, partitions_def_name: str, partition_keys: Sequence[str]):
        if partitions_def_name == documents_partitions.name:
            for key in partition_keys:
                check_partition_key(key)
            self._check_files(partitions_def_name, partition_keys)
        return super().add_dynamic_partitions(partitions_def_name, partition_keys)

    def _check_files(self, partitions_def_name: str, partition_keys: Sequence[str]) -> None:
        if self._inbox_dir is None:
            return
        new = set(partition_keys) - set(self.get_dynamic_partitions(partitions_def_name))
        if not new:
            return
        # Following links: a superset of the keys the sensor makes, whatever its setting.
        files = {f.partition_key for f in scan_folder(self._inbox_dir, follow_symlinks=True).files}
        if fileless := sorted(new - files):
            inbox = f"the inbox ({self._inbox_dir})"
            raise InvalidPartitionKey(
                f"no file in {inbox} has partition key {fileless[0]!r}; "
                f"{how_to_add_documents(inbox)}"
            )


class DocumentsEventLogStorage(
    _DocumentKeysOnly, _TablesOnceThere, _CheckStatesAtScale, SqliteEventLogStorage
):
    """Dagster's SQLite event log (config: `base_dir`, the folder of its databases; `inbox_dir`,
    the data folder's inbox, whose files alone get partitions)."""

    def __init__(self, base_dir: str, inst_data=None, inbox_dir: str | None = None) -> None:
        super().__init__(base_dir, inst_data)
        self._inbox_dir = Path(inbox_dir) if inbox_dir else None

    @classmethod
    def config_type(cls) -> dict:
        return {
            **SqliteEventLogStorage.config_type(),
            "inbox_dir": Field(StringSource, is_required=False),
        }

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> DocumentsEventLogStorage:
        return cls(inst_data=inst_data, **config_value)


class DocumentsPostgresEventLogStorage(
    _DocumentKeysOnly,
    _TablesOnceThere,
    _CheckStatesAtScale,
    KeptConnection,
    PostgresEventLogStorage,
):
    """Dagster's PostgreSQL event log, its connection kept (defs/postgres_storage.py)."""
