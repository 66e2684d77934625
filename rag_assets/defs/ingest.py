"""Run the whole graph for a set of documents on the instance under the data dir (CLI, scripts)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from dagster import DagsterEventType

from rag_assets.defs.build import build_defs
from rag_assets.defs.jobs import INGEST_JOB
from rag_assets.defs.partitions import documents_partitions
from rag_assets.instance import open_instance
from rag_assets.settings import Settings
from rag_assets.sources.inbox import (
    SkippedFile,
    printable,
    scan_folder,
    sha256_file,
    skip_reason,
)
from rag_assets.sources.keys import partition_key_for
from rag_assets.sources.paths import inside


@dataclass
class DocumentOutcome:
    doc_id: str
    source_path: str
    success: bool
    parser: str = ""
    template: str = ""
    chunks: int = 0
    checks_passed: int = 0
    checks_total: int = 0
    error: str = ""
    failed_checks: list[str] = field(default_factory=list)
    skipped: str = ""  # why the file was not ingested at all (hidden, a link out, ...)

    def summary(self) -> str:
        if self.skipped:
            return f"{'skipped':6} {self.source_path}  {self.skipped}"
        status = "ok" if self.success else "FAILED"
        line = (
            f"{status:6} {self.source_path}  parser={self.parser or '-'} "
            f"template={self.template or '-'} chunks={self.chunks} "
            f"checks={self.checks_passed}/{self.checks_total}"
        )
        if self.failed_checks:
            line += f" failed_checks={','.join(self.failed_checks)}"
        return line + (f"  error: {self.error}" if self.error else "")


def place_in_inbox(
    paths: list[Path], inbox: Path, follow_symlinks: bool = False
) -> tuple[list[str], list[SkippedFile]]:
    """Copy files (or folders' files) into the inbox: their inbox-relative paths, and what was
    left out and why (hidden names, links leading out of a folder, undecodable names)."""
    placed: list[str] = []
    skipped: list[SkippedFile] = []
    for path in paths:
        path = path.resolve()
        if path.is_dir():
            scan = scan_folder(path, follow_symlinks)
            prefix = f"{printable(path.name)}/"
            skipped.extend(SkippedFile(prefix + s.relative_path, s.reason) for s in scan.skipped)
            for file in scan.files:
                placed.append(_copy(file.path, inside(inbox, path.name, file.relative_path), inbox))
        elif path.is_file():
            if reason := skip_reason(path.name):
                skipped.append(SkippedFile(printable(path.name), reason))
            else:
                placed.append(_copy(path, inside(inbox, path.name), inbox))
        else:
            raise FileNotFoundError(f"{printable(str(path))}: no such file or folder")
    return placed, skipped


def _copy(source: Path, target: Path, inbox: Path) -> str:
    if source != target and not (target.exists() and sha256_file(target) == sha256_file(source)):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return target.relative_to(inbox.resolve()).as_posix()


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
        elif event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.event_specific_data
            outcome.checks_total += 1
            if evaluation.passed:
                outcome.checks_passed += 1
            else:
                outcome.failed_checks.append(evaluation.check_name)
        elif event.event_type == DagsterEventType.STEP_FAILURE and not outcome.error:
            error = event.event_specific_data.error
            user_error = error.cause if error and error.cause else error
            outcome.error = (
                (user_error.message if user_error else "step failed").strip().splitlines()[0]
            )
    if outcome.failed_checks and not outcome.error:
        outcome.success = False
        outcome.error = "checks failed"
    return outcome


def ingest(
    settings: Settings, paths: list[Path], instance=None, log_level: str = "INFO"
) -> list[DocumentOutcome]:
    """Place the files in the inbox, register their partitions, materialize every asset for each.

    Documents run one after another in this process, so models load once; a
    failing document is reported and the others still land. `instance` defaults to
    the one under the data dir.
    """
    relative_paths, skipped = place_in_inbox(
        paths, settings.inbox_dir, settings.inbox_follow_symlinks
    )
    keys = [partition_key_for(p) for p in relative_paths]
    instance = instance or open_instance(settings)
    instance.add_dynamic_partitions(documents_partitions.name, keys)
    job = build_defs(settings).resolve_job_def(INGEST_JOB)
    outcomes = [DocumentOutcome("", s.relative_path, True, skipped=s.reason) for s in skipped]
    for relative_path, key in zip(relative_paths, keys, strict=True):
        result = job.execute_in_process(
            partition_key=key,
            instance=instance,
            raise_on_error=False,
            # Only the console's verbosity: the instance's event log keeps everything.
            run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
        )
        outcomes.append(_outcome(key, relative_path, result))
    return outcomes
