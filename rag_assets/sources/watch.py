"""What changed in the inbox since the last look: the sensor's decisions, without Dagster."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from rag_assets.sources.inbox import InboxFile, sha256_file


class TrackedFile(BaseModel):
    key: str
    size: int
    mtime_ns: int
    sha256: str


@dataclass
class InboxPlan:
    add_partitions: list[str] = field(default_factory=list)
    runs: list[tuple[str, str]] = field(default_factory=list)  # (partition key, content sha256)
    remove_partitions: list[str] = field(default_factory=list)
    state: dict[str, TrackedFile] = field(default_factory=dict)  # by relative path


def plan_inbox_changes(
    files: list[InboxFile],
    previous: dict[str, TrackedFile],
    known_partitions: set[str],
    last_ingested_sha: Callable[[str], str | None],
) -> InboxPlan:
    """New files get a partition and a run, changed content a run, vanished files a removal.

    A file is hashed only when its size or mtime moved since the last tick, so a
    quiet inbox costs one stat per file. `last_ingested_sha` is asked only for
    files this cursor has not seen (e.g. ingested by the CLI) to avoid a re-run.
    """
    plan = InboxPlan()
    for f in files:
        before = previous.get(f.relative_path)
        if (
            before
            and before.key == f.partition_key
            and (before.size, before.mtime_ns) == (f.size, f.mtime_ns)
        ):
            plan.state[f.relative_path] = before
            continue
        sha = sha256_file(f.path)
        plan.state[f.relative_path] = TrackedFile(
            key=f.partition_key, size=f.size, mtime_ns=f.mtime_ns, sha256=sha
        )
        if f.partition_key not in known_partitions:
            plan.add_partitions.append(f.partition_key)
            plan.runs.append((f.partition_key, sha))
        elif (before.sha256 if before else last_ingested_sha(f.partition_key)) != sha:
            plan.runs.append((f.partition_key, sha))
    present = {f.partition_key for f in files}
    plan.remove_partitions = sorted(known_partitions - present)
    return plan


# The sensor's cursor is shown on its page: a summary naming the manifest (every file tracked,
# with its sha256), which is kept as a file of its own, named by its digest, in `folder`.
def read_manifest(cursor: str | None, folder: Path) -> dict[str, TrackedFile]:
    """The files a cursor tracks: its manifest's, or those a cursor of the earlier form held
    itself (a dict by path). A manifest gone (a folder wiped) tracks none, as a first look."""
    saved = json.loads(cursor or "{}")
    if isinstance(saved.get("manifest"), str):
        path = folder / f"{saved['manifest']}.json"
        saved = json.loads(path.read_text()) if path.is_file() else {}
    return {path: TrackedFile.model_validate(item) for path, item in saved.items()}


def write_manifest(state: dict[str, TrackedFile], folder: Path, cursor: str | None) -> str:
    """Keep `state` as a manifest in `folder` and return the cursor that names it. The manifest
    `cursor` names stays until the next one is written: a tick whose cursor Dagster does not
    store leaves the earlier cursor pointing at a manifest that is still there."""
    text = json.dumps({p: t.model_dump() for p, t in state.items()}, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{digest}.json"
    if not target.is_file():
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text)
        partial.replace(target)
    previous = json.loads(cursor or "{}").get("manifest")
    for stale in folder.glob("*.json"):
        if stale.stem not in (digest, previous):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
    return json.dumps({"files": len(state), "manifest": digest})
