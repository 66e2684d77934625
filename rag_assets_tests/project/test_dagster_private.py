"""Dagster's private APIs are reached from one package only, and each one it names still exists:
an upgrade that moves or removes one fails here, by name, before anything else does."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from dagster import AssetKey, AssetMaterialization, ConfigurableIOManager

from rag_assets.defs import dagster_private
from rag_assets.defs.dagster_private import PRIVATE_APIS
from rag_assets_tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "rag_assets"
GATEWAY = PACKAGE / "defs" / "dagster_private"


@pytest.mark.parametrize(
    ("module", "name"), PRIVATE_APIS, ids=[f"{m}:{n}" for m, n in PRIVATE_APIS]
)
def test_each_private_api_used_still_exists(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name)


def _private_imports(path: Path) -> set[tuple[str, str]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagster._"):
            found |= {(node.module, alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {(a.name, "") for a in node.names if a.name.startswith("dagster._")}
    return found


def test_no_module_but_the_gateway_imports_a_private_api() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): imports
        for path in PACKAGE.rglob("*.py")
        if not path.is_relative_to(GATEWAY) and (imports := _private_imports(path))
    }
    assert offenders == {}


def test_the_gateway_lists_every_private_api_it_imports() -> None:
    imported = set().union(*map(_private_imports, GATEWAY.rglob("*.py")))
    imported -= {("dagster._utils", "interrupts")}
    assert imported <= set(PRIVATE_APIS)
    # the interrupt flag is reached through the module; its name is listed
    assert ("dagster._utils.interrupts", "_received_interrupt") in PRIVATE_APIS
    assert set(dagster_private.__all__) <= set(dir(dagster_private))


# Each Dagster function the gateway replaces or wraps, as it was when the replacement was
# written: its module, its parameters and what its source must still do.
REPLACED = {
    "DAGSTER_PARTITIONS_DATA_VERSION": (
        "dagster._core.execution.context.data_version_cache",
        ["self", "key", "partition_keys"],
        # the materializations-only read the replacement extends to observations
        ["ASSET_MATERIALIZATION"],
    ),
    "DAGSTER_OUTPUT_ASSET_EVENTS": (
        "dagster._core.execution.plan.execute_step",
        [
            "asset_key",
            "asset_partitions",
            "output",
            "output_def",
            "io_manager_metadata",
            "step_context",
            "execution_type",
        ],
        # one data version for every partition: what the wrapper makes per partition
        ["tags_for_event = {**all_tags}"],
    ),
    "DAGSTER_TAIL_TO_STREAM": ("dagster._core.execution.compute_logs", ["path", "stream"], []),
    "DAGSTER_SQLITE_CONNECT": (
        "dagster._core.storage.event_log.sqlite.sqlite_event_log",
        ["self", "shard"],
        # what the replacement keeps doing: NullPool engines, the busy timeout, set-up on first use
        ["NullPool", "SQLITE_BUSY_TIMEOUT_SECONDS", "_initialized_dbs", "_initdb"],
    ),
    "DAGSTER_LOG_STEP_EVENT": (
        "dagster._core.events",
        ["step_context", "event", "batch_metadata"],
        ["batch_metadata=batch_metadata"],
    ),
}


@pytest.mark.parametrize("name", sorted(REPLACED))
def test_each_replaced_function_is_still_dagsters_as_it_was(name: str) -> None:
    import inspect

    module, parameters, fragments = REPLACED[name]
    original = getattr(dagster_private, name)
    assert original.__module__ == module
    assert list(inspect.signature(original).parameters) == parameters
    source = inspect.getsource(original)
    assert all(fragment in source for fragment in fragments)


def test_the_log_mirrors_helpers_still_end_with_sigterm() -> None:
    import inspect

    import dagster._core.execution.compute_logs as compute_logs

    # terminate() (SIGTERM), which the Ctrl-C-deaf wrapper leaves its helpers open to
    assert "terminate()" in inspect.getsource(compute_logs._clean_up_subprocess)


def test_sqlite_event_log_keeps_a_bounded_engine_a_shard_and_sets_up_after_a_wipe(
    tmp_path: Path,
) -> None:
    from dagster import AssetKey, AssetMaterialization, DagsterInstance

    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        storage = instance.event_log_storage
        instance.report_runless_asset_event(AssetMaterialization(AssetKey("a0")))
        for i in range(dagster_private.KEPT_SHARD_ENGINES + 3):  # runs' shards, oldest let go
            with storage.run_connection(f"run-{i}"):
                pass
        engines = storage._kept_shard_engines
        assert len(engines) == dagster_private.KEPT_SHARD_ENGINES
        assert "run-0" not in engines and "run-10" in engines
        latest = engines["run-10"]
        with storage.run_connection("run-10"):
            assert storage._kept_shard_engines["run-10"] is latest
        storage.wipe()  # deletes the shard files: the kept engines meet new, empty files
        instance.report_runless_asset_event(AssetMaterialization(AssetKey("after")))
        assert instance.get_latest_materialization_event(AssetKey("after")) is not None
        assert instance.get_latest_materialization_event(AssetKey("a0")) is None


def test_partition_metadata_still_goes_through_the_steps_accumulator() -> None:
    import inspect

    from dagster._core.execution.context.system import StepExecutionContext

    # What add_partition_metadata does for each partition, as add_asset_metadata does for one.
    source = inspect.getsource(StepExecutionContext.add_asset_metadata)
    assert "self._metadata_accumulator.with_additional_asset_metadata(" in source
    assert "partition_key=partition_key" in source


def _event(run_id: str, event_type, data):
    """One event of a run's log, as a step or run creation reports it."""
    import time

    from dagster._core.events import DagsterEvent
    from dagster._core.events.log import EventLogEntry

    return EventLogEntry(
        error_info=None,
        level="debug",
        user_message="",
        run_id=run_id,
        timestamp=time.time(),
        dagster_event=DagsterEvent(event_type.value, "job", event_specific_data=data),
    )


def _materializations(run_id: str, count: int) -> list:
    from dagster import AssetKey, AssetMaterialization
    from dagster._core.events import DagsterEventType, StepMaterializationData

    return [
        _event(
            run_id,
            DagsterEventType.ASSET_MATERIALIZATION,
            StepMaterializationData(
                AssetMaterialization(
                    AssetKey("doc"), partition=f"p{i}", tags={"dagster/data_version": f"v{i}"}
                )
            ),
        )
        for i in range(count)
    ]


def test_an_event_batch_is_one_transaction_a_shard_all_or_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlalchemy
    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        storage = instance.event_log_storage
        storage.store_event_batch(_materializations("run-a", 1))  # the shards' engines exist
        commits: list[str] = []
        for shard, engine in storage._kept_shard_engines.items():
            sqlalchemy.event.listen(engine, "commit", lambda _c, shard=shard: commits.append(shard))
        storage.store_event_batch(_materializations("run-a", 20))
        assert sorted(commits) == sorted(storage._kept_shard_engines)  # the run's and the index
        records = instance.fetch_materializations(AssetKey("doc"), limit=100).records
        assert len(records) == 21
        assert len(storage.get_logs_for_run("run-a")) == 21

        stored = type(storage).store_event

        # The last is written by itself, after the others were written together.
        def fails_on_the_last(self, event):
            if event.dagster_event.partition == "p4":
                raise OSError("disk full")
            stored(self, event)

        monkeypatch.setattr(type(storage), "store_event", fails_on_the_last)
        with pytest.raises(OSError):
            storage.store_event_batch(_materializations("run-b", 5))
        monkeypatch.undo()
        assert storage.get_logs_for_run("run-b") == []
        assert len(instance.fetch_materializations(AssetKey("doc"), limit=100).records) == 21


def _planned(run_id: str, assets: list[str], partitions: int) -> list:
    """A run's planned materializations as Dagster reports them: each asset, each partition."""
    from dagster import AssetKey
    from dagster._core.events import AssetMaterializationPlannedData, DagsterEventType

    return [
        _event(
            run_id,
            DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
            AssetMaterializationPlannedData(AssetKey(asset), partition=f"p{i}"),
        )
        for asset in assets
        for i in range(partitions)
    ]


def _stored_rows(storage, run_id: str) -> dict[str, list[tuple]]:
    """What a storage holds of a run's events, ids and timestamps aside: its shard's rows, the
    index's rows, and each asset's entry (its last run and whether it has an event time)."""
    import sqlalchemy

    columns = "dagster_event_type, asset_key, partition, step_key, event"
    with storage.run_connection(run_id) as conn:
        shard = conn.execute(sqlalchemy.text(f"SELECT {columns} FROM event_logs ORDER BY id"))
        shard_rows = [tuple(r) for r in shard]
    with storage.index_connection() as conn:
        index = conn.execute(sqlalchemy.text(f"SELECT {columns} FROM event_logs ORDER BY id"))
        index_rows = [tuple(r) for r in index]
        entries = conn.execute(
            sqlalchemy.text(
                "SELECT asset_key, last_run_id, last_materialization_timestamp IS NOT NULL,"
                " last_materialization FROM asset_keys ORDER BY asset_key"
            )
        )
        entry_rows = [tuple(r) for r in entries]
        tags = conn.execute(
            sqlalchemy.text(
                "SELECT e.partition, t.asset_key, t.key, t.value FROM asset_event_tags t"
                " JOIN event_logs e ON e.id = t.event_id ORDER BY t.id"
            )
        )
        tag_rows = [tuple(r) for r in tags]
    return {"shard": shard_rows, "index": index_rows, "assets": entry_rows, "tags": tag_rows}


def test_a_runs_planned_events_written_together_are_what_dagster_writes_one_by_one(
    tmp_path: Path,
) -> None:
    import sqlalchemy
    from dagster import DagsterInstance

    events = _planned("run-a", ["parsed", "chunks"], 30) + _materializations("run-a", 30)
    (tmp_path / "together").mkdir()
    (tmp_path / "one-by-one").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "together")) as instance:
        storage = instance.event_log_storage
        storage.store_event_batch(events[:1])  # the shards' engines exist
        statements: list[str] = []
        for engine in storage._kept_shard_engines.values():
            sqlalchemy.event.listen(
                engine, "before_cursor_execute", lambda *a: statements.append(a[2])
            )
        storage.store_event_batch(events[1:])
        together = _stored_rows(storage, "run-a")
    # Each asset's rows in one statement a shard, not two inserts, tags and an update each.
    assert len(statements) < 30
    with DagsterInstance.local_temp(str(tmp_path / "one-by-one")) as instance:
        for event in events:
            instance.event_log_storage.store_event(event)
        one_by_one = _stored_rows(instance.event_log_storage, "run-a")
    assert len(together["index"]) == 90
    assert len(together["tags"]) == 30
    assert together == one_by_one
    assert ("parsed", "run-a", 1, None) in [
        (k.strip('[]"'), r, t, m) for k, r, t, m in together["assets"]
    ]


def _source_events(kind, assets: list[str], partitions: int) -> list:
    """`kind` (AssetObservation or AssetMaterialization) of each asset for each partition."""
    return [
        kind(asset, partition=f"p{i}", tags={"dagster/data_version": f"{asset}{i}"})
        for i in range(partitions)
        for asset in assets
    ]


def test_source_events_reported_together_are_what_dagster_writes_one_by_one(
    tmp_path: Path,
) -> None:
    import sqlalchemy
    from dagster import AssetKey, AssetMaterialization, AssetObservation, DagsterInstance

    from rag_assets.defs.dagster_private import events_written_together, report_events_together

    # As the CLI reports a folder of new documents: observations, then their materializations.
    observations = _source_events(AssetObservation, ["inbox_files", "parser_settings"], 25)
    recorded = _source_events(AssetMaterialization, ["inbox_files", "parser_settings"], 25)
    (tmp_path / "together").mkdir()
    (tmp_path / "one-by-one").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "together")) as instance:
        storage = instance.event_log_storage
        instance.report_runless_asset_event(observations[0])  # the shards' engines exist
        statements: list[str] = []
        for engine in storage._kept_shard_engines.values():
            sqlalchemy.event.listen(
                engine, "before_cursor_execute", lambda *a: statements.append(a[2])
            )
        # Inside the one transaction a shard the CLI opens around its reports, as it runs.
        with events_written_together(instance):
            report_events_together(instance, recorded + observations[1:])
        together = _stored_rows(storage, "")
        latest = instance.get_latest_data_version_record(AssetKey("parser_settings"), True, "p7")
        materialized = instance.get_materialized_partitions(AssetKey("inbox_files"))
    # Each asset's rows of a kind in a dozen statements, not two inserts, tags and an update
    # each (400).
    assert len(statements) < 60, statements
    assert materialized == {f"p{i}" for i in range(25)}
    assert (
        latest.event_log_entry.asset_observation.tags["dagster/data_version"] == "parser_settings7"
    )
    with DagsterInstance.local_temp(str(tmp_path / "one-by-one")) as instance:
        by_asset = sorted(observations[1:], key=lambda o: o.asset_key.to_string())
        by_asset += sorted(recorded, key=lambda o: o.asset_key.to_string())
        for event in observations[:1] + by_asset:
            instance.report_runless_asset_event(event)
        one_by_one = _stored_rows(instance.event_log_storage, "")
    assert len(together["tags"]) == 100
    assert _untimed(together) == _untimed(one_by_one)


def _untimed(stored: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    """Stored rows with each event's report time left out: the two instances reported theirs
    at different moments."""
    import re

    untimed = re.compile(r'"timestamp": [0-9.e+-]+')
    return {
        table: [tuple(untimed.sub("", v) if isinstance(v, str) else v for v in r) for r in rows]
        for table, rows in stored.items()
    }


def _schema(path: Path) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(path) as conn:
        tables = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        journal = conn.execute("PRAGMA journal_mode").fetchall()
    return [*tables, *revision, *journal]


def test_a_new_runs_shard_is_set_up_as_dagsters_own_set_up_leaves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster import DagsterInstance
    from dagster._core.storage.sql import create_engine

    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        storage = instance.event_log_storage
        storage.store_event_batch(_materializations("run-first", 1))
        set_up: list[object] = []
        dagster_set_up = type(storage)._initdb
        monkeypatch.setattr(
            type(storage),
            "_initdb",
            lambda self, e, **k: set_up.append(e) or dagster_set_up(self, e, **k),
        )
        storage.store_event_batch(_materializations("run-new", 3))
        monkeypatch.undo()
        assert set_up == []  # copied, not set up through the schema and its migrations
        made = _schema(Path(storage.path_for_shard("run-new")))
        assert len(storage.get_logs_for_run("run-new")) == 3
        assert not list(Path(storage.path_for_shard("run-new")).parent.glob("*.staged"))
        engine = create_engine(f"sqlite:///{tmp_path / 'dagster.db'}")
        storage._initdb(engine)
        engine.dispose()
    assert made == _schema(tmp_path / "dagster.db")
    assert any(row[1] == "event_logs" for row in made)


class _NothingKept(ConfigurableIOManager):
    def handle_output(self, context, obj) -> None:
        pass

    def load_input(self, context) -> None:
        return None


def _range_asset_with_checks(stop_after: int | None = None):
    from dagster import (
        AssetCheckEvaluation,
        AssetCheckSpec,
        BackfillPolicy,
        Output,
        StaticPartitionsDefinition,
        asset,
    )

    @asset(
        partitions_def=StaticPartitionsDefinition(["a", "b", "c"]),
        backfill_policy=BackfillPolicy.single_run(),
        check_specs=[AssetCheckSpec("whole", asset="doc")],
    )
    def doc(context):
        yield Output(dict.fromkeys(context.partition_keys, 1))
        yield Output(None, output_name="doc_whole")  # the check's output, its results below
        with dagster_private.check_results_written_together(context, 3):
            for i, key in enumerate(context.partition_keys):
                if i == stop_after:
                    raise RuntimeError("stopped short")
                yield AssetCheckEvaluation(
                    asset_key=AssetKey("doc"), check_name="whole", passed=True, partition=key
                )

    return doc


@pytest.mark.parametrize("stop_after", [None, 2])
def test_a_steps_check_results_go_to_the_event_log_as_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_after: int | None
) -> None:
    from dagster import AssetCheckKey, DagsterEventType, DagsterInstance, materialize
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
    from dagster._core.storage.tags import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )

    batches: list[list[str]] = []
    write_batch = SqliteEventLogStorage.store_event_batch

    def recorded(self, events):
        batches.append([e.dagster_event.event_type_value for e in events])
        write_batch(self, events)

    monkeypatch.setattr(SqliteEventLogStorage, "store_event_batch", recorded)
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        result = materialize(
            [_range_asset_with_checks(stop_after)],
            instance=instance,
            resources={"io_manager": _NothingKept()},
            tags={ASSET_PARTITION_RANGE_START_TAG: "a", ASSET_PARTITION_RANGE_END_TAG: "c"},
            raise_on_error=False,
        )
        assert result.success is (stop_after is None)
        done = 3 if stop_after is None else stop_after
        evaluation = DagsterEventType.ASSET_CHECK_EVALUATION.value
        assert [b for b in batches if evaluation in b] == [[evaluation] * done]
        check_key = AssetCheckKey(AssetKey("doc"), "whole")
        succeeded = {
            key
            for key in "abc"
            if (
                record := instance.event_log_storage.get_latest_asset_check_execution_by_key(
                    [check_key], partition_filter=dagster_private.PartitionKeyFilter(key=key)
                ).get(check_key)
            )
            and record.status == dagster_private.AssetCheckExecutionRecordStatus.SUCCEEDED
        }
        assert sorted(succeeded) == ["a", "b", "c"][:done]


def _check_executions(storage) -> list[tuple]:
    """The checks' execution rows as the UI reads them, the run ids and times aside."""
    import sqlalchemy
    from dagster._serdes import deserialize_value

    with storage.index_connection() as conn:
        rows = conn.execute(
            sqlalchemy.text(
                "SELECT check_name, partition, execution_status, evaluation_event,"
                " evaluation_event_storage_id, materialization_event_storage_id"
                " FROM asset_check_executions ORDER BY id"
            )
        ).fetchall()
    return [
        (
            name,
            partition,
            status,
            getattr(
                event and deserialize_value(event).dagster_event.event_specific_data, "passed", None
            ),
            event_id,
            materialization_id,
        )
        for name, partition, status, event, event_id, materialization_id in rows
    ]


def _counting_dagsters_check_updates(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The documents whose check result Dagster's own update writes, from now on."""
    storage_class = dagster_private.SqliteEventLogStorage
    updated_by_dagster: list[str] = []
    update = storage_class._update_asset_check_evaluation

    def counted(self, event, event_id):
        updated_by_dagster.append(event.dagster_event.event_specific_data.partition)
        update(self, event, event_id)

    monkeypatch.setattr(storage_class, "_update_asset_check_evaluation", counted)
    return updated_by_dagster


def test_a_checks_results_written_together_are_what_dagster_writes_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster import DagsterInstance, materialize
    from dagster._core.storage.event_log.base import EventLogStorage
    from dagster._core.storage.tags import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )

    updated_by_dagster = _counting_dagsters_check_updates(monkeypatch)

    def run(folder: Path) -> list[tuple]:
        folder.mkdir()
        with DagsterInstance.local_temp(str(folder)) as instance:
            result = materialize(
                [_range_asset_with_checks()],
                instance=instance,
                resources={"io_manager": _NothingKept()},
                tags={ASSET_PARTITION_RANGE_START_TAG: "a", ASSET_PARTITION_RANGE_END_TAG: "c"},
            )
            assert result.success
            return _check_executions(instance.event_log_storage)

    together = run(tmp_path / "together")
    assert updated_by_dagster == []  # one statement for the three results
    # Dagster's own batch write: each event by itself.
    monkeypatch.setattr(
        dagster_private.SqliteEventLogStorage,
        "store_event_batch",
        EventLogStorage.store_event_batch,
    )
    one_by_one = run(tmp_path / "one-by-one")
    assert updated_by_dagster == ["a", "b", "c"]
    # The run plans its check once for its partitions; each result adds its document's row.
    assert [row[:4] for row in together] == [("whole", None, "PLANNED", None)] + [
        ("whole", key, "SUCCEEDED", True) for key in "abc"
    ]
    assert together == one_by_one


def test_check_results_written_together_update_the_rows_planned_for_their_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster import AssetCheckEvaluation, AssetKey, DagsterInstance, StaticPartitionsDefinition
    from dagster._core.definitions.asset_checks.asset_check_evaluation import (
        AssetCheckEvaluationPlanned,
    )
    from dagster._core.events import DagsterEventType

    keys = ["a", "b", "c"]
    planned = _event(
        "run-a",
        DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED,
        AssetCheckEvaluationPlanned(
            asset_key=AssetKey("doc"),
            check_name="whole",
            partitions_subset=StaticPartitionsDefinition(keys).subset_with_partition_keys(keys),
        ),
    )
    results = [
        _event(
            "run-a",
            DagsterEventType.ASSET_CHECK_EVALUATION,
            AssetCheckEvaluation(
                asset_key=AssetKey("doc"), check_name="whole", passed=key != "b", partition=key
            ),
        )
        for key in keys
    ]
    updated_by_dagster = _counting_dagsters_check_updates(monkeypatch)
    stored = {}
    for how in ("together", "one-by-one"):
        (tmp_path / how).mkdir()
        with DagsterInstance.local_temp(str(tmp_path / how)) as instance:
            storage = instance.event_log_storage
            storage.store_event(planned)
            if how == "together":
                storage.store_event_batch(results)
                assert updated_by_dagster == []
            else:
                for result in results:
                    storage.store_event(result)
            stored[how] = _check_executions(storage)
    assert sorted(row[:4] for row in stored["together"]) == [
        ("whole", "a", "SUCCEEDED", True),
        ("whole", "b", "FAILED", False),
        ("whole", "c", "SUCCEEDED", True),
    ]
    assert stored["together"] == stored["one-by-one"]


def test_materialization_tags_read_from_the_stored_json_are_dagsters(tmp_path: Path) -> None:
    from dagster import AssetRecordsFilter, DagsterInstance

    from rag_assets.defs.dagster_private import materialization_tags

    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        instance.event_log_storage.store_event_batch(_materializations("run-a", 12))
        instance.report_runless_asset_event(AssetMaterialization(AssetKey("doc")))  # no tags
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey("doc")), limit=20
        ).records
        read = materialization_tags(instance, [r.storage_id for r in records])
    assert len(read) == 13
    assert read == {r.storage_id: dict(r.event_log_entry.tags or {}) for r in records}
    assert read[records[-1].storage_id] == {"dagster/data_version": "v0"}
