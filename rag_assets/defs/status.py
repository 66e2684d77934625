"""What `rag-assets status` shows: every document, its last run's outcome, chunks and failing checks."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    RunsFilter,
)

from rag_assets.defs.partitions import documents_partitions

# "rag_assets.errors.DocumentError: empty.pdf: ..." -> "empty.pdf: ..."
_CLASS_PREFIX = re.compile(r"^(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Failure): ")


@dataclass
class DocumentStatus:
    doc_id: str
    source_path: str = ""
    outcome: str = "never run"  # the last run's status: success, failure, started, ...
    chunks: int | None = None  # of the last document_chunks materialization
    failing_checks: list[str] = field(default_factory=list)  # in the last run
    reason: str = ""  # the last run's first step failure, one line

    def line(self) -> str:
        chunks = "-" if self.chunks is None else str(self.chunks)
        text = f"{self.outcome:9} {self.source_path or self.doc_id}  chunks={chunks}"
        if self.failing_checks:
            text += f"  failing_checks={','.join(self.failing_checks)}"
        return text + (f"  reason: {self.reason}" if self.reason else "")

    def as_dict(self) -> dict:
        return asdict(self)


def latest_metadata(instance: DagsterInstance, asset: str, key: str) -> dict:
    """The metadata of the asset's latest materialization for one partition ({} if none)."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[key]), limit=1
    ).records
    if not records:
        return {}
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def failure_reason(error) -> str:
    """A step failure's reason in one line: the underlying error's message, no class name."""
    user_error = error.cause if error and error.cause else error
    text = user_error.message if user_error else "step failed"
    line = next((line.strip() for line in text.splitlines() if line.strip()), "step failed")
    return _CLASS_PREFIX.sub("", line, count=1)


def latest_document_run(instance: DagsterInstance, key: str):
    """The latest run that carried the document: one of its own (tagged with its key), or a
    batch's (tagged with a range), found through the document's latest materializations."""
    runs = instance.get_runs(RunsFilter(tags={"dagster/partition": key}), limit=1)
    run_ids = {r.run_id for r in runs}
    for asset in ("raw_documents", "vector_index"):
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[key]), limit=1
        ).records
        run_ids.update(r.run_id for r in records)
    if not run_ids:
        return None
    carried = instance.get_run_records(RunsFilter(run_ids=list(run_ids)))
    return max(carried, key=lambda r: r.create_timestamp).dagster_run


def document_status(
    instance: DagsterInstance, key: str, inbox_paths: dict[str, str] | None = None
) -> DocumentStatus:
    status = DocumentStatus(doc_id=key)
    landed = latest_metadata(instance, "raw_documents", key).get("source_path")
    status.source_path = str(landed or (inbox_paths or {}).get(key, ""))
    chunks = latest_metadata(instance, "document_chunks", key).get("chunks")
    status.chunks = int(chunks) if chunks is not None else None
    run = latest_document_run(instance, key)
    if run is None:
        return status
    status.outcome = {
        DagsterRunStatus.SUCCESS: "ok",
        DagsterRunStatus.FAILURE: "FAILED",
    }.get(run.status, run.status.value.lower())
    events = instance.all_logs(
        run.run_id, of_type={DagsterEventType.STEP_FAILURE, DagsterEventType.ASSET_CHECK_EVALUATION}
    )
    for entry in events:
        event = entry.dagster_event
        if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.event_specific_data
            if evaluation.partition in (None, key) and not evaluation.passed:
                status.failing_checks.append(event.event_specific_data.check_name)
        elif not status.reason:
            status.reason = failure_reason(event.event_specific_data.error)
    if status.failing_checks and status.outcome == "ok":
        status.outcome = "FAILED"
    return status


def documents_status(
    instance: DagsterInstance, inbox_paths: dict[str, str] | None = None
) -> list[DocumentStatus]:
    """`inbox_paths` (key -> path in the inbox) names documents that never landed."""
    keys = instance.get_dynamic_partitions(documents_partitions.name)
    found = [document_status(instance, key, inbox_paths) for key in keys]
    return sorted(found, key=lambda s: s.source_path or s.doc_id)
