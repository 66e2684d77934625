"""Every private Dagster API the project uses, and only in this package: a Dagster upgrade that
moves or changes one fails on import of the package and in `test_dagster_private.py`, which
names each. Dagster's names the project uses unchanged are imported here; each module holds the
project's code around the private APIs of one concern, and its replacements of Dagster's
functions (`install`, called below on import).

Why each is needed, and where:
- run creation as the daemon does it (`job_origins`, `execute_in_process`; `runs.py`): a CLI
  ingest's runs appear on the job's Runs tab and timeline, while models stay loaded in one
  process;
- stale status (`AssetGraphView`, `CachingStaleStatusResolver`, ...; Dagster's, for
  `run_plan.py`): which documents and steps an ingest or the refresh schedule must run, by
  Dagster's own data-version rules;
- run and check records (`PartitionKeyFilter`, `AssetCheckExecutionRecordStatus`, tags; a
  batch's run names its range of partition keys with the tags a backfill uses: `runs.py`); a
  removed document's events in a batch's run (`delete_document_events`: Dagster deletes whole
  runs only), partitions' latest materializations and their tags read from the stored JSON
  (`latest_materializations`, `materialization_tags`): `event_records.py`;
- interrupts (`pop_captured_interrupt`, `mark_interrupt_received`; `runs.py`): a signal taken
  before a run's own handlers are in place still stops it at its first step;
- the instance's automation switch (`set_auto_materialize_paused`, `InstigatorType`;
  Dagster's): the UI's "Auto-materialize on/off" tag reads it, while automation runs as
  `automation_sensor`.
- input provenance of observed partitions (`DataVersionCache`): `_partitions_data_version` in
  `data_versions.py`, installed on import;
- each document's own data version in a batch's output (`_get_output_asset_events`):
  `_with_partition_data_versions` in `data_versions.py`, installed on import;
- Ctrl-C kept from the processes mirroring a run's output (`tail_to_stream`):
  `_tail_deaf_to_ctrl_c` in `log_tail.py`, installed on import;
- the checks' partition views (`AssetCheckState`, `SerializableEntitySubset`, ...; Dagster's):
  see `event_log_storage.py`;
- SQLite event log writes (`SqliteEventLogStorage._connect`, `store_event_batch`;
  `event_writes.py`): one engine kept a shard (`_connect_kept_engine`) and Dagster's event
  batches written in one transaction a shard (`_store_event_batch_together`), a step's check
  results among them (`log_step_event`: `check_results_written_together`), installed on import.
"""

from __future__ import annotations

from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.asset_graph_view.serializable_entity_subset import SerializableEntitySubset
from dagster._core.definitions.data_version import (
    DATA_VERSION_TAG,
    CachingStaleStatusResolver,
    StaleStatus,
)
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.scheduler.instigation import InstigatorType
from dagster._core.storage.asset_check_execution_record import (
    AssetCheckExecutionRecordStatus,
    AssetCheckExecutionResolvedStatus,
    AssetCheckPartitionInfo,
)
from dagster._core.storage.asset_check_state import AssetCheckState
from dagster._core.storage.dagster_run import FINISHED_STATUSES
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.tags import PARTITION_NAME_TAG
from dagster._daemon.asset_daemon import get_auto_materialize_paused, set_auto_materialize_paused
from dagster._time import get_current_datetime
from dagster._utils.interrupts import pop_captured_interrupt

from rag_assets.defs.dagster_private import data_versions, event_writes, log_tail
from rag_assets.defs.dagster_private.data_versions import (
    DAGSTER_OUTPUT_ASSET_EVENTS,
    DAGSTER_PARTITIONS_DATA_VERSION,
    add_partition_metadata,
    set_partition_data_versions,
)
from rag_assets.defs.dagster_private.event_records import (
    KEYS_A_STATEMENT,
    delete_document_events,
    latest_materializations,
    materialization_tags,
    runs_with_document_events,
)
from rag_assets.defs.dagster_private.event_writes import (
    DAGSTER_LOG_STEP_EVENT,
    DAGSTER_SQLITE_CONNECT,
    KEPT_SHARD_ENGINES,
    check_results_written_together,
    events_written_together,
    report_events_together,
)
from rag_assets.defs.dagster_private.log_tail import DAGSTER_TAIL_TO_STREAM
from rag_assets.defs.dagster_private.runs import (
    execute_in_process,
    job_origins,
    mark_interrupt_received,
    partition_tags,
    run_documents,
)

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
    "report_events_together",
    "delete_document_events",
    "partition_tags",
    "run_documents",
    "runs_with_document_events",
    "mark_interrupt_received",
    "pop_captured_interrupt",
    "set_auto_materialize_paused",
    "set_partition_data_versions",
    "KEPT_SHARD_ENGINES",
    "DAGSTER_PARTITIONS_DATA_VERSION",
    "DAGSTER_OUTPUT_ASSET_EVENTS",
    "DAGSTER_TAIL_TO_STREAM",
    "DAGSTER_LOG_STEP_EVENT",
    "DAGSTER_SQLITE_CONNECT",
]

# (module, name) of each private API the package imports.
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
    ("dagster._core.events", "StepMaterializationData"),
    ("dagster._core.events", "DagsterEvent"),
    ("dagster._core.instance.utils", "RUNLESS_JOB_NAME"),
    ("dagster._core.instance.utils", "RUNLESS_RUN_ID"),
)


# Each module's replacements of Dagster's functions, installed once: on import of the package.
data_versions.install()
log_tail.install()
event_writes.install()
