"""What an ingest did for each document, and the receipt that replays an unchanged one.

An unchanged re-ingest starts no run, yet asking Dagster so costs a process about three CPU
seconds, mostly imports (Dagster, SQLAlchemy, the asset modules) and opening the instance: a tenth
of ingesting the sample corpus. So an ingest that ends with every document fresh leaves a receipt:
its lines for those documents, under a digest of everything that verdict was read from: this
package's code and the installed distributions, the settings and `RAG_ASSETS_*` environment,
`rag_collections.yaml`, the instance's `dagster.yaml` and SQLite databases (each file's size,
time and the change counter SQLite bumps on every committed write), and the documents' files in
the inbox. The next ingest of the same paths prints the receipt, without importing Dagster, only
while that digest is unchanged: a run or an observation from the UI, the daemon's heartbeat, a wiped
partition, an edited file, template, setting or code all take the full path through Dagster's
stale status.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from rag_assets.instance import hold_data_folder, storage_elsewhere
from rag_assets.settings import Settings
from rag_assets.sources.inbox import (
    SkippedFile,
    printable,
    scan_folder,
    sha256_file,
    skip_reason,
)
from rag_assets.sources.paths import inside

# Files SQLite keeps beside a database while a write is in flight, or in WAL mode.
IN_FLIGHT = ("-journal", "-wal", "-shm")
SQLITE_CHANGE_COUNTER = 24  # offset of the header's 4-byte file change counter


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
    warned_checks: list[str] = field(default_factory=list)  # failed with WARN severity: no gate
    skipped: str = ""  # why the file was not ingested at all (hidden, a link out, ...)
    ran: tuple[str, ...] = ()  # the assets this ingest materialized; none when all were fresh
    notes: list[str] = field(default_factory=list)  # degradations: content lost, steps failed
    # An ingest stopped by a signal: "interrupted" (in progress, rolled back) or "not started".
    stopped: str = ""
    seconds: float = 0.0  # wall time of the document's run (its parse may have started ahead)

    @property
    def degraded(self) -> bool:
        return self.success and bool(self.notes)

    def summary(self) -> str:
        if self.skipped:
            return f"{'skipped':6} {self.source_path}  {self.skipped}"
        if self.stopped == "interrupted":
            return (
                f"interrupted {self.source_path}  rolled back (its index rows as before this "
                f"ingest); the next ingest runs it again"
            )
        if self.stopped:
            return f"{self.stopped} {self.source_path}"
        status = "ok" if self.success else "FAILED"
        line = (
            f"{status:6} {self.source_path}  parser={self.parser or '-'} "
            f"template={self.template or '-'} chunks={self.chunks} "
            f"checks={self.checks_passed}/{self.checks_total}"
        )
        if self.failed_checks:
            line += f" failed_checks={','.join(self.failed_checks)}"
        if self.warned_checks:
            line += f" warned_checks={','.join(self.warned_checks)}"
        if self.success and not self.ran:
            line += "  unchanged"
        elif self.success and self.ran[0] != "raw_documents":
            line += f"  re-ran from {self.ran[0]}"
        if self.degraded:
            line += f"  degraded: {'; '.join(self.notes)}"
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


def _storage_state(home: Path) -> list | None:
    """The instance's SQLite databases as of now; None when its storage is elsewhere (a server)
    or a database has a write in flight."""

    config_file = home / "dagster.yaml"
    config = yaml.safe_load(config_file.read_text()) if config_file.is_file() else None
    if storage_elsewhere(config):
        return None
    state = []
    for path in sorted((home / "history").rglob("*")):
        if path.name.endswith(IN_FLIGHT):
            return None
        if path.suffix == ".db":
            stat = path.stat()
            with path.open("rb") as db:
                db.seek(SQLITE_CHANGE_COUNTER)
                counter = db.read(4).hex()
            state.append([str(path.relative_to(home)), stat.st_size, stat.st_mtime_ns, counter])
    return [config, state]


def _code_state() -> list:
    """This package's sources and the environment's distributions, as names, sizes and times."""
    package = Path(__file__).resolve().parent
    sources = [
        [str(p.relative_to(package)), p.stat().st_size, p.stat().st_mtime_ns]
        for p in sorted(package.rglob("*.py"))
    ]
    # Found, not imported: the folder Dagster and every other distribution is installed in.
    site = Path(importlib.util.find_spec("dagster").origin).parents[1]
    return [sys.version, sources, sorted(p.name for p in site.glob("*.dist-info"))]


def receipt_digest(settings: Settings, relative_paths: list[str]) -> str | None:
    """A digest of everything an ingest's verdict on these documents is read from; None when the
    instance's storage cannot be watched from its files."""
    storage = _storage_state(settings.dagster_home)
    if storage is None:
        return None
    collections = settings.collections_path
    payload = [
        settings.model_dump(mode="json"),
        # Credentials among them enter only this one-way digest.
        sorted((k, v) for k, v in os.environ.items() if k.startswith("RAG_ASSETS_")),
        sha256_file(collections) if collections.is_file() else None,
        storage,
        _code_state(),
        [[p, sha256_file(settings.inbox_dir / p)] for p in relative_paths],
    ]
    return hashlib.sha256(json.dumps(payload, default=str).encode()).hexdigest()


def write_receipt(
    settings: Settings, relative_paths: list[str], digest: str, outcomes: list[DocumentOutcome]
) -> None:
    receipt = {
        "paths": relative_paths,
        "digest": digest,
        "outcomes": [asdict(o) for o in outcomes],
    }
    settings.receipt_path.write_text(json.dumps(receipt))


def replay(settings: Settings, paths: list[Path]) -> list[DocumentOutcome] | None:
    """Place the files in the inbox; the last receipt's outcomes if nothing it was read from has
    changed since, else None (then `rag_assets.runner.ingest.ingest` decides, through Dagster)."""
    with hold_data_folder(settings.data_dir):
        relative_paths, skipped = place_in_inbox(
            paths, settings.inbox_dir, settings.inbox_follow_symlinks
        )
        try:
            receipt = json.loads(settings.receipt_path.read_text())
        except (OSError, ValueError):
            return None
        if receipt.get("paths") != relative_paths:
            return None
        if receipt.get("digest") != receipt_digest(settings, relative_paths):
            return None
    outcomes = [DocumentOutcome("", s.relative_path, True, skipped=s.reason) for s in skipped]
    for saved in receipt["outcomes"]:
        outcomes.append(DocumentOutcome(**{**saved, "ran": tuple(saved["ran"])}))
    return outcomes
