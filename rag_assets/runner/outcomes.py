"""A document's outcome, read from the events of its runs and, for what they did not redo, from
the instance; and the list of outcomes an ingest tells its progress of as each ends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dagster import AssetCheckSeverity, DagsterEventType, DagsterInstance

from rag_assets.defs.dagster_private import (
    KEYS_A_STATEMENT,
    AssetCheckExecutionRecordStatus,
    AssetCheckPartitionInfo,
    PartitionKeyFilter,
)
from rag_assets.defs.status import failure_reason, latest_metadata_of
from rag_assets.interrupts import StopSignals
from rag_assets.runner.progress import RunProgress
from rag_assets.runner.receipt import DocumentOutcome


def _failed(outcome: DocumentOutcome, name: str, evaluation) -> None:
    if evaluation.severity == AssetCheckSeverity.WARN:
        outcome.warned_checks.append(name)
    else:
        outcome.failed_checks.append(name)


def fill_all_from_instance(
    outcomes: list[DocumentOutcome],
    instance: DagsterInstance,
    check_keys,
    evaluated: Mapping[str, set[str]] | None = None,
) -> list[DocumentOutcome]:
    """What runs did not redo is reported from the documents' stored materializations and
    their latest check results (but those `evaluated` for each), so every line reads the same
    whatever ran; in a few queries for each 500 documents."""
    evaluated = evaluated or {}
    # The checks some document still needs (after a run, usually none).
    check_keys = [
        k for k in check_keys if any(k.name not in evaluated.get(o.doc_id, ()) for o in outcomes)
    ]
    keys = [o.doc_id for o in outcomes] if check_keys else []
    parsed = latest_metadata_of(
        instance, "parsed_documents", [o.doc_id for o in outcomes if not o.parser]
    )
    chunked = latest_metadata_of(
        instance, "document_chunks", [o.doc_id for o in outcomes if not o.template]
    )
    latest: dict[str, dict[str, AssetCheckPartitionInfo]] = {}
    for start in range(0, len(keys), KEYS_A_STATEMENT):
        infos = instance.event_log_storage.get_asset_check_partition_info(
            check_keys, partition_keys=keys[start : start + KEYS_A_STATEMENT]
        )
        for info in infos:
            latest.setdefault(info.partition_key, {})[info.check_key.name] = info
    for outcome in outcomes:
        if not outcome.parser:
            outcome.parser = str(parsed.get(outcome.doc_id, {}).get("parser", ""))
        if not outcome.template:
            chunks = chunked.get(outcome.doc_id, {})
            outcome.template = str(chunks.get("template", ""))
            outcome.chunks = int(chunks.get("chunks", 0))
        found = latest.get(outcome.doc_id, {})
        for check_key in check_keys:
            info = found.get(check_key.name)
            if info is None or check_key.name in evaluated.get(outcome.doc_id, ()):
                continue
            if info.latest_execution_status == AssetCheckExecutionRecordStatus.SUCCEEDED:
                outcome.checks_total += 1
                outcome.checks_passed += 1
            elif info.latest_execution_status == AssetCheckExecutionRecordStatus.FAILED:
                outcome.checks_total += 1
                # Its severity is in its event: read for the few that failed.
                (record,) = instance.event_log_storage.get_latest_asset_check_execution_by_key(
                    [check_key], partition_filter=PartitionKeyFilter(key=outcome.doc_id)
                ).values()
                _failed(outcome, check_key.name, record.event.dagster_event.event_specific_data)
    return outcomes


def _partition(event) -> str | None:
    """The document a run's event concerns, None for one about the run or step (a batch's runs
    carry several documents)."""
    if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
        return event.event_specific_data.materialization.partition
    if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
        return event.event_specific_data.partition
    return None


class RunEvents:
    """The events of an ingest's runs by document, each run's read once: a batch's documents
    each read their own, in the order the run wrote them, with the run's and steps' own."""

    def __init__(self) -> None:
        # id(result) -> (result, its events, their positions by document); the result is kept
        # so that its id names no other while this lives.
        self._runs: dict[int, tuple[object, list, dict[str | None, list[int]]]] = {}

    def of(self, results: Sequence, doc_id: str) -> list:
        events = []
        for result in results:
            all_events, positions = self._indexed(result)
            mine = sorted(positions.get(None, []) + positions.get(doc_id, []))
            events += [all_events[i] for i in mine]
        return events

    def _indexed(self, result) -> tuple[list, dict[str | None, list[int]]]:
        if id(result) not in self._runs:
            all_events = result.all_events
            positions: dict[str | None, list[int]] = {}
            for i, event in enumerate(all_events):
                positions.setdefault(_partition(event), []).append(i)
            self._runs[id(result)] = (result, all_events, positions)
        _, all_events, positions = self._runs[id(result)]
        return all_events, positions


def run_outcome(
    doc_id: str, source_path: str, results: Sequence, events: RunEvents | None = None
) -> DocumentOutcome:
    """The outcome of a document's runs (in the order they ran, alone or in batches): the first
    failure is its error. `events`: the runs' events already read for other documents."""
    outcome = DocumentOutcome(doc_id, source_path, all(r.success for r in results))
    for event in (events or RunEvents()).of(results, doc_id):
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


@dataclass
class FinishedDocument:
    """A document whose runs have ended: the assets they ran and their results, in order."""

    key: str
    relative_path: str
    ran: tuple[str, ...]
    results: Sequence


def finished_outcomes(
    instance, graph, finished: Sequence[FinishedDocument]
) -> list[DocumentOutcome]:
    """The outcomes of documents whose runs have ended (a batch's); the checks their runs did
    not evaluate are read from the instance for those that succeeded, all in a few queries."""
    events = RunEvents()
    outcomes, evaluated = [], {}
    for document in finished:
        outcome = run_outcome(document.key, document.relative_path, document.results, events)
        outcome.ran = document.ran
        outcomes.append(outcome)
        evaluated[document.key] = {
            e.event_specific_data.check_name
            for e in events.of(document.results, document.key)
            if e.event_type == DagsterEventType.ASSET_CHECK_EVALUATION
        }
    succeeded = [o for o in outcomes if o.success]
    fill_all_from_instance(succeeded, instance, graph.asset_check_keys, evaluated)
    return outcomes


@dataclass
class Outcomes:
    """An ingest's outcomes so far; `progress` hears of each as it is added."""

    outcomes: list[DocumentOutcome]
    progress: RunProgress
    stop: StopSignals
    current: set[str] | None = None  # the documents whose run is being prepared or executed

    def add(self, outcome: DocumentOutcome) -> None:
        self.outcomes.append(outcome)
        self.progress.document_finished(outcome)
