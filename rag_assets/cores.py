"""How many cores this process may use, for the parse workers' and ONNX Runtime's defaults."""

from __future__ import annotations

import math
import os
from pathlib import Path


def available_cores(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int:
    """Cores this process may use: its CPU affinity, capped by a container's CPU quota.

    A pod limited to 2 CPUs on a 32-core node sees 32 in its affinity; a worker per core
    there would hold 32 layout models (~0.5 GiB each) and share 2 CPUs.
    """
    cores = len(os.sched_getaffinity(0))
    quota = _cpu_quota(cgroup_root)
    return max(1, min(cores, quota)) if quota else cores


def _cpu_quota(root: Path) -> int | None:
    """CPUs the cgroup's quota allows, rounded up (v2 `cpu.max`, or v1's CFS files); None: no quota."""
    try:
        if (root / "cpu.max").is_file():
            quota, period = (root / "cpu.max").read_text().split()[:2]
        else:
            quota = (root / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (root / "cpu" / "cpu.cfs_period_us").read_text().strip()
        if quota in ("max", "-1"):
            return None
        return math.ceil(int(quota) / int(period))
    except (OSError, ValueError):
        return None
