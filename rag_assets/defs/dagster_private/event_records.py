"""Event records read and deleted below Dagster's API: the runs holding documents' events, and
a removed document's events deleted from a batch's run (`runs_with_document_events`,
`delete_document_events`: Dagster deletes whole runs only); each partition's latest
materialization as a check result's target (`latest_materializations`); materializations' tags
read from their stored JSON (`materialization_tags`)."""

from __future__ import annotations

import json

from dagster import AssetRecordsFilter, DagsterEventType
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.event_api import EventLogRecord
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import (
    AssetCheckExecutionsTable,
    AssetEventTagsTable,
    AssetKeyTable,
    SqlEventLogStorageTable,
)
from dagster._core.storage.sqlalchemy_compat import db_select
from dagster._serdes import deserialize_value, serialize_value

# Partition keys one statement names at most: SQLite takes 32,766 variables a statement.
KEYS_A_STATEMENT = 500


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
