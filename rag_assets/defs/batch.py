"""One step body for one document or a batch of them.

A run carries one document (its partition key) or a batch (a range of partition keys): every
per-document asset runs the same per-document function either way. In a batch, the step's
inputs arrive as {partition key: value} and its output leaves the same way; each document's
materialization gets its own metadata and each its own check results, so a partition stays a
document in the UI whichever run made it.

A document failing in a batch fails the step, naming every failed document and why
(`failed_documents` in the failure's metadata) after the others were tried, so the runner can
run those alone (where each fails on its own partition, with its own reason) and the rest
again as a batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckSeverity,
    AssetExecutionContext,
    DagsterEventType,
    DataVersion,
    Failure,
    MetadataValue,
    Output,
)

from rag_assets.defs.dagster_private import (
    add_partition_metadata,
    check_results_written_together,
    latest_materializations,
    set_partition_data_versions,
)
from rag_assets.defs.metadata import RAW_DOCUMENTS, source_metadata
from rag_assets.quality.outcome import CheckOutcome

T = TypeVar("T")

# The failure metadata naming each failed document of a batch and its one-line reason.
FAILED_DOCUMENTS = "failed_documents"
ERROR = AssetCheckSeverity.ERROR


@dataclass
class CheckFound:
    name: str
    outcome: CheckOutcome
    severity: AssetCheckSeverity = ERROR


@dataclass
class DocumentStep:
    """What a step made of one document: the value stored for its partition, the metadata its
    materialization shows, its data version (None: Dagster's own, from the code version and the
    inputs') and its check results."""

    value: Any
    metadata: Mapping[str, Any]
    data_version: DataVersion | None = None
    checks: list[CheckFound] = field(default_factory=list)


class StepLog:
    """What a step tells of its documents. Alone, each line as it comes; in a batch, the INFO
    lines of all its documents as one message when the step ends (each line is an event written
    to the instance: fifty documents' lines would cost fifty writes each), warnings and errors as
    they come."""

    def __init__(self, log, gather: bool) -> None:
        self._log, self._gather, self._lines = log, gather, []

    def info(self, message: str) -> None:
        if self._gather:
            self._lines.append(message)
        else:
            self._log.info(message)

    def warning(self, message: str) -> None:
        self._log.warning(message)

    def error(self, message: str) -> None:
        self._log.error(message)

    def flush(self) -> None:
        if self._lines:
            self._log.info("\n".join(self._lines))
            self._lines.clear()


def documents(context: AssetExecutionContext) -> list[str]:
    """The run's documents: one partition key, or a batch's range in partition order."""
    return list(context.partition_keys)


def split_inputs(keys: list[str], inputs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each document's own inputs: a batch's inputs are {partition key: value}."""
    if len(keys) == 1:
        return {keys[0]: dict(inputs)}
    return {key: {name: value[key] for name, value in inputs.items()} for key in keys}


def failure_reason(error: Exception) -> str:
    if isinstance(error, Failure):
        return error.description or type(error).__name__
    return f"{type(error).__name__}: {error}"


def per_document(
    context: AssetExecutionContext,
    body: Callable[[str, dict[str, Any], StepLog], DocumentStep],
    **inputs: Any,
) -> Iterator[Any]:
    """Run `body(partition key, its inputs, the step's log)` for each document of the run and
    emit the step's events; see `emit`."""
    yield from emit(context, each_document(context, body, **inputs))


def each_document(
    context: AssetExecutionContext,
    body: Callable[[str, dict[str, Any], StepLog], T],
    **inputs: Any,
) -> dict[str, T]:
    """`body(partition key, its inputs, the step's log)` for each document of the run. One
    document's failure is the step's, as raised; in a batch, every document is tried and the
    step then fails naming each that failed (`fail_documents`)."""
    keys = documents(context)
    own = split_inputs(keys, inputs)
    log = StepLog(context.log, gather=len(keys) > 1)
    if len(keys) == 1:
        return {keys[0]: body(keys[0], own[keys[0]], log)}
    made: dict[str, T] = {}
    failed: dict[str, str] = {}
    try:
        for key in keys:
            try:
                made[key] = body(key, own[key], log)
            except Exception as error:  # one document's failure must not hide the others'
                failed[key] = failure_reason(error)
    finally:
        log.flush()
    fail_documents(keys, failed)
    return made


def fail_documents(keys: list[str], failed: Mapping[str, str]) -> None:
    """Fail the step for these documents of the run: a document alone with its own reason, a
    batch naming each failed document and why."""
    if not failed:
        return
    if len(keys) == 1:
        raise Failure(description=next(iter(failed.values())), allow_retries=False)
    raise batch_failure(failed, len(keys))


def failed_documents(events: Iterable) -> list[str]:
    """The documents a failed batch run's events name as failed (none: it failed as a whole)."""
    named: list[str] = []
    for event in events:
        if event.event_type != DagsterEventType.STEP_FAILURE:
            continue
        data = event.event_specific_data.user_failure_data
        entry = data.metadata.get(FAILED_DOCUMENTS) if data else None
        if entry is not None:
            named.extend(entry.value)
    return named


def batch_failure(failed: Mapping[str, str], size: int) -> Failure:
    listed = "; ".join(f"{key}: {reason}" for key, reason in failed.items())
    return Failure(
        description=f"{len(failed)} of {size} documents failed: {listed}",
        metadata={FAILED_DOCUMENTS: MetadataValue.json(dict(failed))},
        allow_retries=False,
    )


def emit(context: AssetExecutionContext, made: Mapping[str, DocumentStep]) -> Iterator[Any]:
    """The step's output (one value, or a batch's {key: value}) with each document's metadata
    on its own materialization, then every document's check results on its own partition.

    A blocking check failing for a document of a batch fails the step after the batch's results
    are recorded, naming the documents, as any failure in a batch does."""
    keys = list(made)
    # Every step's metadata names the document's file, as raw_documents' own does.
    asset_key = context.assets_def.key
    sources = {} if asset_key == RAW_DOCUMENTS else source_metadata(context.instance, keys)
    metadata = {key: {**sources.get(key, {}), **step.metadata} for key, step in made.items()}
    if len(keys) == 1:
        (step,) = made.values()
        versioned = {"data_version": step.data_version} if step.data_version else {}
        yield Output(step.value, metadata=metadata[keys[0]], **versioned)
    else:
        add_partition_metadata(context, metadata)
        set_partition_data_versions(
            context,
            {key: step.data_version.value for key, step in made.items() if step.data_version},
        )
        yield Output({key: step.value for key, step in made.items()})
    names = {found.name for step in made.values() for found in step.checks}
    for name in sorted(names):
        # The check's output, once for the step; its results are the documents' own.
        yield Output(
            None,
            output_name=context.assets_def.get_output_name_for_asset_check_key(
                AssetCheckKey(asset_key, name)
            ),
        )
    # Each result names the materialization it checked, as Dagster's own for one partition do.
    targets = latest_materializations(context.instance, asset_key, keys) if names else {}
    blocked: dict[str, str] = {}
    results = sum(len(step.checks) for step in made.values())
    with check_results_written_together(context, results):
        for key, step in made.items():
            for found in step.checks:
                spec = context.assets_def.get_spec_for_check_key(
                    AssetCheckKey(asset_key, found.name)
                )
                yield AssetCheckEvaluation(
                    asset_key=asset_key,
                    check_name=found.name,
                    passed=found.outcome.passed,
                    metadata=found.outcome.metadata,
                    description=found.outcome.description,
                    severity=found.severity,
                    blocking=spec.blocking,
                    partition=key,
                    target_materialization_data=targets.get(key),
                )
                if spec.blocking and not found.outcome.passed and found.severity == ERROR:
                    blocked.setdefault(key, f"check {found.name} failed")
    if len(keys) > 1:  # alone, Dagster fails the step for a blocking check itself
        fail_documents(keys, blocked)
