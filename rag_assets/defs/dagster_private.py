"""Every private Dagster API the project uses, and only here: a Dagster upgrade that moves or
changes one fails on import of this module and in `test_dagster_private.py`, which names each.

Why each is needed:
- run creation as the daemon does it (`job_origins`, `execute_in_process`): a CLI ingest's
  runs appear on the job's Runs tab and timeline, while models stay loaded in one process;
- stale status (`AssetGraphView`, `CachingStaleStatusResolver`, ...): which documents and steps
  an ingest or the refresh schedule must run, by Dagster's own data-version rules;
- run and check records (`PartitionKeyFilter`, `AssetCheckExecutionRecordStatus`, tags; a
  batch's run names its range of partition keys with the tags a backfill uses), and a removed
  document's events in a batch's run (`delete_document_events`: Dagster deletes whole runs only);
- interrupts (`pop_captured_interrupt`, `mark_interrupt_received`): a signal taken before a
  run's own handlers are in place still stops it at its first step;
- the instance's automation switch (`set_auto_materialize_paused`, `InstigatorType`): the UI's
  "Auto-materialize on/off" tag reads it, while automation runs as `automation_sensor`.
- input provenance of observed partitions (`DataVersionCache`): see
  `_partitions_data_version`, installed on import;
- each document's own data version in a batch's output (`_get_output_asset_events`): see
  `_with_partition_data_versions`, installed on import;
- Ctrl-C kept from the processes mirroring a run's output (`tail_to_stream`): see
  `_tail_deaf_to_ctrl_c`, installed on import;
- the checks' partition views (`AssetCheckState`, `SerializableEntitySubset`, ...): see
  `event_log_storage.py`;
- SQLite event log writes (`SqliteEventLogStorage._connect`, `store_event_batch`): one engine
  kept a shard (`_connect_kept_engine`) and Dagster's event batches written in one transaction
  a shard (`_store_event_batch_together`), a step's check results among them
  (`log_step_event`: `check_results_written_together`), installed on import.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import ExitStack, contextmanager
from itertools import groupby
from pathlib import Path

from dagster import (
    AssetMaterialization,
    AssetObservation,
    DagsterEventType,
    DagsterInvariantViolationError,
)
from dagster._core import events as dagster_events
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.asset_graph_view.serializable_entity_subset import SerializableEntitySubset
from dagster._core.definitions.data_version import (
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    CachingStaleStatusResolver,
    StaleStatus,
)
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.events import (
    AssetObservationData,
    DagsterEvent,
    DagsterEventBatchMetadata,
    generate_event_batch_id,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.execution import compute_logs
from dagster._core.execution.context.data_version_cache import DataVersionCache
from dagster._core.execution.plan import execute_step
from dagster._core.instance.utils import RUNLESS_JOB_NAME, RUNLESS_RUN_ID
from dagster._core.scheduler.instigation import InstigatorType
from dagster._core.storage.asset_check_execution_record import (
    AssetCheckExecutionRecordStatus,
    AssetCheckExecutionResolvedStatus,
    AssetCheckPartitionInfo,
)
from dagster._core.storage.asset_check_state import AssetCheckState
from dagster._core.storage.dagster_run import FINISHED_STATUSES
from dagster._core.storage.event_log.schema import (
    AssetCheckExecutionsTable,
    SqlEventLogStorageTable,
)
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlalchemy_compat import db_select
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG,
)
from dagster._daemon.asset_daemon import get_auto_materialize_paused, set_auto_materialize_paused
from dagster._serdes import deserialize_value, serialize_value
from dagster._time import get_current_datetime
from dagster._utils.interrupts import pop_captured_interrupt
from sqlalchemy import bindparam
from sqlalchemy.pool import NullPool

from rag_assets.defs.partitions import documents_partitions
from rag_assets.interrupts import children_deaf_to_stop_signals

__all__ = [
    "KEYS_A_STATEMENT",
    "FINISHED_STATUSES",
    "AssetCheckExecutionResolvedStatus",
    "AssetCheckState",
    "SerializableEntitySubset",
    "SqliteEventLogStorage",
    "DATA_VERSION_TAG",
    "PARTITION_NAME_TAG",
    "AssetCheckExecutionRecordStatus",
    "AssetCheckPartitionInfo",
    "AssetGraphView",
    "CachingStaleStatusResolver",
    "InstigatorType",
    "PartitionKeyFilter",
    "StaleStatus",
    "TemporalContext",
    "execute_in_process",
    "get_auto_materialize_paused",
    "get_current_datetime",
    "job_origins",
    "materialization_tags",
    "latest_materializations",
    "add_partition_metadata",
    "check_results_written_together",
    "events_written_together",
    "report_observations_together",
    "delete_document_events",
    "partition_tags",
    "run_documents",
    "runs_with_document_events",
    "mark_interrupt_received",
    "pop_captured_interrupt",
    "set_auto_materialize_paused",
    "set_partition_data_versions",
]

# (module, name) of each private API, imported here at first use or above.
PRIVATE_APIS = (
    ("dagster._core.asset_graph_view.asset_graph_view", "AssetGraphView"),
    ("dagster._core.asset_graph_view.asset_graph_view", "TemporalContext"),
    ("dagster._core.definitions.data_version", "DATA_VERSION_TAG"),
    ("dagster._core.definitions.data_version", "CachingStaleStatusResolver"),
    ("dagster._core.definitions.data_version", "StaleStatus"),
    ("dagster._core.event_api", "PartitionKeyFilter"),
    ("dagster._core.scheduler.instigation", "InstigatorType"),
    ("dagster._daemon.asset_daemon", "get_auto_materialize_paused"),
    ("dagster._daemon.asset_daemon", "set_auto_materialize_paused"),
    ("dagster._core.storage.asset_check_execution_record", "AssetCheckExecutionRecordStatus"),
    ("dagster._core.storage.asset_check_execution_record", "AssetCheckPartitionInfo"),
    ("dagster._core.storage.tags", "PARTITION_NAME_TAG"),
    ("dagster._core.storage.tags", "ASSET_PARTITION_RANGE_START_TAG"),
    ("dagster._core.storage.tags", "ASSET_PARTITION_RANGE_END_TAG"),
    ("dagster._time", "get_current_datetime"),
    ("dagster._utils.interrupts", "pop_captured_interrupt"),
    ("dagster._utils.interrupts", "_received_interrupt"),
    ("dagster._core.code_pointer", "CodePointer"),
    (
        "dagster._core.definitions.repository_definition.valid_definitions",
        "SINGLETON_REPOSITORY_NAME",
    ),
    ("dagster._core.origin", "RepositoryPythonOrigin"),
    ("dagster._core.remote_origin", "RemoteRepositoryOrigin"),
    ("dagster._core.workspace.load", "location_origin_from_module_name"),
    ("dagster._core.workspace.load", "location_origins_from_yaml_paths"),
    ("dagster._core.definitions.job_base", "InMemoryJob"),
    ("dagster._core.execution.api", "execute_run"),
    ("dagster._core.execution.context.data_version_cache", "DataVersionCache"),
    ("dagster._core.definitions.data_version", "DATA_VERSION_IS_USER_PROVIDED_TAG"),
    ("dagster._core.execution.plan", "execute_step"),
    ("dagster._core.execution", "compute_logs"),
    ("dagster._core.storage.sqlalchemy_compat", "db_select"),
    ("dagster._core.storage.event_log.schema", "SqlEventLogStorageTable"),
    ("dagster._core.storage.event_log.schema", "AssetEventTagsTable"),
    ("dagster._core.storage.event_log.schema", "AssetCheckExecutionsTable"),
    ("dagster._core.storage.event_log.schema", "AssetKeyTable"),
    ("dagster._core.event_api", "EventLogRecord"),
    ("dagster._core.events.log", "EventLogEntry"),
    ("dagster._serdes", "deserialize_value"),
    ("dagster._serdes", "serialize_value"),
    (
        "dagster._core.definitions.asset_checks.asset_check_evaluation",
        "AssetCheckEvaluationTargetMaterializationData",
    ),
    ("dagster._core.execution.compute_logs", "tail_to_stream"),
    ("dagster._core.execution.plan.execute_step", "_get_output_asset_events"),
    ("dagster._core.storage.event_log.sqlite.sqlite_event_log", "SqliteEventLogStorage"),
    ("dagster._core.asset_graph_view.serializable_entity_subset", "SerializableEntitySubset"),
    ("dagster._core.storage.asset_check_state", "AssetCheckState"),
    ("dagster._core.storage.asset_check_execution_record", "AssetCheckExecutionResolvedStatus"),
    ("dagster._core.storage.dagster_run", "FINISHED_STATUSES"),
    ("dagster._core.storage.event_log.sqlite.sqlite_event_log", "SQLITE_BUSY_TIMEOUT_SECONDS"),
    ("dagster._core.storage.event_log.sqlite.sqlite_event_log", "INDEX_SHARD_NAME"),
    ("dagster._core.storage.sql", "create_engine"),
    ("dagster._core", "events"),
    ("dagster._core.events", "log_step_event"),
    ("dagster._core.events", "DagsterEventBatchMetadata"),
    ("dagster._core.events", "generate_event_batch_id"),
    ("dagster._core.events", "AssetObservationData"),
    ("dagster._core.events", "DagsterEvent"),
    ("dagster._core.instance.utils", "RUNLESS_JOB_NAME"),
    ("dagster._core.instance.utils", "RUNLESS_RUN_ID"),
)


def job_origins(job_name: str, workspace_yaml: Path, location_module: str):
    """Where the UI finds `job_name`: its code location's remote origin (the run list, the
    timeline and the job's Runs tab select runs by it) and the Python origin a run worker loads."""
    # Imported here: the workspace loader is only needed when an ingest creates its runs.
    from dagster._core.code_pointer import CodePointer
    from dagster._core.definitions.repository_definition.valid_definitions import (
        SINGLETON_REPOSITORY_NAME,
    )
    from dagster._core.origin import RepositoryPythonOrigin
    from dagster._core.remote_origin import RemoteRepositoryOrigin
    from dagster._core.workspace.load import (
        location_origin_from_module_name,
        location_origins_from_yaml_paths,
    )

    if workspace_yaml.is_file():
        (location,) = location_origins_from_yaml_paths([str(workspace_yaml)])
    else:
        location = location_origin_from_module_name(location_module, None, None)
    target = location.loadable_target_origin
    python = RepositoryPythonOrigin(
        target.executable_path or sys.executable,
        CodePointer.from_module(target.module_name, "defs", target.working_directory),
    )
    remote = RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME)
    return remote.get_job_origin(job_name), python.get_job_origin(job_name)


def partition_tags(keys: list[str]) -> dict[str, str]:
    """A run's partition tags: one document's key, or a batch's range (first and last key in
    partition order), as a backfill tags the runs it cuts."""
    if len(keys) == 1:
        return {PARTITION_NAME_TAG: keys[0]}
    return {ASSET_PARTITION_RANGE_START_TAG: keys[0], ASSET_PARTITION_RANGE_END_TAG: keys[-1]}


def run_documents(instance, run) -> list[str]:
    """The documents a run carried, in partition order: its partition, or its range's keys."""
    if PARTITION_NAME_TAG in run.tags:
        return [run.tags[PARTITION_NAME_TAG]]
    start = run.tags.get(ASSET_PARTITION_RANGE_START_TAG)
    end = run.tags.get(ASSET_PARTITION_RANGE_END_TAG)
    if start is None or end is None:
        return []
    keys = instance.get_dynamic_partitions(documents_partitions.name)
    if start not in keys or end not in keys:
        return []
    return keys[keys.index(start) : keys.index(end) + 1]


def execute_in_process(job_def, run, instance):
    """Execute a run created for `job_def` here, as a run worker would; its events, not raised."""
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.api import execute_run

    return execute_run(InMemoryJob(job_def), run, instance, raise_on_error=False)


def mark_interrupt_received() -> None:
    """Set where Dagster's own handlers would put a signal they took: the run being created
    stops at its first step."""
    from dagster._utils import interrupts

    interrupts._received_interrupt["received"] = True


def _partitions_data_version(self: DataVersionCache, key, partition_keys):
    """Dagster's input version of a partitioned parent, read from its observations when it is
    observed rather than materialized (dagster-io/dagster#33988, fixed this way by the open
    #34051): Dagster 1.13 reads materializations only, so every step reading an observed source
    recorded `input_data_version/<source>` as the hash of nothing (e3b0c442...). The same hash
    of the partitions' versions, sorted by partition, as Dagster computes for materializations."""
    from hashlib import sha256

    from dagster import DataVersion

    instance = self._context.instance
    records = instance.get_asset_records([key])
    observed = bool(records) and records[0].asset_entry.last_materialization_record is None
    event_type = (
        DagsterEventType.ASSET_OBSERVATION if observed else DagsterEventType.ASSET_MATERIALIZATION
    )
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        key, event_type, [DATA_VERSION_TAG], asset_partitions=list(partition_keys)
    )
    versions = [tags[partition][DATA_VERSION_TAG] for partition in sorted(tags)]
    return DataVersion(sha256("".join(versions).encode("utf8")).hexdigest())


# Kept to check (test_dagster_private) that the method replaced is still Dagster's, as it was.
DAGSTER_PARTITIONS_DATA_VERSION = DataVersionCache._get_partitions_data_version_from_keys
DataVersionCache._get_partitions_data_version_from_keys = _partitions_data_version


# {(run id, asset key): {partition: data version}}: a batch's outputs' own versions, set by the
# step just before its output (`set_partition_data_versions`) and taken as its events are made.
_PARTITION_DATA_VERSIONS: dict[tuple[str, object], dict[str, str]] = {}


def add_partition_metadata(context, metadata: Mapping[str, Mapping[str, object]]) -> None:
    """Each partition's own metadata on the materializations of the step's next output, as
    `context.add_asset_metadata(partition_key=)` adds it, with the step's partitions read once:
    Dagster reads every partition of the definition back from the instance on each call, so a
    batch's metadata cost its documents times all documents known."""
    targeted = set(context.partition_keys)
    if stray := sorted(set(metadata) - targeted):
        raise DagsterInvariantViolationError(f"partitions not targeted by the step: {stray}")
    step = context.op_execution_context._step_execution_context
    for key, values in metadata.items():
        step._metadata_accumulator = step._metadata_accumulator.with_additional_asset_metadata(
            asset_key=context.assets_def.key, metadata=values, partition_key=key
        )


def set_partition_data_versions(context, versions: dict[str, str]) -> None:
    """The data version of each partition of the output the step yields next: Dagster takes one
    version for a step's output, so a batch's documents would otherwise share Dagster's logical
    one, and a document re-made identically in a batch would not leave its children fresh as it
    does alone."""
    _PARTITION_DATA_VERSIONS[(context.run.run_id, context.assets_def.key)] = versions


def _with_partition_data_versions(*args):
    """Dagster's materialization events for an output, each partition's data version its own
    where the step set one (as a document alone sets it on its Output). The arguments are
    Dagster's: (asset_key, asset_partitions, output, output_def, io_manager_metadata,
    step_context, execution_type), checked by test_dagster_private."""
    asset_key, step_context = args[0], args[5]
    versions = _PARTITION_DATA_VERSIONS.pop((step_context.run_id, asset_key), {})
    events = DAGSTER_OUTPUT_ASSET_EVENTS(*args)
    for event in events:
        version = versions.get(getattr(event, "partition", None))
        if version is None or not isinstance(event, AssetMaterialization):
            yield event
            continue
        yield AssetMaterialization(
            asset_key=event.asset_key,
            partition=event.partition,
            metadata=event.metadata,
            tags={
                **event.tags,
                DATA_VERSION_TAG: version,
                DATA_VERSION_IS_USER_PROVIDED_TAG: "true",
            },
        )


# Kept to check (test_dagster_private) that the function replaced is still Dagster's, as it was.
DAGSTER_OUTPUT_ASSET_EVENTS = execute_step._get_output_asset_events
execute_step._get_output_asset_events = _with_partition_data_versions


@contextmanager
def _tail_deaf_to_ctrl_c(path, stream):
    """Dagster's mirror of a run's stdout or stderr (a `tail` and its orphan watcher, two
    processes in the ingest's process group), started deaf to SIGINT: Ctrl-C reaches the whole
    foreground group, and the watcher would print a KeyboardInterrupt traceback where the person
    expects the ingest's own summary. Dagster ends both with SIGTERM when the run ends."""
    with ExitStack() as stack:
        with children_deaf_to_stop_signals((signal.SIGINT,)):
            pids = stack.enter_context(DAGSTER_TAIL_TO_STREAM(path, stream))
        yield pids


# Kept to check (test_dagster_private) that the function replaced is still Dagster's.
DAGSTER_TAIL_TO_STREAM = compute_logs.tail_to_stream
compute_logs.tail_to_stream = _tail_deaf_to_ctrl_c

# Partition keys one statement names at most: SQLite takes 32,766 variables a statement.
KEYS_A_STATEMENT = 500
# The shards whose engines a storage keeps: the index and the runs being written.
KEPT_SHARD_ENGINES = 8
# Dagster hands the storage a run's planned events and an output's materializations (one a
# document of a batch) as one batch when this is set, and writes them one at a time otherwise.
EVENT_BATCH_SIZE = "1000"
os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)

# The connections of the batch this thread is writing: (storage, {shard: connection}).
_open_batch = threading.local()


def _kept_engine(storage, shard: str):
    """The shard's engine, made as Dagster makes it, set up on first use; under `_db_lock`."""
    engines = storage.__dict__.setdefault("_kept_shard_engines", OrderedDict())
    engine = engines.pop(shard, None) or create_engine(
        storage.conn_string_for_shard(shard),
        poolclass=NullPool,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
    )
    engines[shard] = engine
    while len(engines) > KEPT_SHARD_ENGINES:
        engines.popitem(last=False)[1].dispose()
    # Checked on every use, as Dagster does: a wipe forgets which shards were set up.
    if shard not in storage._initialized_dbs:
        if shard == INDEX_SHARD_NAME or not _new_shard_from_template(storage, shard):
            storage._initdb(engine)
        storage._initialized_dbs.add(shard)
    return engine


# A run shard as Dagster's set-up leaves it (its tables, journal mode and schema revision),
# made once a process: setting up each run's new file through the schema and its migrations
# took a third of a second a run.
_run_shard_template: bytes | None = None


def _new_shard_from_template(storage, shard: str) -> bool:
    """Put the set-up shard in place of a run's shard file that does not exist yet; False when
    the file exists (another process made it first, or it holds events), left to Dagster."""
    global _run_shard_template
    target = Path(storage.path_for_shard(shard))
    if target.exists():
        return False
    if _run_shard_template is None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "shard.db"
            engine = create_engine(f"sqlite:///{path}", poolclass=NullPool)
            storage._initdb(engine)
            engine.dispose()
            _run_shard_template = path.read_bytes()
    # Written beside it, then linked: a reader never meets a part-written file, and a file
    # another process put there first is kept.
    staged = target.with_name(f".{target.name}.{os.getpid()}.staged")
    staged.write_bytes(_run_shard_template)
    try:
        os.link(staged, target)
    except FileExistsError:
        return False
    finally:
        staged.unlink()
    return True


@contextmanager
def _connect_kept_engine(self, shard: str):
    """A transaction on one SQLite shard of the event log, as Dagster's own `_connect`, with the
    shard's engine kept between events. Dagster builds and disposes of an engine per event
    written, and with it SQLAlchemy's cache of compiled statements: every event of a batch's
    documents then compiled its inserts and updates anew (a third of a short document's run).
    The engine keeps no connection open (NullPool, as Dagster's), so the files stay free.
    Inside `_store_event_batch_together`, the batch's transaction on the shard."""
    batch = getattr(_open_batch, "connections", None)
    if batch is not None and batch[0] is self:
        connections = batch[1]
        if shard not in connections:
            connections[shard] = _kept_engine(self, shard).connect()
            connections[shard].begin()
        yield connections[shard]
        return
    with self._db_lock, _kept_engine(self, shard).connect() as conn, conn.begin():
        yield conn


@contextmanager
def _one_transaction_a_shard(storage):
    """Every event this thread writes to `storage` inside the block, in one transaction a shard,
    committed at its end; on an error nothing of it is kept. Inside another such block (a batch
    reported inside `events_written_together`), that block's transactions."""
    batch = getattr(_open_batch, "connections", None)
    if batch is not None and batch[0] is storage:
        yield
        return
    with storage._db_lock:
        connections: dict = {}
        _open_batch.connections = (storage, connections)
        try:
            yield
            for connection in connections.values():
                connection.commit()
        finally:
            _open_batch.connections = None
            for connection in connections.values():
                connection.close()  # rolls back what was not committed


def _store_event_batch_together(self, events) -> None:
    """Dagster's batch of events, each written as Dagster writes it, in one transaction a shard
    (Dagster's SQLite storage writes each event in transactions of its own, and a batch's 50
    documents' materializations took 150 of them). On an error nothing of the batch is kept,
    and Dagster writes the events one at a time."""
    with _one_transaction_a_shard(self):
        for kind, group in groupby(events, _written_together):
            if kind is None:
                for event in group:
                    self.store_event(event)
            elif kind[0] == DagsterEventType.ASSET_CHECK_EVALUATION:
                _store_check_results_together(self, list(group))
            else:
                _store_asset_events_together(self, list(group))


# Events of one asset and run written together: they touch no run or check status.
WRITTEN_TOGETHER = {
    DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
    DagsterEventType.ASSET_MATERIALIZATION,
    DagsterEventType.ASSET_OBSERVATION,
}


def _written_together(event) -> tuple | None:
    """What a run's events written together share: a planned materialization's, a
    materialization's or an observation's kind and asset; a check result's kind, asset and
    check. None for any other event, and for one of no partition."""
    dagster_event = event.dagster_event
    if dagster_event is None:
        return None
    kind = dagster_event.event_type
    if kind == DagsterEventType.ASSET_CHECK_EVALUATION:
        result = dagster_event.event_specific_data
        if result.partition is None or not event.run_id:
            return None
        return (kind, result.asset_key.to_string(), result.check_name)
    if kind not in WRITTEN_TOGETHER or dagster_event.partition is None:
        return None
    return (kind, dagster_event.asset_key.to_string())


def _store_asset_events_together(storage, events: list) -> None:
    """One asset's planned materializations or materializations of a run (one a document of the
    batch), or its observations (one a new document's file), as `store_event` writes each: its
    row in the run's shard and in the index, its tags (a data version) beside the index row,
    then the asset's entry (its last run, materialization and event time, which only the last
    event sets as it stands after them all). The rows go as one statement a shard: Dagster's
    statement for each event, its values inline, was compiled anew each time (planning a run of
    50 documents took seconds)."""
    *earlier, last = events
    if earlier:
        _, ids = _insert_event_rows(storage, earlier)
        with storage.index_connection() as conn:
            storage._store_asset_event_tags(conn, earlier, ids)
    storage.store_event(last)


def _insert_event_rows(storage, events: list) -> tuple[list[dict], list[int]]:
    """One run's events as rows of its shard and of the index, one statement each (inside
    `_store_event_batch_together`'s transaction): the rows, and the ids the index gave them."""
    rows = [storage._event_to_row(event) for event in events]
    with storage.run_connection(events[0].run_id) as conn:
        conn.execute(SqlEventLogStorageTable.insert(), rows)
    with storage.index_connection() as conn:
        inserted = conn.execute(
            SqlEventLogStorageTable.insert().returning(SqlEventLogStorageTable.c.id), rows
        )
        # SQLite numbers the rows of one insert in their order; it returns them in any.
        return rows, sorted(row.id for row in inserted)


# Dagster's update of a check's execution row by a result, each value a parameter: one
# statement compiled once, run for every result of a batch that has its row.
_CHECK_RESULT_UPDATE = (
    AssetCheckExecutionsTable.update()
    .where(
        (AssetCheckExecutionsTable.c.asset_key == bindparam("b_asset_key"))
        & (AssetCheckExecutionsTable.c.check_name == bindparam("b_check_name"))
        & (AssetCheckExecutionsTable.c.run_id == bindparam("b_run_id"))
        & (AssetCheckExecutionsTable.c.partition == bindparam("b_partition"))
    )
    .values(
        execution_status=bindparam("b_execution_status"),
        evaluation_event=bindparam("b_evaluation_event"),
        evaluation_event_timestamp=bindparam("b_evaluation_event_timestamp"),
        evaluation_event_storage_id=bindparam("b_evaluation_event_storage_id"),
        materialization_event_storage_id=bindparam("b_materialization_event_storage_id"),
    )
)


def _store_check_results_together(storage, results: list) -> None:
    """One check's results in a run (one a document of the batch), as `store_event` writes each:
    its row in the run's shard and in the index, then the check's execution row for that
    document: updated where a planned event made one, else added (a batch's run plans its checks
    once for all its documents). The rows go as one statement a shard, the updates as one
    statement run for each. When some documents have their row and others not, each result is
    left to Dagster's own update, which adds what is missing and says what is doubled."""
    rows, ids = _insert_event_rows(storage, results)
    with storage.index_connection() as conn:
        values = [
            _check_result_values(storage, event, row["event"], event_id)
            for event, row, event_id in zip(results, rows, ids, strict=True)
        ]
        updated = conn.execute(_CHECK_RESULT_UPDATE, values).rowcount
        if updated == 0:
            conn.execute(
                AssetCheckExecutionsTable.insert(),
                [{column[2:]: value for column, value in v.items()} for v in values],
            )
    if 0 < updated != len(results):
        for event, event_id in zip(results, ids, strict=True):
            storage._update_asset_check_evaluation(event, event_id)


def _check_result_values(storage, event, serialized: str, event_id: int) -> dict:
    """An execution row's values for a result, named as the update's parameters (`b_` and the
    column)."""
    result = event.dagster_event.event_specific_data
    target = result.target_materialization_data
    status = (
        AssetCheckExecutionRecordStatus.SUCCEEDED
        if result.passed
        else AssetCheckExecutionRecordStatus.FAILED
    )
    return {
        "b_asset_key": result.asset_key.to_string(),
        "b_check_name": result.check_name,
        "b_run_id": event.run_id,
        "b_partition": result.partition,
        "b_execution_status": status.value,
        "b_evaluation_event": serialized,
        "b_evaluation_event_timestamp": storage._event_insert_timestamp(event),
        "b_evaluation_event_storage_id": event_id,
        "b_materialization_event_storage_id": target.storage_id if target else None,
    }


def report_observations_together(instance, observations: list[AssetObservation]) -> None:
    """Observations outside any run, as `report_runless_asset_event` reports each, an asset's
    as one batch of Dagster's event writes: on SQLite one statement a shard
    (`_store_asset_events_together`), on PostgreSQL dagster-postgres's batch insert (which sets
    an asset's entry from its batch's last event, hence a batch an asset)."""
    by_asset = sorted(observations, key=lambda o: o.asset_key.to_string())
    for _, same_asset in groupby(by_asset, key=lambda o: o.asset_key.to_string()):
        batch = list(same_asset)
        batch_id = generate_event_batch_id()
        for position, observation in enumerate(batch, start=1):
            instance.report_dagster_event(
                DagsterEvent(
                    DagsterEventType.ASSET_OBSERVATION.value,
                    job_name=RUNLESS_JOB_NAME,
                    event_specific_data=AssetObservationData(observation),
                ),
                run_id=RUNLESS_RUN_ID,
                batch_metadata=DagsterEventBatchMetadata(batch_id, position == len(batch)),
            )


@contextmanager
def events_written_together(instance):
    """The events this thread reports to the instance inside the block (a loop of
    `report_runless_asset_event`, say), in one transaction a shard of a SQLite event log: kept
    all or none. Other storages write each as Dagster does."""
    storage = instance.event_log_storage
    if not isinstance(storage, SqliteEventLogStorage):
        yield
        return
    with _one_transaction_a_shard(storage):
        yield


# Check results a step said it yields next, to be written as one batch:
# (run id, asset key) -> [results left, batch id].
_CHECK_RESULT_BATCHES: dict[tuple[str, object], list] = {}


@contextmanager
def check_results_written_together(context, count: int):
    """The `count` check results the step yields inside this block go to a SQLite event log as
    one batch (`_store_event_batch_together`): Dagster writes each result by itself, in three
    transactions, and a batch's documents have ten checks each. Other storages write each
    result as Dagster does."""
    instance = context.instance
    if count < 2 or not isinstance(instance.event_log_storage, SqliteEventLogStorage):
        yield
        return
    key = (context.run.run_id, context.assets_def.key)
    batch_id = generate_event_batch_id()
    _CHECK_RESULT_BATCHES[key] = [count, batch_id]
    try:
        yield
    finally:
        _CHECK_RESULT_BATCHES.pop(key, None)
        # Still in Dagster's buffer when the step stopped before its last result.
        if left := instance._event_buffer_impl.pop(batch_id, None):
            instance.event_log_storage.store_event_batch(left)


def _log_check_results_in_batches(step_context, event, batch_metadata) -> None:
    """Dagster's `log_step_event`, with a check result the step announced marked as part of its
    batch (the last one ends it, and Dagster then hands the batch to the storage)."""
    if batch_metadata is None and event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
        key = (step_context.run_id, event.asset_check_evaluation_data.asset_key)
        batch = _CHECK_RESULT_BATCHES.get(key)
        if batch is not None:
            batch[0] -= 1
            batch_metadata = DagsterEventBatchMetadata(batch[1], batch[0] == 0)
            if batch[0] == 0:
                del _CHECK_RESULT_BATCHES[key]
    DAGSTER_LOG_STEP_EVENT(step_context, event, batch_metadata)


# Kept to check (test_dagster_private) that the function replaced is still Dagster's.
DAGSTER_LOG_STEP_EVENT = dagster_events.log_step_event
dagster_events.log_step_event = _log_check_results_in_batches

# Kept to check (test_dagster_private) that the method replaced is still Dagster's.
DAGSTER_SQLITE_CONNECT = SqliteEventLogStorage._connect
SqliteEventLogStorage._connect = _connect_kept_engine
SqliteEventLogStorage.store_event_batch = _store_event_batch_together


def runs_with_document_events(instance, keys: list[str]) -> dict[str, set[str]]:
    """Every run holding an event of these documents' partitions, with the documents it holds:
    their own runs and the batches' that carried them (found by their events, as their
    partitions may be gone already)."""
    table = SqlEventLogStorageTable
    runs: dict[str, set[str]] = {}
    with instance.event_log_storage.index_connection() as conn:
        for start in range(0, len(keys), KEYS_A_STATEMENT):
            rows = conn.execute(
                db_select([table.c.run_id, table.c.partition])
                .where(table.c.partition.in_(keys[start : start + KEYS_A_STATEMENT]))
                .distinct()
            ).fetchall()
            for run_id, partition in rows:
                runs.setdefault(run_id, set()).add(partition)
    return runs


def _forget_latest_materializations(conn, deleted: set[int]) -> None:
    """An asset's cached latest materialization (its whole event, metadata included) that was
    deleted becomes the latest one left."""
    from dagster._core.event_api import EventLogRecord
    from dagster._core.storage.event_log.schema import AssetKeyTable

    assets, table = AssetKeyTable, SqlEventLogStorageTable
    rows = conn.execute(db_select([assets.c.asset_key, assets.c.last_materialization])).fetchall()
    for asset_key, cached in rows:
        if not cached or deserialize_value(cached, EventLogRecord).storage_id not in deleted:
            continue
        latest = conn.execute(
            db_select([table.c.id, table.c.event])
            .where(
                (table.c.asset_key == asset_key)
                & (table.c.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION.value)
            )
            .order_by(table.c.id.desc())
            .limit(1)
        ).fetchone()
        value = (
            serialize_value(
                EventLogRecord(
                    storage_id=latest[0],
                    event_log_entry=deserialize_value(latest[1], EventLogEntry),
                )
            )
            if latest
            else None
        )
        conn.execute(
            assets.update()
            .where(assets.c.asset_key == asset_key)
            .values(last_materialization=value)
        )


def delete_document_events(instance, run_id: str, keys: list[str]) -> None:
    """Documents' events in a run that carried others too (a batch): their materializations
    (whose metadata holds their text), planned events and check results go, in the run's own
    storage and in the index; the run and the other documents' events stay."""
    from dagster._core.storage.event_log.schema import (
        AssetCheckExecutionsTable,
        AssetEventTagsTable,
    )

    storage = instance.event_log_storage
    table, checks = SqlEventLogStorageTable, AssetCheckExecutionsTable
    for start in range(0, len(keys), KEYS_A_STATEMENT):
        some = keys[start : start + KEYS_A_STATEMENT]
        where = (table.c.run_id == run_id) & table.c.partition.in_(some)
        for connection in (storage.run_connection(run_id), storage.index_connection()):
            with connection as conn:
                ids = [row[0] for row in conn.execute(db_select([table.c.id]).where(where))]
                conn.execute(table.delete().where(where))
                if ids:
                    conn.execute(
                        AssetEventTagsTable.delete().where(AssetEventTagsTable.c.event_id.in_(ids))
                    )
        with storage.index_connection() as conn:
            conn.execute(
                checks.delete().where((checks.c.run_id == run_id) & checks.c.partition.in_(some))
            )
            # `ids` are the index's: the storage ids an asset's cached latest event is kept under.
            _forget_latest_materializations(conn, set(ids))


def latest_materializations(instance, asset_key, keys: list[str]) -> dict[str, object]:
    """Each partition's latest materialization, as the target a check result names (what
    Dagster's own AssetCheckResult records for one partition): the UI attributes a partition's
    check results to its latest materialization through it."""
    from dagster import AssetRecordsFilter
    from dagster._core.definitions.asset_checks.asset_check_evaluation import (
        AssetCheckEvaluationTargetMaterializationData,
    )

    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=asset_key, asset_partitions=keys), limit=len(keys)
    ).records
    latest: dict[str, object] = {}
    for record in records:  # newest first: the first of each partition is its latest
        latest.setdefault(
            record.partition_key,
            AssetCheckEvaluationTargetMaterializationData(
                run_id=record.event_log_entry.run_id,
                storage_id=record.storage_id,
                timestamp=record.timestamp,
            ),
        )
    return latest


def materialization_tags(instance, storage_ids: list[int]) -> dict[int, dict[str, str]]:
    """The tags of the materializations stored under these ids (their data version and what it
    was made from), read from each event's stored JSON: Dagster's reader builds each whole event,
    its metadata included, which was most of planning an ingest (10 ms a document). An event
    of another shape is read by Dagster's."""
    table, tags = SqlEventLogStorageTable, {}
    with instance.event_log_storage.index_connection() as conn:
        for start in range(0, len(storage_ids), KEYS_A_STATEMENT):
            some = storage_ids[start : start + KEYS_A_STATEMENT]
            for event_id, event in conn.execute(
                db_select([table.c.id, table.c.event]).where(table.c.id.in_(some))
            ):
                try:
                    found = json.loads(event)["dagster_event"]["event_specific_data"]
                    tags[event_id] = dict(found["materialization"]["tags"] or {})
                except (KeyError, TypeError, ValueError):
                    tags[event_id] = dict(deserialize_value(event, EventLogEntry).tags or {})
    return tags
