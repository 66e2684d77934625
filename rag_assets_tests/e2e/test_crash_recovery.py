"""kill -9 of a real `rag-assets ingest` at every step, and waits for pool slots held by others.

Each crash leaves what a real one does (a run stuck STARTED holding its pool slots, half-written
files, a Milvus Lite file closed uncleanly); the next ingest must clear it and give the rows
of a clean run.
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterRun, DagsterRunStatus
from dagster._core.utils import make_new_run_id

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.recovery import HOST_TAG, PID_TAG, wait_for_pools
from rag_assets.index.store import MilvusIndex
from rag_assets.instance import open_instance
from rag_assets.runner.ingest import ingest, place_in_inbox
from rag_assets.settings import Settings
from rag_assets.sources.keys import partition_key_for
from rag_assets_tests.conftest import REPO_ROOT

CLI = str(Path(sys.executable).with_name("rag-assets"))
DOCUMENT = """# Field notes

## Pumps

The pump station lifts water forty metres to the reservoir on the ridge, day and night.

## Valves

Each valve is checked monthly and its seal replaced every two years by the crew.

## Filters

Sand filters are backwashed when the pressure drop across the bed exceeds half a bar.
"""


def rows_in_index(data_dir: Path) -> list[dict]:
    with MilvusIndex(str(data_dir / "milvus.db")) as index:
        [collection] = index.list_collections()
        rows = index.scan(
            collection, ["chunk_id", "doc_id", "text", "chunk_index", "header_path", "metadata"]
        )
    return sorted(rows, key=lambda r: r["chunk_id"])


def ingest_to_the_end(data_dir: Path, document: Path) -> subprocess.CompletedProcess:
    """`rag-assets ingest` in its own process, required to succeed."""
    done = subprocess.run(
        [CLI, "ingest", "--data-dir", str(data_dir), str(document)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def started_steps(instance, run_id: str) -> set[str]:
    return {e.step_key for e in instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)}


def kill_at_step(data_dir: Path, document: Path, step: str) -> str:
    """Start an ingest, kill -9 it as soon as its run starts `step`; the run's id."""
    instance = open_instance(Settings.from_env(data_dir))
    known = {r.run_id for r in instance.get_runs()}
    child = subprocess.Popen(
        [CLI, "ingest", "--data-dir", str(data_dir), str(document)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while child.poll() is None:
            runs = [r for r in instance.get_runs() if r.run_id not in known]
            if runs and step in started_steps(instance, runs[0].run_id):
                os.kill(child.pid, signal.SIGKILL)
                child.wait()
                return runs[0].run_id
            time.sleep(0.05)
    finally:
        if child.poll() is None:
            child.kill()
    pytest.fail(f"the ingest ended (rc {child.returncode}) before step {step} started")


@pytest.mark.slow
def test_kill_9_at_every_step_then_a_rerun_gives_the_rows_of_a_clean_run(tmp_path):
    document = tmp_path / "notes.md"
    document.write_text(DOCUMENT)
    clean = tmp_path / "clean"
    assert all(o.success for o in ingest(Settings.from_env(clean), [document]))
    expected = rows_in_index(clean)
    assert expected

    # One data folder: each ingest after a crash is itself killed at the next step, so every
    # step's crash is followed by a run that has to get past what it left.
    crashed = tmp_path / "crashed"
    killed = [kill_at_step(crashed, document, step) for step in PIPELINE]
    rerun = ingest_to_the_end(crashed, document)
    assert "ok     notes.md" in rerun.stdout
    assert rows_in_index(crashed) == expected

    instance = open_instance(Settings.from_env(crashed))
    for run_id in killed:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
    assert instance.event_log_storage.get_concurrency_run_ids() == set()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_wait_for_a_pool_slot_is_said_sleeps_and_ends_on_a_signal(tmp_path, stop):
    document = tmp_path / "notes.md"
    document.write_text(DOCUMENT)
    data_dir = tmp_path / "data"
    instance = open_instance(Settings.from_env(data_dir))
    # A live run of another process holds the milvus slot.
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    run = instance.add_run(
        DagsterRun(
            job_name="ingest_documents",
            run_id=make_new_run_id(),
            status=DagsterRunStatus.STARTED,
            tags={PID_TAG: str(holder.pid), HOST_TAG: socket.gethostname()},
        )
    )
    instance.event_log_storage.initialize_concurrency_limit_to_default("milvus")
    claim = instance.event_log_storage.claim_concurrency_slot("milvus", run.run_id, "vector_index")
    assert claim.is_claimed
    waiting = subprocess.Popen(
        [CLI, "ingest", "--data-dir", str(data_dir), str(document)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in waiting.stderr], daemon=True).start()
    try:
        deadline = time.monotonic() + 600
        said = ""
        while "waiting for a slot of pool milvus" not in said:
            try:
                said = lines.get(timeout=1)
            except queue.Empty:
                assert waiting.poll() is None, "the ingest ended without waiting"
                assert time.monotonic() < deadline, "no wait was said"
        assert f"held by run {run.run_id[:8]} (ingest_documents" in said
        assert f"pid {holder.pid}" in said
        cpu = _cpu_seconds(waiting.pid)
        time.sleep(5)
        assert _cpu_seconds(waiting.pid) - cpu < 1.0  # sleeps, never spins
        waiting.send_signal(stop)
        # Stopped cleanly, with the shell's status for the signal and no traceback.
        assert waiting.wait(timeout=15) == 128 + stop
        assert "Traceback" not in "".join(lines.queue)
    finally:
        if waiting.poll() is None:
            waiting.kill()
        holder.kill()
        holder.wait()

    # The holder's process is gone: its run is failed and its slot freed before anyone waits.
    wait_for_pools(instance, ["milvus"], poll_s=0.1)
    assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE
    assert instance.event_log_storage.get_concurrency_run_ids() == set()


def _launch(instance, workspace, job_name: str, partition_key: str) -> DagsterRun:
    """Create and launch a run as the daemon does for the UI, a sensor or a schedule: through the
    instance's run launcher, which asks the code server to start a run worker process."""
    from dagster._core.definitions.selector import JobSubsetSelector

    location = workspace.get_code_location("rag_assets")
    (repository,) = location.get_repositories().values()
    job = location.get_job(JobSubsetSelector("rag_assets", repository.name, job_name, None))
    plan = location.get_execution_plan(job, {}, None, None, instance).execution_plan_snapshot
    run = instance.create_run(
        job_name=job_name,
        run_id=None,
        run_config={},
        resolved_op_selection=None,
        step_keys_to_execute=plan.step_keys_to_execute,
        op_selection=None,
        status=None,
        root_run_id=None,
        parent_run_id=None,
        tags={**job.tags, "dagster/partition": partition_key},
        job_snapshot=job.job_snapshot,
        execution_plan_snapshot=plan,
        parent_job_snapshot=job.parent_job_snapshot,
        remote_job_origin=job.get_remote_origin(),
        job_code_origin=job.get_python_origin(),
        asset_selection=None,
        asset_check_selection=None,
        asset_graph=repository.asset_graph,
    )
    return instance.launch_run(run.run_id, workspace)


def _worker_pid(instance, run_id: str) -> int | None:
    """The run worker's pid, from Dagster's own "Started process for run" event."""
    for event in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        pid = event.dagster_event.engine_event_data.metadata.get("pid")
        if pid is not None:
            return int(pid.value)
    return None


@pytest.mark.slow
def test_a_launched_run_killed_with_its_code_server_is_failed_and_its_slots_freed(
    tmp_path, monkeypatch
):
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import ModuleTarget

    document = tmp_path / "notes.md"
    document.write_text(DOCUMENT)
    data_dir = tmp_path / "data"
    monkeypatch.setenv("RAG_ASSETS_DATA_DIR", str(data_dir))  # read by the code server
    settings = Settings.from_env(data_dir)
    (relative_path,), _ = place_in_inbox([document], settings.inbox_dir)
    key = partition_key_for(relative_path)
    instance = open_instance(settings)
    instance.add_dynamic_partitions(documents_partitions.name, [key])
    target = ModuleTarget("rag_assets.definitions", "defs", str(REPO_ROOT), "rag_assets")
    with WorkspaceProcessContext(instance, target) as process_context:
        run = _launch(instance, process_context.create_request_context(), "ingest_documents", key)
        deadline = time.monotonic() + 600
        # Until the run holds a pool slot (table_markdown's "llm" or vector_index's "milvus").
        while run.run_id not in instance.event_log_storage.get_concurrency_run_ids():
            assert not instance.get_run_by_id(run.run_id).is_finished, "the run ended"
            assert time.monotonic() < deadline, "the run never took a pool slot"
            time.sleep(0.1)
        worker = _worker_pid(instance, run.run_id)
        assert worker is not None
        assert instance.get_run_by_id(run.run_id).tags[PID_TAG] == str(worker)
        # Its code server dies first (as with `dagster dev` killed), so no one reports the run.
        server = int(Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(server, signal.SIGKILL)
        os.kill(worker, signal.SIGKILL)
    assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED

    rerun = ingest_to_the_end(data_dir, document)
    assert f"ok     {relative_path}" in rerun.stdout
    failed = instance.get_run_by_id(run.run_id)
    assert failed.status == DagsterRunStatus.FAILURE
    assert instance.event_log_storage.get_concurrency_run_ids() == set()


def test_the_daemons_recovery_sensor_fails_runs_whose_process_is_gone_and_frees_their_slots(
    tmp_path,
):
    from dagster import DefaultSensorStatus, build_sensor_context

    from rag_assets.defs.build import build_defs

    settings = Settings.from_env(tmp_path / "data")
    instance = open_instance(settings)
    # The daemon's own monitoring is on too: runs stuck starting, slots of ended runs.
    assert instance.run_monitoring_enabled
    assert instance.run_monitoring_settings["free_slots_after_run_end_seconds"] > 0
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        runs = {
            pid: instance.add_run(
                DagsterRun(
                    job_name="ingest_documents",
                    run_id=make_new_run_id(),
                    status=DagsterRunStatus.STARTED,
                    tags={PID_TAG: str(pid), HOST_TAG: socket.gethostname()},
                )
            )
            for pid in (gone.pid, live.pid)
        }
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default("milvus")
        assert storage.claim_concurrency_slot("milvus", runs[gone.pid].run_id, "vector_index")
        sensor = build_defs(settings).get_sensor_def("recovery_sensor")
        assert sensor.default_status == DefaultSensorStatus.RUNNING
        tick = sensor.evaluate_tick(build_sensor_context(instance=instance))
        assert (
            tick.skip_message == f"failed the runs whose process is gone: {runs[gone.pid].run_id}"
        )
        assert instance.get_run_by_id(runs[gone.pid].run_id).status == DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(runs[live.pid].run_id).status == DagsterRunStatus.STARTED
        assert storage.get_concurrency_run_ids() == set()
    finally:
        live.kill()
        live.wait()
