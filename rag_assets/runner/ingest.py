"""Run the whole graph for a set of documents on the instance under the data dir (CLI, scripts)."""

from __future__ import annotations

import signal
import time
from bisect import bisect_right
from collections import deque
from contextlib import suppress
from dataclasses import replace
from itertools import accumulate
from pathlib import Path

from dagster import AssetKey, DagsterInstance, Definitions

from rag_assets.defs.automation import show_automation_state
from rag_assets.defs.batch import failed_documents
from rag_assets.defs.batches import (
    Batch,
    PlannedDocument,
    cut_batches,
    partition_positions,
    plan_document,
    split_failed,
)
from rag_assets.defs.build import build_defs
from rag_assets.defs.change_reports import report_changes
from rag_assets.defs.dagster_private import (
    execute_in_process,
    job_origins,
    mark_interrupt_received,
    partition_tags,
    pop_captured_interrupt,
)
from rag_assets.defs.jobs import INGEST_JOB, LAUNCHED_BY_TAG
from rag_assets.defs.landing import RunPart, documents_tags
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.recovery import process_tags, recover_dead_runs, wait_for_pools
from rag_assets.defs.run_plan import plan_runs
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
from rag_assets.parsers.page_pool import count_idle_from_now, drop_read_ahead
from rag_assets.runner.outcomes import (
    FinishedDocument,
    Outcomes,
    fill_all_from_instance,
    finished_outcomes,
)
from rag_assets.runner.progress import RunProgress, watch_run
from rag_assets.runner.receipt import DocumentOutcome, place_in_inbox, receipt_digest, write_receipt
from rag_assets.runner.retirement import retire_earlier_keys
from rag_assets.settings import Settings
from rag_assets.sources.inbox import scan_folder
from rag_assets.sources.keys import partition_key_for
from rag_assets.sources.raw import check_document

# The code location `rag-assets ui` serves: workspace.yaml beside the package, else the module.
WORKSPACE_YAML = Path(__file__).resolve().parents[2] / "workspace.yaml"
LOCATION_MODULE = "rag_assets.definitions"
PARSE = "parsed_documents"
# Batches the parse workers are given beyond the one whose run starts: they parse the next
# while this run chunks and embeds, and the one after while it indexes and the next run is
# created. With one, they sat idle there: 40.6 of 242.8 worker seconds on 200 two-page PDFs.
BATCHES_AHEAD = 2
# The CLI's --parser and --template, which reach the runs as run config.
_FLAGS = ("force_parser", "force_template")


def _execute(
    instance: DagsterInstance,
    defs,
    keys: list[str],
    part: RunPart,
    run_config,
    progress: RunProgress,
    paths: list[str],
):
    """One run of the code location's ingest job for `part` of one document or of a batch of
    neighbouring ones (a range of partition keys), executed in this process.

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
            **partition_tags(keys),
            LAUNCHED_BY_TAG: "cli",
            **documents_tags(paths),
            **part.tags,
            **process_tags(),
        },
        # Named even when every asset runs: automation then knows this run executes the steps
        # below a parent it updates, and requests none of them while it runs.
        asset_selection={AssetKey(a) for a in part.assets},
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
    done = Outcomes(outcomes, progress, stop)
    # The signal is read below; the context managers on the way out have closed the index.
    with suppress(Interrupted):
        _run_all(settings, relative_paths, keys, instance, log_level, done)
    if signum := stop.received():
        ended = {o.source_path for o in outcomes}
        for relative_path, key in zip(relative_paths, keys, strict=True):
            if relative_path not in ended:
                status = "interrupted" if relative_path in (done.current or ()) else "not started"
                done.add(DocumentOutcome(key, relative_path, False, stopped=status))
        raise IngestInterrupted(signum, outcomes)
    return outcomes


def _run_all(
    settings: Settings,
    relative_paths: list[str],
    keys: list[str],
    instance,
    log_level: str,
    progress: Outcomes,
) -> None:
    own_instance = instance is None
    instance = instance or open_instance(settings)
    defs, resources = _prepare(settings, instance, relative_paths, keys)
    graph = defs.resolve_asset_graph()
    # Taken before the verdict is read: anything written from here on voids the receipt.
    digest = receipt_digest(settings, relative_paths) if own_instance else None
    inbox = resources["inbox"]
    planned = _plan(instance, graph, inbox, relative_paths, keys)
    batches = cut_batches(planned, inbox.batch_documents, inbox.batch_pages)
    parse_ahead = ParseAhead(resources, settings.inbox_dir, _to_parse(batches))
    run_config = _run_config(settings, resources["collections"], log_level)
    # Milvus Lite's engine starts once for the whole ingest, not once per document.
    with LiteHold(settings.resolved_milvus_uri) as engine, parse_ahead:
        if any("vector_index" in part.assets for b in batches for part in b.parts):
            engine.start_in_background()  # while the first batch parses
        _add_fresh_outcomes(instance, graph, planned, progress)
        runs = BatchRuns(instance, defs, graph, run_config, engine, progress, parse_ahead)
        if not runs.run_all(batches):
            return  # interrupted: reported with the documents not started
        retire_earlier_keys(settings, instance, resources["milvus"], progress.outcomes)
    if own_instance and all(o.success for o in progress.outcomes):
        _write_receipt(settings, instance, graph, relative_paths, keys, digest, progress.outcomes)


def _prepare(
    settings: Settings, instance, relative_paths: list[str], keys: list[str]
) -> tuple[Definitions, dict]:
    """The instance made ready for these documents (dead runs recovered, their partitions added,
    the changes to their files and settings reported), and the code location's definitions with
    the resources the runs use."""
    recover_dead_runs(instance)
    show_automation_state(instance)  # the UI's automation tag, as the daemon's sensor keeps it
    instance.add_dynamic_partitions(documents_partitions.name, keys)
    # The code location's definitions for this data folder; --parser/--template reach the
    # runs as run config, so every run is of the job the UI shows, with the same snapshot.
    defs = build_defs(settings.model_copy(update=dict.fromkeys(_FLAGS)))
    flags = {k: getattr(settings, k) for k in _FLAGS}
    collections = defs.resources["collections"].model_copy(update=flags)
    resources = {**defs.resources, "collections": collections}
    placed = set(relative_paths)
    files = [
        f
        for f in scan_folder(settings.inbox_dir, settings.inbox_follow_symlinks).files
        if f.relative_path in placed
    ]
    report_changes(instance, resources, files)
    return defs, resources


def _plan(
    instance, graph, inbox, relative_paths: list[str], keys: list[str]
) -> list[PlannedDocument]:
    """Each document's runs for its stale steps: a landing part, then its checked steps
    (defs/landing.py)."""
    stale = {p.partition_key: p.assets for p in plan_runs(instance, graph, keys)}
    order = partition_positions(instance.get_dynamic_partitions(documents_partitions.name))
    return [
        plan_document(inbox, key, relative_path, stale[key], order[key])
        for relative_path, key in zip(relative_paths, keys, strict=True)
    ]


def _to_parse(batches: list[Batch]) -> list[list[str]]:
    """The batches whose runs will parse, in run order, as their documents."""
    return [
        [d.relative_path for d in b.documents]
        for b in batches
        if any(PARSE in part.assets for part in b.parts)
    ]


def _run_config(settings: Settings, collections, log_level: str) -> dict:
    return {
        # Only the console's verbosity: the instance's event log keeps everything.
        "loggers": {"console": {"config": {"log_level": log_level}}},
        **(
            {"resources": {"collections": {"config": collections.model_dump()}}}
            if any(getattr(settings, k) for k in _FLAGS)
            else {}
        ),
    }


def _add_fresh_outcomes(
    instance, graph, planned: list[PlannedDocument], progress: Outcomes
) -> None:
    """The outcomes of the documents with nothing to run, read from the instance."""
    fresh = [d for d in planned if not d.parts]
    found = fill_all_from_instance(
        [DocumentOutcome(d.key, d.relative_path, True) for d in fresh],
        instance,
        graph.asset_check_keys,
    )
    for document, outcome in zip(fresh, found, strict=True):
        progress.progress.document_started(document.relative_path)
        progress.add(outcome)


def _write_receipt(
    settings: Settings,
    instance,
    graph,
    relative_paths: list[str],
    keys: list[str],
    digest: str | None,
    outcomes: list[DocumentOutcome],
) -> None:
    """After an ingest where every document landed: the receipt at once when none ran and nothing
    was written since `digest` was taken, else when a second look finds every document fresh."""
    fresh = [o for o in outcomes if not o.skipped and not o.ran]
    if digest and len(fresh) == len(keys) and receipt_digest(settings, relative_paths) == digest:
        write_receipt(settings, relative_paths, digest, fresh)
    else:
        _leave_receipt(settings, instance, graph, relative_paths, keys, outcomes)


def _as_unchanged(outcome: DocumentOutcome) -> DocumentOutcome:
    """What the next ingest of an unchanged document reports: what its steps made and its checks'
    latest results, as read from the instance (nothing ran, so no notes of this run's)."""
    return replace(outcome, ran=(), notes=[], seconds=0.0)


class ParseAhead:
    """Keeps the parse workers ahead of the runs: while a batch's run chunks, embeds and indexes
    on this process, the workers parse the next batches' PDFs (from their inbox files; a run's
    parse takes the result when the fixed copy has the same bytes)."""

    def __init__(self, resources: dict, inbox_dir: Path, batches: list[list[str]]) -> None:
        self._parser = resources["parser"]
        self._collections = resources["collections"]
        self._inbox = resources["inbox"]
        self._inbox_dir = inbox_dir
        # The documents whose runs will parse, in run order, and where each batch of them ends.
        self._queue = [path for batch in batches for path in batch]
        self._ends = list(accumulate(len(batch) for batch in batches))
        self._position = {path: i for i, path in enumerate(self._queue)}
        self._submitted = 0

    def before(self, relative_paths: list[str]) -> None:
        """These documents' run starts now: have them and the next `BATCHES_AHEAD` batches
        submitted, in order. A document alone is submitted only where its parse would use the
        workers anyway (a long PDF); in a batch, the workers parse while the run takes the
        results in turn."""
        known = [self._position[p] for p in relative_paths if p in self._position]
        if not known:
            return
        now = max(known)
        batch = bisect_right(self._ends, now)
        ahead = self._ends[min(batch + BATCHES_AHEAD, len(self._ends) - 1)]
        for position in range(self._submitted, ahead):
            self._start(self._queue[position], short_too=len(relative_paths) > 1 or position > now)
        self._submitted = max(self._submitted, ahead)

    def _start(self, relative_path: str, short_too: bool) -> None:
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
                router.read_ahead(path, file_format, short_too)
        except (DocumentError, ConfigurationError, OSError):
            return  # the document's run meets it again and reports it

    def __enter__(self) -> ParseAhead:
        count_idle_from_now()  # workers left from an earlier ingest were not idle in this one
        return self

    def __exit__(self, *exc: object) -> None:
        drop_read_ahead()  # documents whose runs failed before parsing, or a stop


class BatchRuns:
    """An ingest's runs, batch after batch, each part of a batch in one run. A batch whose run
    fails is split: the documents its failure names run alone (each fails on its own partition,
    with its own reason) and the others again together; a document's outcome is read from the
    runs that carried it."""

    def __init__(self, instance, defs, graph, run_config, engine, outcomes, parse_ahead) -> None:
        self.instance, self.defs, self.graph = instance, defs, graph
        self.run_config, self.engine, self.outcomes = run_config, engine, outcomes
        self.parse_ahead = parse_ahead
        self.results: dict[str, list] = {}  # a document's runs that succeeded or failed alone
        self.ran: dict[str, tuple[str, ...]] = {}
        self.seconds: dict[str, float] = {}

    def run_all(self, batches: list[Batch]) -> bool:
        """Every batch's runs; False when a stop signal ended the ingest first."""
        queue = deque(batches)
        while queue:
            batch = queue.popleft()
            paths = [d.relative_path for d in batch.documents]
            self.outcomes.current = set(paths)
            self.outcomes.stop.check()
            self.parse_ahead.before(paths)
            for path in paths:
                self.outcomes.progress.document_started(path)
            part, rest = batch.parts[0], batch.parts[1:]
            result = self._execute(batch, part)
            stopped = self.outcomes.stop.received()
            if not result.success and len(batch.documents) > 1 and not stopped:
                queue.extendleft(reversed(split_failed(batch, failed_documents(result.all_events))))
                continue
            if stopped and (rest or not result.success):
                return False  # interrupted: reported with the documents not started
            for document in batch.documents:
                self.results.setdefault(document.key, []).append(result)
                self.ran[document.key] = self.ran.get(document.key, ()) + part.assets
            if result.success and rest:
                queue.appendleft(Batch(batch.documents, rest))
            else:
                self._finish(batch.documents)
            self.outcomes.current = None
            if stopped:
                return False
            self.engine.step_aside_if_wanted()
        return True

    def _execute(self, batch: Batch, part: RunPart):
        # Dagster's own wait for a pool slot is logged at DEBUG and ignores SIGINT: wait here.
        pools = {self.defs.get_assets_def(AssetKey(a)).op.pool for a in part.assets} - {None}
        wait_for_pools(self.instance, pools)
        if "vector_index" in part.assets:
            self.engine.hold()
        started = time.monotonic()
        result = _execute(
            self.instance,
            self.defs,
            batch.keys,
            part,
            self.run_config,
            self.outcomes.progress,
            [d.relative_path for d in batch.documents],
        )
        share = (time.monotonic() - started) / len(batch.documents)
        for key in batch.keys:
            self.seconds[key] = self.seconds.get(key, 0.0) + share
        return result

    def _finish(self, documents: list[PlannedDocument]) -> None:
        # The runs have ended: a signal now stops the ingest after these outcomes are read.
        with deferred_signals(redeliver=False):
            finished = [
                FinishedDocument(d.key, d.relative_path, self.ran[d.key], self.results[d.key])
                for d in documents
            ]
            for outcome in finished_outcomes(self.instance, self.graph, finished):
                outcome.seconds = self.seconds.get(outcome.doc_id, 0.0)
                self.outcomes.add(outcome)


def _leave_receipt(
    settings: Settings, instance, graph, relative_paths, keys, outcomes: list[DocumentOutcome]
) -> None:
    """A receipt for the next ingest of these paths when every document is fresh now and nothing
    was written while that was read (reading may write: Dagster refreshes its cached partition
    status, then a second look reads the same). Its lines are the ingest's own: the runs'
    outcomes already hold each step's and check's latest (what the runs did not redo was read
    from the instance)."""
    by_key = {o.doc_id: o for o in outcomes if not o.skipped}
    unchanged = [_as_unchanged(by_key[k]) for k in keys]
    for _ in range(2):
        digest = receipt_digest(settings, relative_paths)
        if not digest or any(p.assets for p in plan_runs(instance, graph, keys)):
            return
        if receipt_digest(settings, relative_paths) == digest:
            write_receipt(settings, relative_paths, digest, unchanged)
            return
