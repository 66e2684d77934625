"""Runs whose process died (kill -9, a crash, a power cut) and the pool slots they hold.

A run killed mid-step stays STARTED and keeps its pool slot; the next run needing that pool
would wait for it forever. Every run names the process executing it and its host in tags: the
CLI's runs from the start, runs launched by the UI, a sensor or a schedule as their resources
are set up in the run worker. Dagster itself fails a launched run whose worker dies while the
code server that started it lives on, but not one whose code server died with it (`dagster dev`
killed, the machine's OOM killer), and its daemon's run monitoring cannot check a worker of the
DefaultRunLauncher. So before the CLI starts a run, and every minute in the daemon
(`recovery_sensor`, defs/sensors.py), this host's runs whose process is gone are marked failed and every slot
held by a run that is not running any more is freed. Waiting for a slot another live run holds
is logged at INFO with the pool and the run, and sleeps, so SIGINT and SIGTERM end it.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterable

from dagster import DagsterInstance, DagsterRunStatus, InitResourceContext, RunsFilter

from rag_assets.instance import process_alive
from rag_assets.interrupts import interruptible

logger = logging.getLogger(__name__)

# Dagster's UI and GraphQL leave out tags under `.dagster/`: these serve recovery, not a person.
PID_TAG = ".dagster/rag_assets/pid"
HOST_TAG = ".dagster/rag_assets/host"
UNFINISHED = [
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]
POLL_S = 2.0
REMIND_S = 60.0


def process_tags() -> dict[str, str]:
    """Tags naming this process on the runs it executes."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def tag_run_with_process(context: InitResourceContext) -> None:
    """Tag the run being set up with this process, the one executing its steps (the
    in-process executor). Re-executions inherit their parent's tags, so they are overwritten."""
    run, instance = context.run, context.instance
    tags = process_tags()
    if run is None or instance is None or all(run.tags.get(k) == v for k, v in tags.items()):
        return
    instance.add_run_tags(run.run_id, tags)


def _process_gone(tags: dict[str, str]) -> bool:
    # Only a process on this host can be looked up; elsewhere the daemon's monitoring decides.
    if tags.get(HOST_TAG) != socket.gethostname() or not tags.get(PID_TAG, "").isdigit():
        return False
    pid = int(tags[PID_TAG])
    return pid != os.getpid() and not process_alive(pid)


def recover_dead_runs(instance: DagsterInstance) -> list[str]:
    """Mark this host's unfinished runs whose process is gone as failed, then free the pool
    slots of every run that is not unfinished (marking a run failed leaves its slots taken)."""
    recovered = []
    for run in instance.get_runs(
        RunsFilter(statuses=UNFINISHED, tags={HOST_TAG: socket.gethostname()})
    ):
        if _process_gone(run.tags):
            instance.report_run_failed(
                run, f"its process (pid {run.tags[PID_TAG]}) is gone: killed or crashed"
            )
            logger.info("run %s: process %s gone, marked failed", run.run_id, run.tags[PID_TAG])
            recovered.append(run.run_id)
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return recovered
    holders = storage.get_concurrency_run_ids()
    if holders:
        live = {
            r.run_id
            for r in instance.get_runs(RunsFilter(run_ids=list(holders), statuses=UNFINISHED))
        }
        for run_id in holders - live:
            storage.free_concurrency_slots_for_run(run_id)
            logger.info("freed the pool slots of run %s, which is not running", run_id)
    return recovered


def _describe(instance: DagsterInstance, run_ids: Iterable[str]) -> str:
    parts = []
    for run in instance.get_runs(RunsFilter(run_ids=sorted(run_ids))):
        where = f", pid {run.tags[PID_TAG]}" if PID_TAG in run.tags else ""
        partition = run.tags.get("dagster/partition", "")
        parts.append(f"run {run.run_id[:8]} ({run.job_name} {partition}{where})")
    return ", ".join(parts) or "a run"


def _busy(instance: DagsterInstance, pool: str) -> set[str]:
    """The runs ahead in `pool`: those holding all its slots, and those queued for one (they
    are served first). Empty when a run starting now would get a slot, or there is no limit."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    limit = info.limit if info.limit is not None else info.slot_count
    if not limit or (len(info.claimed_slots) < limit and not info.pending_steps):
        return set()
    return info.active_run_ids | {step.run_id for step in info.pending_steps}


def wait_for_pools(instance: DagsterInstance, pools: Iterable[str], poll_s: float = POLL_S) -> None:
    """Return once every pool has a free slot, recovering dead runs' slots on each look."""
    pools = sorted(set(pools))
    if not pools or not instance.event_log_storage.supports_global_concurrency_limits:
        return
    announced: dict[str, tuple[set[str], float]] = {}
    while True:
        recover_dead_runs(instance)
        busy = {pool: holders for pool in pools if (holders := _busy(instance, pool))}
        if not busy:
            return
        now = time.monotonic()
        for pool, holders in busy.items():
            seen, when = announced.get(pool, (set(), 0.0))
            if holders != seen or now - when >= REMIND_S:
                logger.info(
                    "waiting for a slot of pool %s: held by %s", pool, _describe(instance, holders)
                )
                announced[pool] = (holders, now)
        with interruptible():
            time.sleep(poll_s)
