"""The Dagster instance under the data dir, shared by the CLI and `rag-assets ui`.

Two processes may start on one fresh data folder at once (two ingests, an ingest and the UI):
the first-time set-up (copying dagster.yaml, creating the SQLite storages and stamping their
schema) runs under a file lock, or one process dies on "table already exists" and the run
storage can end with two schema heads. Ingests take the whole folder, one at a time: a second
one waits and says who holds it. File locks (flock) are released by the kernel when their
process dies, so kill -9 never leaves a folder held.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from filelock import FileLock, Timeout

from rag_assets.interrupts import interruptible
from rag_assets.settings import Settings

logger = logging.getLogger(__name__)

# The repository's instance config (queued runs, pools); absent in a non-editable install.
REPO_INSTANCE_YAML = Path(__file__).resolve().parents[1] / "dagster.yaml"
SETUP_LOCK = ".setup.lock"
INGEST_LOCK = ".ingest.lock"
INGEST_OWNER = ".ingest.owner"  # who holds INGEST_LOCK, for the waiting process's message
WAIT_POLL_S = 2.0
# The folder's event log storage (defs/event_log_storage.py), named in its dagster.yaml by the
# block under this line, which is rewritten when the folder moves (Dagster takes the SQLite
# folder of a configured storage only as a path).
EVENT_LOG_MARK = "# rag-assets: this folder's event log (rewritten when the folder moves)"
EVENT_LOG_MODULE = "rag_assets.defs.event_log_storage"
EVENT_LOG_CLASS = "DocumentsEventLogStorage"
# dagster.yaml keys that put storage elsewhere than the folder's SQLite files.
STORAGE_KEYS = ("storage", "run_storage", "event_log_storage", "schedule_storage")


def _setup_lock(home: Path) -> FileLock:
    home.mkdir(parents=True, exist_ok=True)
    return FileLock(home / SETUP_LOCK)


def ensure_dagster_home(settings: Settings) -> Path:
    home = settings.dagster_home
    with _setup_lock(home):
        target = home / "dagster.yaml"
        if not target.exists() and REPO_INSTANCE_YAML.is_file():
            shutil.copyfile(REPO_INSTANCE_YAML, target)
        text = target.read_text() if target.exists() else ""
        configured = _with_event_log_storage(text, home, settings.inbox_dir)
        if configured != text:
            target.write_text(configured)
    return home


def storage_elsewhere(config: object) -> bool:
    """Whether an instance config (dagster.yaml, loaded) keeps its storage off the folder's own
    SQLite files: a server, or storage classes of its own."""
    if not isinstance(config, dict):
        return False
    event_log = config.get("event_log_storage")
    ours = isinstance(event_log, dict) and event_log.get("module") == EVENT_LOG_MODULE
    return any(key in config for key in STORAGE_KEYS if not (ours and key == "event_log_storage"))


def _with_event_log_storage(text: str, home: Path, inbox: Path) -> str:
    """The instance config naming the folder's event log storage, unless it names storage of
    its own (kept as written)."""

    config = yaml.safe_load(text) or {}
    event_log = config.get("event_log_storage") if isinstance(config, dict) else None
    if storage_elsewhere(config) or (event_log and EVENT_LOG_MARK not in text):
        return text
    head = text.split(EVENT_LOG_MARK)[0].rstrip("\n")
    block = "\n".join(
        [
            EVENT_LOG_MARK,
            "event_log_storage:",
            f"  module: {EVENT_LOG_MODULE}",
            f"  class: {EVENT_LOG_CLASS}",
            "  config:",
            f"    base_dir: {json.dumps(str(home.resolve() / 'history' / 'runs'))}",
            f"    inbox_dir: {json.dumps(str(inbox.resolve()))}",
            "",
        ]
    )
    return f"{head}\n\n{block}" if head else block


def open_instance(settings: Settings):
    # Dagster takes over a second to load: an unchanged ingest holds the data folder without it.
    from dagster import DagsterInstance

    home = ensure_dagster_home(settings)
    with _setup_lock(home):
        # Builds the run, event log and schedule storages, creating their tables when new.
        return DagsterInstance.from_config(str(home))


def process_alive(pid: int) -> bool:
    """Whether `pid` runs. A zombie has ended: its exit only waits to be collected by a parent
    that may never do so (a run's process whose code server was killed with it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    try:
        # /proc/<pid>/stat: "pid (command) state ...", the command may hold spaces and parens.
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: signal 0 is all there is
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def owner_line() -> str:
    return f"ingest pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%H:%M:%S')}"


@contextmanager
def hold_data_folder(data_dir: Path, poll_s: float = WAIT_POLL_S) -> Iterator[None]:
    """Hold the data folder for one ingest. A second ingest sleeps until the first ends, saying
    at INFO which process holds it; SIGINT and SIGTERM end the wait as usual."""
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(data_dir / INGEST_LOCK)
    owner_file = data_dir / INGEST_OWNER
    announced = ""
    while True:
        try:
            with interruptible():
                lock.acquire(timeout=poll_s)
            break
        except Timeout:
            owner = owner_file.read_text() if owner_file.exists() else "another ingest"
            if owner != announced:
                logger.info(
                    "waiting for the data folder %s: %s holds it (one ingest at a time)",
                    data_dir,
                    owner,
                )
                announced = owner
    try:
        owner_file.write_text(owner_line())
        yield
    finally:
        lock.release()
