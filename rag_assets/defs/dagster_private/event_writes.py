"""SQLite event log writes, installed on import of the package (`install`): one engine kept a
shard (`_connect_kept_engine`), a run's new shard copied from a set-up one
(`_new_shard_from_template`), and Dagster's event batches written in one transaction a shard
(`_store_event_batch_together`), an asset's events or a check's results as one statement a
shard; runless observations and materializations reported as one batch an asset and kind
(`report_events_together`), and a step's check results marked as one batch
(`check_results_written_together`, through `log_step_event`)."""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from contextlib import contextmanager
from itertools import groupby
from pathlib import Path

from dagster import AssetMaterialization, AssetObservation, DagsterEventType
from dagster._core import events as dagster_events
from dagster._core.events import (
    AssetObservationData,
    DagsterEvent,
    DagsterEventBatchMetadata,
    StepMaterializationData,
    generate_event_batch_id,
)
from dagster._core.instance.utils import RUNLESS_JOB_NAME, RUNLESS_RUN_ID
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
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
from sqlalchemy import bindparam
from sqlalchemy.pool import NullPool

# The shards whose engines a storage keeps: the index and the runs being written.
KEPT_SHARD_ENGINES = 8
# Dagster hands the storage a run's planned events and an output's materializations (one a
# document of a batch) as one batch when this is set (`install`), and one at a time otherwise.
EVENT_BATCH_SIZE = "1000"

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
# statement compiled once, run for every result of a batch that has its row. Each parameter is
# `b_` and its column: SQLAlchemy refuses one named like a column of the updated table.
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


def report_events_together(instance, events: list[AssetObservation | AssetMaterialization]) -> None:
    """Observations and materializations outside any run, as `report_runless_asset_event`
    reports each: every observation before every materialization, and each asset's of one kind
    as one batch of Dagster's event writes: on SQLite one statement a shard
    (`_store_asset_events_together`), on PostgreSQL dagster-postgres's batch insert (which sets
    an asset's entry from its batch's last event, hence a batch an asset and kind)."""
    in_order = sorted(
        events, key=lambda e: (isinstance(e, AssetMaterialization), e.asset_key.to_string())
    )
    for _, same in groupby(in_order, key=lambda e: (type(e), e.asset_key.to_string())):
        batch = list(same)
        batch_id = generate_event_batch_id()
        for position, event in enumerate(batch, start=1):
            kind, data = (
                (DagsterEventType.ASSET_MATERIALIZATION, StepMaterializationData(event))
                if isinstance(event, AssetMaterialization)
                else (DagsterEventType.ASSET_OBSERVATION, AssetObservationData(event))
            )
            instance.report_dagster_event(
                DagsterEvent(kind.value, job_name=RUNLESS_JOB_NAME, event_specific_data=data),
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


# Dagster's originals, kept to check (test_dagster_private) that what is replaced is still
# Dagster's.
DAGSTER_LOG_STEP_EVENT = dagster_events.log_step_event
DAGSTER_SQLITE_CONNECT = SqliteEventLogStorage._connect


def install() -> None:
    """Dagster's batches handed to the storage, a step's announced check results marked as one,
    and the SQLite storage's kept engines and batch writes in place of Dagster's."""
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)
    dagster_events.log_step_event = _log_check_results_in_batches
    SqliteEventLogStorage._connect = _connect_kept_engine
    SqliteEventLogStorage.store_event_batch = _store_event_batch_together
