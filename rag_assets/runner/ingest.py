"""Run the whole graph for a set of documents on the instance under the data dir (CLI, scripts)."""

from __future__ import annotations

import signal
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from dagster import (
    AssetCheckSeverity,
    AssetKey,
    DagsterEventType,
    DagsterInstance,
)

from rag_assets.defs.automation import show_automation_state
from rag_assets.defs.build import build_defs
from rag_assets.defs.dagster_private import (
    PARTITION_NAME_TAG,
    AssetCheckExecutionRecordStatus,
    PartitionKeyFilter,
    execute_in_process,
    job_origins,
    mark_interrupt_received,
    pop_captured_interrupt,
)
from rag_assets.defs.incremental import PartitionPlan, plan_runs, report_changes
from rag_assets.defs.jobs import INGEST_JOB, LAUNCHED_BY_TAG
from rag_assets.defs.landing import landing_plan
from rag_assets.defs.lifecycle import retire_superseded
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.recovery import process_tags, recover_dead_runs, wait_for_pools
from rag_assets.defs.status import failure_reason, latest_metadata
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.index.lite import LiteHold
from rag_assets.instance import hold_data_folder, open_instance
from rag_assets.interrupts import (
    Interrupted,
    StopSignals,
    children_deaf_to_stop_signals,
    deferred_signals,
    stop_signals,
)
from rag_assets.parsers.page_pool import drop_read_ahead
from rag_assets.removal import DataFolder
from rag_assets.runner.progress import RunProgress, watch_run
from rag_assets.runner.receipt import DocumentOutcome, place_in_inbox, receipt_digest, write_receipt
from rag_assets.settings import Settings
from rag_assets.sources.inbox import scan_folder
from rag_assets.sources.keys import partition_key_for
from rag_assets.sources.raw import check_document

# The code location `rag-assets ui` serves: workspace.yaml beside the package, else the module.
WORKSPACE_YAML = Path(__file__).resolve().parents[2] / "workspace.yaml"
LOCATION_MODULE = "rag_assets.definitions"
PARSE = "parsed_documents"


def _failed(outcome: DocumentOutcome, name: str, evaluation) -> None:
    if evaluation.severity == AssetCheckSeverity.WARN:
        outcome.warned_checks.append(name)
    else:
        outcome.failed_checks.append(name)


def _fill_from_instance(
    outcome: DocumentOutcome, instance: DagsterInstance, check_keys, evaluated: set[str]
) -> DocumentOutcome:
    """What a run did not redo is reported from the document's stored materializations and
    its latest check results, so every line reads the same whatever ran."""
    if not outcome.parser:
        parsed = latest_metadata(instance, "parsed_documents", outcome.doc_id)
        outcome.parser = str(parsed.get("parser", ""))
    if not outcome.template:
        chunks = latest_metadata(instance, "document_chunks", outcome.doc_id)
        outcome.template = str(chunks.get("template", ""))
        outcome.chunks = int(chunks.get("chunks", 0))
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [k for k in check_keys if k.name not in evaluated],
        partition_filter=PartitionKeyFilter(key=outcome.doc_id),
    )
    for check_key, record in latest.items():
        if record.status == AssetCheckExecutionRecordStatus.SUCCEEDED:
            outcome.checks_total += 1
            outcome.checks_passed += 1
        elif record.status == AssetCheckExecutionRecordStatus.FAILED:
            outcome.checks_total += 1
            _failed(outcome, check_key.name, record.event.dagster_event.event_specific_data)
    return outcome


def _outcome(doc_id: str, source_path: str, result) -> DocumentOutcome:
    outcome = DocumentOutcome(doc_id, source_path, result.success)
    for event in result.all_events:
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            materialization = event.event_specific_data.materialization
            metadata = {k: v.value for k, v in materialization.metadata.items()}
            name = materialization.asset_key.to_user_string()
            if name == "parsed_documents":
                outcome.parser = str(metadata.get("parser", ""))
            elif name == "document_chunks":
                outcome.template = str(metadata.get("template", ""))
                outcome.chunks = int(metadata.get("chunks", 0))
            # What this document lost (pages the parser did not read, optional steps that
            # failed), from whichever asset it happened in; a parser's notes on how it read
            # the file stay in that asset's metadata.
            outcome.notes.extend(metadata.get("degraded", []))
        elif event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.event_specific_data
            outcome.checks_total += 1
            if evaluation.passed:
                outcome.checks_passed += 1
            else:
                _failed(outcome, evaluation.check_name, evaluation)
        elif event.event_type == DagsterEventType.STEP_FAILURE and not outcome.error:
            outcome.error = failure_reason(event.event_specific_data.error)
    if outcome.failed_checks and not outcome.error:
        outcome.success = False
        outcome.error = "checks failed"
    return outcome


def _execute(
    instance: DagsterInstance,
    defs,
    key: str,
    assets: tuple[str, ...],
    run_config,
    progress: RunProgress,
):
    """One run of the code location's ingest job for one document, executed in this process.

    The run is created as the daemon launches the inbox sensor's (the job's origins, the
    partition tag, the steps named) so it shows on the timeline and the job's Runs tab;
    executing it here keeps models loaded once per process. The job's own executor runs the
    steps; `progress` hears the run's progress lines.
    """
    job_def = defs.resolve_job_def(INGEST_JOB)
    remote_origin, python_origin = job_origins(INGEST_JOB, WORKSPACE_YAML, LOCATION_MODULE)
    run = instance.create_run_for_job(
        job_def,
        run_config=run_config,
        tags={
            **job_def.run_tags,
            PARTITION_NAME_TAG: key,
            LAUNCHED_BY_TAG: "cli",
            **process_tags(),
        },
        # Named even when every asset runs: automation then knows this run executes the steps
        # below a parent it updates, and requests none of them while it runs.
        asset_selection={AssetKey(a) for a in assets},
        remote_job_origin=remote_origin,
        job_code_origin=python_origin,
    )
    watch_run(instance, run.run_id, progress)
    return execute_in_process(job_def, run, instance)


class IngestInterrupted(Exception):
    """SIGINT or SIGTERM stopped an ingest: every document's outcome, finished, interrupted or
    not started."""

    def __init__(self, signum: int, outcomes: list[DocumentOutcome]) -> None:
        super().__init__(f"ingest stopped by {signal.Signals(signum).name}")
        self.signum = signum
        self.outcomes = outcomes


def ingest(
    settings: Settings,
    paths: list[Path],
    instance=None,
    log_level: str = "INFO",
    progress: RunProgress | None = None,
) -> list[DocumentOutcome]:
    """Place the files in the inbox, register their partitions, materialize every asset for each.

    Documents run one after another in this process, so models load once; a
    failing document is reported and the others still land. `instance` defaults to
    the one under the data dir. Only what is stale runs: the files' and settings' versions are
    reported first, and a document whose every asset is fresh starts no run at all. `progress`
    hears of each document as it starts and ends, and of its runs' progress lines.

    One ingest holds the data folder at a time (a second waits); runs left unfinished by a
    killed process are marked failed and their pool slots freed before anything runs.

    SIGINT or SIGTERM stops it (IngestInterrupted): documents already done stay done, the one
    in progress is rolled back (its run fails, its index rows are put back as they were) and the
    rest do not start.
    """
    with stop_signals() as stop:
        stop.listeners.append(_stop_next_run)
        try:
            with hold_data_folder(settings.data_dir):
                return _ingest(
                    settings, paths, instance, log_level, progress or RunProgress(), stop
                )
        except Interrupted as interrupted:
            raise IngestInterrupted(interrupted.signum, []) from None
        finally:
            stop.listeners.remove(_stop_next_run)
            pop_captured_interrupt()  # nothing pending for a later run of this process


def _stop_next_run() -> None:
    """A signal taken by our handler while a run is being created: Dagster's handlers are not in
    place yet, so it is set where they would have put it, and the run stops at its first step
    instead of running the whole document."""
    mark_interrupt_received()


def _ingest(
    settings: Settings,
    paths: list[Path],
    instance,
    log_level: str,
    progress: RunProgress,
    stop: StopSignals,
) -> list[DocumentOutcome]:
    relative_paths, skipped = place_in_inbox(
        paths, settings.inbox_dir, settings.inbox_follow_symlinks
    )
    keys = [partition_key_for(p) for p in relative_paths]
    outcomes = [DocumentOutcome("", s.relative_path, True, skipped=s.reason) for s in skipped]
    progress.documents(len(outcomes) + len(relative_paths))
    for outcome in outcomes:
        progress.document_finished(outcome)
    done = _Outcomes(outcomes, progress, stop)
    # The signal is read below; the context managers on the way out have closed the index.
    with suppress(Interrupted):
        _run_all(settings, relative_paths, keys, instance, log_level, done)
    if signum := stop.received():
        ended = {o.source_path for o in outcomes}
        for relative_path, key in zip(relative_paths, keys, strict=True):
            if relative_path not in ended:
                status = "interrupted" if relative_path == done.current else "not started"
                done.add(DocumentOutcome(key, relative_path, False, stopped=status))
        raise IngestInterrupted(signum, outcomes)
    return outcomes


@dataclass
class _Outcomes:
    outcomes: list[DocumentOutcome]
    progress: RunProgress
    stop: StopSignals
    current: str | None = None  # the document whose run is being prepared or executed

    def add(self, outcome: DocumentOutcome) -> None:
        self.outcomes.append(outcome)
        self.progress.document_finished(outcome)


def _run_all(
    settings: Settings,
    relative_paths: list[str],
    keys: list[str],
    instance,
    log_level: str,
    progress: _Outcomes,
) -> None:
    own_instance = instance is None
    instance = instance or open_instance(settings)
    recover_dead_runs(instance)
    show_automation_state(instance)  # the UI's automation tag, as the daemon's sensor keeps it
    instance.add_dynamic_partitions(documents_partitions.name, keys)
    # The code location's definitions for this data folder; --parser/--template reach the
    # runs as run config, so every run is of the job the UI shows, with the same snapshot.
    defs = build_defs(settings.model_copy(update={"force_parser": None, "force_template": None}))
    flags = {k: getattr(settings, k) for k in ("force_parser", "force_template")}
    collections = defs.resources["collections"].model_copy(update=flags)
    resources = {**defs.resources, "collections": collections}
    graph = defs.resolve_asset_graph()
    placed = set(relative_paths)
    files = [
        f
        for f in scan_folder(settings.inbox_dir, settings.inbox_follow_symlinks).files
        if f.relative_path in placed
    ]
    report_changes(instance, resources, files)
    # Taken before the verdict is read: anything written from here on voids the receipt.
    digest = receipt_digest(settings, relative_paths) if own_instance else None
    paths = dict(zip(keys, relative_paths, strict=True))
    plans: dict[str, PartitionPlan] = {  # a file raw_documents refuses runs it alone
        p.partition_key: landing_plan(p, resources["inbox"], paths[p.partition_key])
        for p in plan_runs(instance, graph, keys)
    }
    run_config = {
        # Only the console's verbosity: the instance's event log keeps everything.
        "loggers": {"console": {"config": {"log_level": log_level}}},
        **(
            {"resources": {"collections": {"config": collections.model_dump()}}}
            if any(flags.values())
            else {}
        ),
    }
    to_parse = [p for p, k in zip(relative_paths, keys, strict=True) if PARSE in plans[k].assets]
    parse_ahead = ParseAhead(resources, settings.inbox_dir, to_parse)
    # Milvus Lite's engine starts once for the whole ingest, not once per document.
    with LiteHold(settings.resolved_milvus_uri) as engine, parse_ahead:
        for relative_path, key in zip(relative_paths, keys, strict=True):
            progress.current = relative_path
            progress.stop.check()
            parse_ahead.before(relative_path)
            progress.progress.document_started(relative_path)
            outcome = _run_document(
                instance,
                defs,
                graph,
                plans[key],
                relative_path,
                run_config,
                engine,
                progress.progress,
            )
            stopped = progress.stop.received()
            if stopped and not outcome.success:
                return  # interrupted: reported with the documents not started
            progress.add(outcome)
            progress.current = None
            if stopped:
                return
            engine.step_aside_if_wanted()
        # Each document once, under the key the UI shows: earlier keys of those indexed now go.
        indexed = {
            o.source_path: o.doc_id for o in progress.outcomes if o.success and not o.skipped
        }
        retire_superseded(instance, DataFolder.of(settings), resources["milvus"], indexed)
    outcomes = progress.outcomes
    if own_instance and all(o.success for o in outcomes):
        fresh = [o for o in outcomes if not o.skipped and not o.ran]
        if (
            digest
            and len(fresh) == len(keys)
            and receipt_digest(settings, relative_paths) == digest
        ):
            write_receipt(settings, relative_paths, digest, fresh)
        else:
            _leave_receipt(settings, instance, graph, relative_paths, keys)


class ParseAhead:
    """Keeps the parse workers one document ahead of the runs: while a document's run chunks,
    embeds and indexes on this process, the workers parse the next document (from its inbox
    file; its run's parse takes the result when the fixed copy has the same bytes)."""

    def __init__(self, resources: dict, inbox_dir: Path, relative_paths: list[str]) -> None:
        self._parser = resources["parser"]
        self._collections = resources["collections"]
        self._inbox = resources["inbox"]
        self._inbox_dir = inbox_dir
        self._queue = relative_paths  # the documents whose runs will parse, in run order
        self._position = {path: i for i, path in enumerate(relative_paths)}
        self._submitted = 0

    def before(self, relative_path: str) -> None:
        """This document's run starts now: have it and the one after it submitted, in order."""
        if relative_path not in self._position:
            return
        upto = self._position[relative_path] + 2
        for path in self._queue[self._submitted : upto]:
            self._start(path)
        self._submitted = max(self._submitted, upto)

    def _start(self, relative_path: str) -> None:
        path = self._inbox_dir / relative_path
        try:
            # Over a limit, its run fails before parsing: nothing is parsed ahead for it either.
            file_format, _ = check_document(
                path, relative_path, self._inbox.max_file_mb, self._inbox.limits
            )
            router = self._parser.router(self._collections.plan(relative_path).parser)
            # The parse workers start here: Ctrl-C, which reaches the whole process group, must
            # not hit one still importing, before it ignores SIGINT (a fatal error on stderr).
            with children_deaf_to_stop_signals((signal.SIGINT,)):
                router.read_ahead(path, file_format)
        except (DocumentError, ConfigurationError, OSError):
            return  # the document's run meets it again and reports it

    def __enter__(self) -> ParseAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        drop_read_ahead()  # documents whose runs failed before parsing, or a stop


def _run_document(
    instance,
    defs,
    graph,
    plan: PartitionPlan,
    relative_path: str,
    run_config,
    engine: LiteHold,
    progress: RunProgress,
) -> DocumentOutcome:
    """One document's run of what is stale in it, or its fresh outcome when nothing is."""
    key = plan.partition_key
    if not plan.assets:
        outcome = DocumentOutcome(key, relative_path, True)
        return _fill_from_instance(outcome, instance, graph.asset_check_keys, set())
    # Dagster's own wait for a pool slot is logged at DEBUG and ignores SIGINT: wait here.
    wait_for_pools(
        instance, {defs.get_assets_def(AssetKey(a)).op.pool for a in plan.assets} - {None}
    )
    if "vector_index" in plan.assets:
        engine.hold()
    started = time.monotonic()
    result = _execute(instance, defs, key, plan.assets, run_config, progress)
    seconds = time.monotonic() - started
    # The run has ended: a signal now stops the ingest after this document's outcome is read.
    with deferred_signals(redeliver=False):
        outcome = _finished(instance, graph, key, relative_path, plan, result)
        outcome.seconds = seconds
        return outcome


def _finished(instance, graph, key: str, relative_path: str, plan: PartitionPlan, result):
    outcome = _outcome(key, relative_path, result)
    outcome.ran = plan.assets
    evaluated = {
        e.event_specific_data.check_name
        for e in result.all_events
        if e.event_type == DagsterEventType.ASSET_CHECK_EVALUATION
    }
    if outcome.success:
        outcome = _fill_from_instance(outcome, instance, graph.asset_check_keys, evaluated)
    return outcome


def _leave_receipt(settings: Settings, instance, graph, relative_paths, keys) -> None:
    """A receipt for the next ingest of these paths when every document is fresh now and nothing
    was written while that was read (reading may write: Dagster refreshes its cached partition
    status, then a second look reads the same)."""
    for _ in range(2):
        digest = receipt_digest(settings, relative_paths)
        if not digest or any(p.assets for p in plan_runs(instance, graph, keys)):
            return
        unchanged = [
            _fill_from_instance(
                DocumentOutcome(k, p, True), instance, graph.asset_check_keys, set()
            )
            for p, k in zip(relative_paths, keys, strict=True)
        ]
        if receipt_digest(settings, relative_paths) == digest:
            write_receipt(settings, relative_paths, digest, unchanged)
            return
