"""Milvus Lite: a single file, served by its engine to one process at a time.

Milvus Lite here is milvus-lite 2.5: Milvus' own C++ engine (segcore, knowhere, tantivy for
BM25), run by pymilvus as a child process of the one process that holds the file. milvus-lite 3
reimplements the engine in Python, and its searches walk every row in Python per query: 1.1 s
hybrid p95 at 100,000 rows against 47 ms in the C++ engine (`bench/latency.py`), and 20-40
minutes against 74 s to index those rows.

A process claims the file with a file lock (`<file>.lock`) before it starts the engine; another
rag_assets process waits for it. Within a process, every open index on the file shares one engine,
which stops (and frees the file) when the last of them closes.
"""

from __future__ import annotations

import fcntl
import logging
import sqlite3
import threading
import time
import warnings
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from rag_assets.errors import ConfigurationError
from rag_assets.interrupts import children_deaf_to_stop_signals, interruptible

logger = logging.getLogger(__name__)
# milvus-lite 2.5 reads its own version through pkg_resources, which warns on every import.
warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning, "milvus_lite")

OPEN_DELAYS = (0.5, 1.0, 2.0, 4.0)  # retries after the first attempt: about 10 s in all
LITE_WAIT_S = 600.0  # how long another rag_assets process's use of the Lite file is waited for
# The engine is a local socket: pymilvus' keepalive pings (every 10 s, even between calls) only
# make it answer "too_many_pings" with a GOAWAY that gRPC logs as an error on stderr.
LITE_GRPC_OPTIONS = {"grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": 0}
WAITING_TOUCH_S = 1.0  # a waiting process renews `<file>.waiting` this often

_lite_lock = threading.Lock()
_lite_users: dict[str, int] = {}  # Lite file -> open clients on it in this process
_lite_holds: dict[str, Any] = {}  # Lite file -> this process's FileLock on it


class _NoLiteSnapshotWarning(logging.Filter):
    """Milvus Lite gives a query iterator no MVCC timestamp; pymilvus then warns on every scan
    and reads at the client's clock, which is exact for a file only this process writes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to get mvccTs" not in record.getMessage()


_lite_snapshot_filter = _NoLiteSnapshotWarning()


class IndexUnavailableError(RuntimeError):
    """The index could not be opened (for Milvus Lite: another process holds the file)."""


def lite_path(uri: str) -> str | None:
    """The Milvus Lite file a uri names, resolved; None for a server address."""
    # pymilvus treats a uri ending in .db as a Milvus Lite folder.
    return str(Path(uri).resolve()) if uri.endswith(".db") else None


def _release_if_unused(path: str) -> None:
    """Let go of the file when no client of this process uses it."""
    with _lite_lock:
        if not _lite_users.get(path) and path in _lite_holds:
            _lite_holds.pop(path).release()


def open_lite(path: str) -> Any:
    """A client of this process's engine on the file, started (with the file held) if need be."""
    # pymilvus takes over a second to load: only when an index is opened.
    import grpc
    from pymilvus import MilvusClient
    from pymilvus.client.types import Status
    from pymilvus.exceptions import ConnectionConfigException, MilvusException

    if Path(path).is_dir():
        # milvus-lite 2.5 keeps one file; a folder is Milvus Lite 3's, which it cannot read.
        raise ConfigurationError(
            f"{path} is a Milvus Lite 3 folder; this engine keeps a single file: "
            f"move it aside and re-index the documents"
        )
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with _lite_lock:
        if path not in _lite_holds:
            _lite_holds[path] = _hold_lite_file(path)
    started = time.monotonic()
    attempts = len(OPEN_DELAYS) + 1
    for attempt in range(attempts):
        try:
            _check_engine_free(path)
            # The engine is a child process: Ctrl-C in the terminal must not stop it under
            # an ingest that still has a document to undo (rag_assets.interrupts).
            with children_deaf_to_stop_signals():
                client = MilvusClient(uri=path, grpc_options=LITE_GRPC_OPTIONS)
            break
        except (ConnectionConfigException, grpc.RpcError, MilvusException) as exc:
            # milvus-lite takes its engine for started after 0.5 s; on a busy machine the
            # engine's socket may not exist yet (an RpcError, or pymilvus' "Fail connecting
            # to server"), and a later attempt finds it.
            connect_failed = getattr(exc, "code", None) == Status.CONNECT_FAILED
            if isinstance(exc, MilvusException) and not (
                connect_failed or isinstance(exc, ConnectionConfigException)
            ):
                _release_if_unused(path)
                raise
            if attempt == attempts - 1:
                _release_if_unused(path)
                raise IndexUnavailableError(
                    f"could not open the Milvus Lite file {path} after {attempts} "
                    f"attempts over {time.monotonic() - started:.0f} s: most likely another "
                    f"process holds it (Milvus Lite allows one process at a time). Run the "
                    f"steps that touch it one at a time, or use a Milvus server uri."
                ) from exc
            delay = OPEN_DELAYS[attempt]
            logger.info("Milvus Lite file %s busy, retrying in %.1f s", path, delay)
            with interruptible():
                time.sleep(delay)
    with _lite_lock:
        _lite_users[path] = _lite_users.get(path, 0) + 1
    # addFilter ignores a filter already there.
    logging.getLogger("pymilvus.client.iterator.query_iterator").addFilter(_lite_snapshot_filter)
    return client


def release_lite(path: str) -> None:
    """After a client on the file closed: stop the engine and free the file once no one here
    uses it. MilvusClient.close() alone keeps the engine, and with it the file lock, until the
    process exits; other processes could not open the file meanwhile."""
    # pymilvus takes over a second to load: only when an index is opened.
    from milvus_lite.server_manager import server_manager_instance

    with _lite_lock:
        users = _lite_users.get(path, 1) - 1
        if users > 0:
            _lite_users[path] = users
            return
        _lite_users.pop(path, None)
        server_manager_instance.release_server(path)
        _lite_holds.pop(path).release()


def _hold_lite_file(path: str) -> Any:
    """This process's claim on a Milvus Lite file, which serves one process at a time: another
    rag_assets process (an ingest, a query, the UI) waits for it and says so at INFO. A file
    lock, so a killed holder frees it."""

    lock = FileLock(f"{path}.lock", thread_local=False)
    try:
        lock.acquire(timeout=0)
        return lock
    except Timeout:
        logger.info("waiting for the Milvus Lite file %s: another process is using it", path)
    waiting = Path(f"{path}.waiting")
    deadline = time.monotonic() + LITE_WAIT_S
    while time.monotonic() < deadline:
        waiting.touch()  # a holder that keeps the file between writes steps aside (LiteHold)
        try:
            with interruptible():
                lock.acquire(timeout=WAITING_TOUCH_S)
            return lock
        except Timeout:
            continue
    raise IndexUnavailableError(
        f"another process has held the Milvus Lite file {path} for over "
        f"{LITE_WAIT_S:.0f} s (Milvus Lite serves one process at a time); "
        f"use a Milvus server uri to share the index."
    )


def _claim_lite_file_now(path: str) -> bool:
    """This process's claim on the file if it can be had without waiting (or is had already)."""

    with _lite_lock:
        if path in _lite_holds:
            return True
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(f"{path}.lock", thread_local=False)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return False
        _lite_holds[path] = lock
        return True


def _check_engine_free(path: str) -> None:
    """Refuse a Lite file another process's engine holds, without asking milvus-lite to open it.

    milvus-lite 2.5's refused open unlinks the holder's lock file (`.<name>.lock`), so the next
    open starts a second engine on the same file, whose writes the first never sees. No probe
    when this process runs the engine: closing the probe would drop this process's own lock
    (POSIX record locks), and the engine stops when its lock goes.
    """

    # pymilvus takes over a second to load: only when an index is opened.
    from milvus_lite.server_manager import server_manager_instance
    from pymilvus.exceptions import ConnectionConfigException

    if path in server_manager_instance._servers:
        return
    lock_path = Path(path).parent / f".{Path(path).name}.lock"
    if not lock_path.exists():
        return
    with lock_path.open("a") as probe:
        try:
            fcntl.lockf(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise ConnectionConfigException(message=f"{path} is held by another process") from exc
        fcntl.lockf(probe, fcntl.LOCK_UN)


def purge_deleted_rows(uri: str) -> bool:
    """Rewrite a Milvus Lite file so deleted rows leave the disk; False when not done here.

    The engine keeps rows in SQLite, whose deletes leave the bytes in free pages until the file
    is rewritten: a removed document's text would stay readable in `milvus.db`. VACUUM runs with
    the file held and no engine running (it stops when its last user here closes). A server
    compacts its segments on its own schedule.
    """
    if not uri.endswith(".db") or not Path(uri).is_file():
        return False
    path = str(Path(uri).resolve())
    with _lite_lock:
        if _lite_users.get(path):
            return False  # this process's engine still has the file open
    hold = _hold_lite_file(path)
    try:
        with closing(sqlite3.connect(path)) as db:
            db.execute("VACUUM")
    finally:
        hold.release()
    return True


class LiteHold:
    """Keeps this process's Milvus Lite engine running between index writes, since each start
    costs about half a second, and stops it whenever another process is waiting for the file.

    `hold()` before work that writes the index, `step_aside_if_wanted()` after it; a no-op for a
    server uri. The writes open their own `MilvusIndex`, which shares the running engine.
    """

    def __init__(self, uri: str) -> None:
        self._path = lite_path(uri)
        self._client: Any = None
        self._starting: threading.Thread | None = None
        self._start_failed: BaseException | None = None

    def start_in_background(self) -> None:
        """Start the engine on a thread, so that its start (about a second) overlaps the first
        documents' parse; `hold()` waits for it. Only when the file is free now: waiting for
        another process is left to `hold()`, where a stop signal ends the wait."""
        if not self._path or self._client is not None or self._starting is not None:
            return
        if not _claim_lite_file_now(self._path):
            return
        self._starting = threading.Thread(target=self._start, name="milvus-lite-start")
        self._starting.start()

    def _start(self) -> None:
        try:
            self._client = open_lite(self._path)
        except BaseException as exc:  # re-raised by hold(), in the thread that needs the engine
            self._start_failed = exc

    def _join_start(self) -> None:
        if self._starting is not None:
            self._starting.join()
            self._starting = None
        if (failed := self._start_failed) is not None:
            self._start_failed = None
            raise failed

    def hold(self) -> None:
        self._join_start()
        if self._path and self._client is None:
            self._client = open_lite(self._path)

    def step_aside_if_wanted(self) -> None:
        if self._client is None:
            return
        waiting = Path(f"{self._path}.waiting")
        try:
            wanted = time.time() - waiting.stat().st_mtime < 3 * WAITING_TOUCH_S
        except FileNotFoundError:
            wanted = False
        if wanted:
            self.close()

    def close(self) -> None:
        with suppress(Exception):  # a start that failed leaves nothing to close
            self._join_start()
        if self._client is not None:
            self._client.close()
            self._client = None
            release_lite(self._path)

    def __enter__(self) -> LiteHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
