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


def fill_from_instance(
    outcome: DocumentOutcome, instance: DagsterInstance, check_keys, evaluated: set[str]
) -> DocumentOutcome:
    """What a run did not redo is reported from the document's stored materializations and
    its latest check results (but those of `evaluated`), so every line reads the same whatever
    ran."""
    return fill_all_from_instance([outcome], instance, check_keys, {outcome.doc_id: evaluated})[0]


def fill_all_from_instance(
    outcomes: list[DocumentOutcome],
    instance: DagsterInstance,
    check_keys,
    evaluated: Mapping[str, set[str]] | None = None,
) -> list[DocumentOutcome]:
    """`fill_from_instance` of many documents, in a few queries for each 500 of them (an
    ingest reports every unchanged document of its folders so)."""
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


def _about(event, doc_id: str) -> bool:
    """Whether a run's event concerns this document: a batch's runs carry several."""
    if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
        partition = event.event_specific_data.materialization.partition
    elif event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
        partition = event.event_specific_data.partition
    else:
        return True
    return partition in (None, doc_id)


def document_events(results: Sequence, doc_id: str) -> list:
    return [e for result in results for e in result.all_events if _about(e, doc_id)]


def run_outcome(doc_id: str, source_path: str, results: Sequence) -> DocumentOutcome:
    """The outcome of a document's runs (in the order they ran, alone or in batches): the first
    failure is its error."""
    outcome = DocumentOutcome(doc_id, source_path, all(r.success for r in results))
    for event in document_events(results, doc_id):
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


def finished_outcome(
    instance, graph, key: str, relative_path: str, ran: tuple[str, ...], results: Sequence
) -> DocumentOutcome:
    """The outcome of a document whose runs of `ran` have ended; checks they did not evaluate
    are read from the instance when they succeeded."""
    outcome = run_outcome(key, relative_path, results)
    outcome.ran = ran
    evaluated = {
        e.event_specific_data.check_name
        for e in document_events(results, key)
        if e.event_type == DagsterEventType.ASSET_CHECK_EVALUATION
    }
    if outcome.success:
        outcome = fill_from_instance(outcome, instance, graph.asset_check_keys, evaluated)
    return outcome


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
