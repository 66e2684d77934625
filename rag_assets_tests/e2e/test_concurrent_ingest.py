"""Two processes on one fresh data folder: set-up, ingests, the Milvus Lite file, temp files."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from dagster import DagsterRunStatus
from upath import UPath

from rag_assets.defs.io_managers import PydanticJsonIOManager
from rag_assets.index.lite import LiteHold
from rag_assets.index.rows import IndexReport
from rag_assets.index.store import MilvusIndex
from rag_assets.instance import open_instance
from rag_assets.settings import Settings

CLI = str(Path(sys.executable).with_name("rag-assets"))


@pytest.mark.slow
def test_two_ingests_into_a_fresh_data_folder_at_once(tmp_path):
    docs = []
    for name, topic in [("pumps.md", "pump station"), ("valves.md", "valve seals")]:
        doc = tmp_path / name
        doc.write_text(f"# {topic.title()}\n\nNotes on the {topic}: checked every month.\n")
        docs.append(doc)
    data_dir = tmp_path / "data"
    ingests = [
        subprocess.Popen(
            [CLI, "ingest", "--data-dir", str(data_dir), str(doc)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for doc in docs
    ]
    results = [p.communicate(timeout=900) for p in ingests]
    for process, (out, err) in zip(ingests, results, strict=True):
        assert process.returncode == 0, out + err
    # The second to arrive waited for the first, and said whom it waited for.
    waited = [err for _, err in results if "waiting for the data folder" in err]
    assert len(waited) == 1
    assert "holds it (one ingest at a time)" in waited[0]
    assert "ingest pid " in waited[0]

    instance = open_instance(Settings.from_env(data_dir))
    runs = instance.get_runs()
    assert len(runs) == 4  # each document's landing part, then its checked part
    assert {r.status for r in runs} == {DagsterRunStatus.SUCCESS}
    with MilvusIndex(str(data_dir / "milvus.db")) as index:
        [collection] = index.list_collections()
        sources = {r["source_path"] for r in index.scan(collection, ["source_path"])}
    assert sources == {"pumps.md", "valves.md"}


OPEN = """
import sys, time
from pathlib import Path
from rag_assets.instance import open_instance
from rag_assets.settings import Settings
start = Path(sys.argv[2])
while not start.exists():
    time.sleep(0.001)
instance = open_instance(Settings(data_dir=Path(sys.argv[1])))
print(len(instance.get_runs()), instance.event_log_storage.get_concurrency_run_ids())
"""


@pytest.mark.slow
def test_processes_setting_up_one_instance_at_once_all_succeed(tmp_path):
    data_dir, start = tmp_path / "data", tmp_path / "start"
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN, str(data_dir), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    start.touch()  # released together, so their first-time set-ups collide
    for opener in openers:
        out, err = opener.communicate(timeout=300)
        assert opener.returncode == 0, err
        assert out.strip() == "0 set()"


HOLD = """
import sys
from rag_assets.index.lite import LiteHold
from rag_assets.index.store import MilvusIndex
with MilvusIndex(sys.argv[1]):
    print("holding", flush=True)
    sys.stdin.readline()
"""
WAIT = """
import logging, sys
from rag_assets.index.lite import LiteHold
from rag_assets.index.store import MilvusIndex
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
with MilvusIndex(sys.argv[1]) as index:
    print("opened", index.list_collections(), flush=True)
"""


@pytest.mark.slow
def test_a_second_process_waits_for_the_milvus_lite_file_and_says_so(tmp_path):
    uri = str(tmp_path / "milvus.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    waiter = None
    try:
        assert holder.stdout.readline().strip() == "holding"
        waiter = subprocess.Popen(
            [sys.executable, "-c", WAIT, uri], stdout=subprocess.PIPE, text=True
        )
        # Without the lock the waiter would retry for ~10 s and fail "another process holds it".
        line = waiter.stdout.readline()
        while line and "Milvus Lite" not in line:
            line = waiter.stdout.readline()
        assert "waiting for the Milvus Lite file" in line
        assert waiter.poll() is None
        holder.communicate("\n", timeout=60)
        out, _ = waiter.communicate(timeout=120)
        assert waiter.returncode == 0
        assert "opened []" in out
    finally:
        for process in (holder, waiter):
            if process is not None and process.poll() is None:
                process.kill()


def test_writers_of_one_partition_never_share_a_temporary_file(tmp_path):
    manager = PydanticJsonIOManager(base_path=UPath(tmp_path))
    path = UPath(tmp_path / "doc-0123abcd.json")
    errors: list[BaseException] = []

    def write(rows: int) -> None:
        report = IndexReport(
            doc_id="doc",
            collection="c",
            uri="u",
            model="m",
            dimension=1,
            rows=rows,
            upserted=rows,
            deleted_stale=0,
        )
        try:
            for _ in range(200):
                manager.dump_to_path(None, report, path)
        except BaseException as error:  # noqa: BLE001 - collected for the assertion below
            errors.append(error)

    writers = [threading.Thread(target=write, args=(n,)) for n in (1, 2)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert errors == []
    assert IndexReport.model_validate_json(path.read_text()).rows in (1, 2)
    assert list(tmp_path.iterdir()) == [path]


def _engine_running(uri: str) -> bool:
    from milvus_lite.server_manager import server_manager_instance

    return str(Path(uri).resolve()) in server_manager_instance._servers


def test_a_hold_keeps_the_engine_running_between_writes(tmp_path):
    uri = str(tmp_path / "milvus.db")
    with LiteHold(uri) as engine:
        engine.hold()
        for _ in range(2):
            with MilvusIndex(uri) as write:
                write.ensure_collection("m", 4, False)
            # Without the hold, closing the write stops the engine: the next start costs ~0.5 s.
            assert _engine_running(uri)
    assert not _engine_running(uri)


@pytest.mark.slow
def test_a_hold_steps_aside_for_a_process_waiting_for_the_file(tmp_path):
    uri = str(tmp_path / "milvus.db")
    with LiteHold(uri) as engine:
        engine.hold()
        engine.step_aside_if_wanted()  # nobody waits: the engine keeps running
        assert _engine_running(uri)
        waiter = subprocess.Popen(
            [sys.executable, "-c", WAIT, uri], stdout=subprocess.PIPE, text=True
        )
        try:
            line = waiter.stdout.readline()
            while line and "Milvus Lite" not in line:
                line = waiter.stdout.readline()
            assert "waiting for the Milvus Lite file" in line
            while not Path(f"{Path(uri).resolve()}.waiting").exists():
                assert waiter.poll() is None
                time.sleep(0.05)
            engine.step_aside_if_wanted()
            assert not _engine_running(uri)
            # Still inside the hold: the waiter opens the file now, not when the hold ends.
            out, _ = waiter.communicate(timeout=120)
            assert waiter.returncode == 0 and "opened []" in out
        finally:
            if waiter.poll() is None:
                waiter.kill()


def test_an_engine_started_in_the_background_is_the_one_hold_keeps(tmp_path):
    uri = str(tmp_path / "milvus.db")
    with LiteHold(uri) as engine:
        engine.start_in_background()
        starting = engine._starting
        assert starting is not None and starting.name == "milvus-lite-start"
        engine.hold()  # waits for the start instead of starting a second engine
        assert not starting.is_alive() and _engine_running(uri)
        with MilvusIndex(uri) as write:
            write.ensure_collection("m", 4, False)
        assert _engine_running(uri)
    assert not _engine_running(uri)
    with LiteHold(uri) as engine:  # started and closed unused: the file is free again
        engine.start_in_background()
    with MilvusIndex(uri) as read:
        assert read.list_collections()


@pytest.mark.slow
def test_a_background_start_leaves_a_file_another_process_holds_to_hold(tmp_path):
    uri = str(tmp_path / "milvus.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        with LiteHold(uri) as engine:
            engine.start_in_background()
            # No thread waits on the other process: a stop signal could not end that wait.
            assert engine._starting is None
            holder.communicate("\n", timeout=60)
            engine.hold()
            assert _engine_running(uri)
    finally:
        if holder.poll() is None:
            holder.kill()
