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

from rag_assets.defs.dagster_private import KEYS_A_STATEMENT, PARTITION_NAME_TAG
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
    return latest_metadata_of(instance, asset, [key]).get(key, {})


def failure_reason(error) -> str:
    """A step failure's reason in one line: the underlying error's message, no class name."""
    user_error = error.cause if error and error.cause else error
    text = user_error.message if user_error else "step failed"
    line = next((line.strip() for line in text.splitlines() if line.strip()), "step failed")
    return _CLASS_PREFIX.sub("", line, count=1)


RECORDS_A_PAGE = 5000
# Runs that carried a document: its own, or a batch's through its materializations.
CARRYING_ASSETS = ("raw_documents", "vector_index")


def _latest_records(instance: DagsterInstance, asset: str, keys: list[str]) -> dict:
    """Each partition's latest materialization record, read newest first, page by page, for
    500 partitions at a time."""
    latest: dict = {}
    for start in range(0, len(keys), KEYS_A_STATEMENT):
        records_filter = AssetRecordsFilter(
            asset_key=AssetKey(asset), asset_partitions=keys[start : start + KEYS_A_STATEMENT]
        )
        cursor = None
        while True:
            page = instance.fetch_materializations(
                records_filter, limit=RECORDS_A_PAGE, cursor=cursor
            )
            for record in page.records:
                latest.setdefault(record.partition_key, record)
            if not page.has_more:
                break
            cursor = page.cursor
    return latest


def latest_document_runs(instance: DagsterInstance, keys: list[str]) -> dict:
    """The latest run that carried each document: one of its own (tagged with its key), or a
    batch's (tagged with a range), found through its latest materializations. In a few queries
    for each 500 documents; documents never run are left out."""
    carried_by: dict[str, set[str]] = {}
    for start in range(0, len(keys), KEYS_A_STATEMENT):
        tagged = RunsFilter(tags={PARTITION_NAME_TAG: keys[start : start + KEYS_A_STATEMENT]})
        for run in instance.get_runs(tagged):
            carried_by.setdefault(run.tags[PARTITION_NAME_TAG], set()).add(run.run_id)
    for asset in CARRYING_ASSETS:
        for key, record in _latest_records(instance, asset, keys).items():
            carried_by.setdefault(key, set()).add(record.run_id)
    run_ids = sorted(set().union(*carried_by.values())) if carried_by else []
    runs = {
        r.dagster_run.run_id: r
        for start in range(0, len(run_ids), KEYS_A_STATEMENT)
        for r in instance.get_run_records(
            RunsFilter(run_ids=run_ids[start : start + KEYS_A_STATEMENT])
        )
    }
    return {
        key: max((runs[i] for i in ids if i in runs), key=lambda r: r.create_timestamp).dagster_run
        for key, ids in carried_by.items()
        if any(i in runs for i in ids)
    }


def document_status(
    instance: DagsterInstance, key: str, inbox_paths: dict[str, str] | None = None
) -> DocumentStatus:
    return statuses_of(instance, [key], inbox_paths)[0]


@dataclass
class _RunFindings:
    """What a run's events say of its documents: the checks that failed, in the order they ran,
    with the partition each named (None: the run's one document), and its first step failure."""

    failed_checks: list[tuple[str | None, str]] = field(default_factory=list)
    reason: str = ""


def _run_findings(instance: DagsterInstance, run_id: str) -> _RunFindings:
    findings = _RunFindings()
    events = instance.all_logs(
        run_id, of_type={DagsterEventType.STEP_FAILURE, DagsterEventType.ASSET_CHECK_EVALUATION}
    )
    for entry in events:
        event = entry.dagster_event
        if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.event_specific_data
            if not evaluation.passed:
                findings.failed_checks.append((evaluation.partition, evaluation.check_name))
        elif not findings.reason:
            findings.reason = failure_reason(event.event_specific_data.error)
    return findings


def statuses_of(
    instance: DagsterInstance, keys: list[str], inbox_paths: dict[str, str] | None = None
) -> list[DocumentStatus]:
    """Each document's status, read in a few queries for each 500 documents and once for each
    run that carried them (a batch's run holds the check results of all its documents)."""
    landed = latest_metadata_of(instance, "raw_documents", keys)
    chunked = latest_metadata_of(instance, "document_chunks", keys)
    last_runs = latest_document_runs(instance, keys)
    findings: dict[str, _RunFindings] = {}
    found = []
    for key in keys:
        status = DocumentStatus(doc_id=key)
        source = landed.get(key, {}).get("source_path")
        status.source_path = str(source or (inbox_paths or {}).get(key, ""))
        chunks = chunked.get(key, {}).get("chunks")
        status.chunks = int(chunks) if chunks is not None else None
        found.append(status)
        run = last_runs.get(key)
        if run is None:
            continue
        status.outcome = {
            DagsterRunStatus.SUCCESS: "ok",
            DagsterRunStatus.FAILURE: "FAILED",
        }.get(run.status, run.status.value.lower())
        if run.run_id not in findings:
            findings[run.run_id] = _run_findings(instance, run.run_id)
        run_findings = findings[run.run_id]
        status.failing_checks = [
            name for partition, name in run_findings.failed_checks if partition in (None, key)
        ]
        status.reason = run_findings.reason
        if status.failing_checks and status.outcome == "ok":
            status.outcome = "FAILED"
    return found


def latest_metadata_of(instance: DagsterInstance, asset: str, keys: list[str]) -> dict:
    """`latest_metadata` of many partitions: {key: metadata} for those materialized."""
    return {
        key: {k: v.value for k, v in record.asset_materialization.metadata.items()}
        for key, record in _latest_records(instance, asset, keys).items()
    }


def documents_status(
    instance: DagsterInstance, inbox_paths: dict[str, str] | None = None
) -> list[DocumentStatus]:
    """`inbox_paths` (key -> path in the inbox) names documents that never landed."""
    keys = instance.get_dynamic_partitions(documents_partitions.name)
    found = statuses_of(instance, keys, inbox_paths)
    return sorted(found, key=lambda s: s.source_path or s.doc_id)
