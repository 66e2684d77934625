"""What changed in the inbox since the last look: the sensor's decisions, without Dagster."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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
