"""The memory limit a parse worker runs under: RAG_ASSETS_PARSE_MEMORY_MB, or less where the
machine allows less.

A process may inherit a hard address-space limit (`ulimit -v`) or run in a cgroup with a memory
ceiling (a container). A worker cannot raise its limit above the inherited hard one (setrlimit
refuses, and the worker would die before its first parse), and a cgroup ends the whole process
group once its ceiling is passed, where the worker's own limit fails only the document. So a
worker takes the lowest of the three.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

MB = 2**20
# cgroup v1 says "no limit" with a number near 2**63.
_NO_CGROUP_LIMIT = 2**60
# A worker's interpreter, parsers and layout model take ~0.75 GB of address space before any
# parse: under this, no worker could start.
MIN_WORKER_MB = 1024.0


@dataclass(frozen=True)
class MemoryLimit:
    mb: float | None  # None: no limit
    setting: str  # the environment variable that sets it
    bound_by: str = ""  # what lowered it below the setting; "" when the setting holds

    def describe(self) -> str:
        """`7812 MB (the inherited address-space limit, ulimit -v; RAG_ASSETS_PARSE_MEMORY_MB
        asks for more)`."""
        if self.mb is None:
            return f"unlimited ({self.setting}=0)"
        if not self.bound_by:
            return f"{self.mb:,.0f} MB ({self.setting})"
        return f"{self.mb:,.0f} MB ({self.bound_by}; {self.setting} asks for more)"


def inherited_limits_mb() -> dict[str, float]:
    """What this process may take by the machine's limits, in MB, by what sets each."""
    limits: dict[str, float] = {}
    finite = [v for v in resource.getrlimit(resource.RLIMIT_AS) if v != resource.RLIM_INFINITY]
    if finite:
        limits["the inherited address-space limit, ulimit -v"] = min(finite) / MB
    cgroup = cgroup_memory_bytes()
    if cgroup is not None:
        limits["the memory limit of this process's cgroup"] = cgroup / MB
    return limits


def cgroup_memory_bytes(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The lowest memory ceiling of this process's cgroup (v2 `memory.max`, v1
    `memory.limit_in_bytes`, at the cgroup's own path and at the mount's root); None if none."""
    paths = {"/"}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers in ("", "memory"):
                paths.add(path)
    except (OSError, ValueError):
        pass
    found = []
    for path in paths:
        relative = path.lstrip("/")
        for candidate in (
            root / relative / "memory.max",
            root / "memory" / relative / "memory.limit_in_bytes",
        ):
            try:
                value = candidate.read_text().strip()
            except OSError:
                continue
            if value.isdigit() and int(value) < _NO_CGROUP_LIMIT:
                found.append(int(value))
    return min(found, default=None)


def worker_memory_limit(setting_mb: float | None, setting: str) -> MemoryLimit:
    """The lower of `setting_mb` (None: no limit asked) and the machine's limits."""
    lowest = min(inherited_limits_mb().items(), key=lambda item: item[1], default=None)
    if lowest is not None and (setting_mb is None or lowest[1] < setting_mb):
        return MemoryLimit(mb=lowest[1], setting=setting, bound_by=lowest[0])
    return MemoryLimit(mb=setting_mb, setting=setting)


def apply_limit(mb: float) -> None:
    """In a worker: cap its address space at `mb`, never above the hard limit it inherited."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = int(mb * MB)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
