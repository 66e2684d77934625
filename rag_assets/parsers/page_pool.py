"""Worker processes that parse page ranges of PDFs, started once and kept while they are used.

They also run the whole-document parses of Docling and Unstructured under the document limits
(isolation.py).

A CLI ingest or a Dagster run parses its documents in one process, one after another; the
layout model (ONNX, ~0.2 CPU seconds a page) would keep one core busy and leave the other
idle. Here a PDF's pages are cut into contiguous ranges that spawned workers parse at the
same time, one model per worker with one ONNX thread each; the caller joins the ranges and
runs the whole-document passes itself. The workers pay their imports and model load once
(seconds) and serve every later document of the process; without a page time limit a
small PDF parsed on its own never starts them.
Each worker holds ~0.5 GiB, so workers left idle for RAG_ASSETS_PARSE_WORKERS_IDLE_S
seconds (default 60) are stopped, and the next long PDF starts them again.

A job may be given a time limit: a worker still on it then is killed (MuPDF can loop for ever
on a broken page, deaf to Ctrl-C), the pool is replaced, and the job is reported as TimedOut
while the others still run.

A caller that knows what comes next (an ingest of many files) may read ahead: submit a
document's ranges (a short PDF's as one range) before its run asks for them, so the workers
parse it while the run before it chunks, embeds and indexes on the main process. The run then
takes the results by key.

Each job reports how long it ran and how long its worker had sat idle before it was submitted
(worker_time.py): with the seconds the caller waited taking results, into the ledger open
around the caller's parse.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TypeVar

from rag_assets.errors import ConfigurationError
from rag_assets.parsers.layout_model import install_layout_model
from rag_assets.parsers.worker_memory import (
    MIN_WORKER_MB,
    MemoryLimit,
    apply_limit,
    worker_memory_limit,
)
from rag_assets.parsers.worker_time import JobTime, idle_before, open_ledger
from rag_assets.settings.processes import ParseWorkerSettings

logger = logging.getLogger(__name__)

# Below this many pages a PDF is one range: parsed in the calling process (starting the
# workers costs more than the second core would save, and a range of a few pages is mostly
# fixed costs), or by one worker when read ahead.
MIN_SPLIT_PAGES = 16
MIN_RANGE_PAGES = 4
# Several ranges per worker even out pages of unequal cost (tables against plain text).
RANGES_PER_WORKER = 4
# The workers parse at a lower CPU priority than the run they serve: reading ahead they fill the
# cores a run's own steps leave free (indexing, Dagster's writes, one-thread steps), and never
# slow those steps, which every document waits for.
WORKER_NICENESS = 10

_LIMITS = ParseWorkerSettings.model_fields
IDLE_SECONDS_ENV = ParseWorkerSettings.env_name("parse_workers_idle_s")
DEFAULT_IDLE_SECONDS = _LIMITS["parse_workers_idle_s"].default
PAGE_TIMEOUT_ENV = ParseWorkerSettings.env_name("parse_page_timeout_s")
DEFAULT_PAGE_TIMEOUT = _LIMITS["parse_page_timeout_s"].default
MEMORY_ENV = ParseWorkerSettings.env_name("parse_memory_mb")
DEFAULT_MEMORY_MB = _LIMITS["parse_memory_mb"].default

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_pool_workers = 0
_calls_in_flight = 0
_idle_timer: threading.Timer | None = None  # the clock started when the last call ended
_ahead: dict[Hashable, ReadAhead] = {}  # submitted ahead of their call, by the caller's key
_said: set[MemoryLimit] = set()  # the lowered limits already logged
# A worker's idle time counts from here on (an ingest's start): not the pause before it.
_idle_counted_from = 0.0
# In a worker: when it last became free (its model loaded, or its last job ended).
_free_since = 0.0

T = TypeVar("T")


class WorkerDied(RuntimeError):
    """A worker process ended while parsing (killed, out of memory, crashed in native code)."""


@dataclass(frozen=True)
class TimedOut:
    """In place of a job's result: the job ran over its time limit and its worker was killed."""

    seconds: float


@dataclass
class ReadAhead:
    """Jobs submitted before their call; they count as a call in flight until taken or dropped."""

    pool: ProcessPoolExecutor
    workers: int
    futures: list[Future]
    idle_seconds: float


def page_ranges(page_count: int, workers: int) -> list[range]:
    """Contiguous 0-based page ranges covering the document, in order, near-equal in size."""
    if workers < 2 or page_count < MIN_SPLIT_PAGES:
        return [range(page_count)]
    parts = min(workers * RANGES_PER_WORKER, page_count // MIN_RANGE_PAGES)
    size, extra = divmod(page_count, parts)
    ranges, start = [], 0
    for part in range(parts):
        stop = start + size + (1 if part < extra else 0)
        ranges.append(range(start, stop))
        start = stop
    return ranges


def run_in_workers(
    workers: int,
    task: Callable[..., T],
    jobs: Sequence[tuple[Any, ...]],
    ahead_key: Hashable | None = None,
    time_limits: Sequence[float] | None = None,
) -> list[T | TimedOut]:
    """`task(*job)` for every job in the shared pool, results in the jobs' order.

    With `ahead_key`, the results of the jobs submitted under that key by `read_ahead` are
    taken instead, when they were read by `workers` workers and all succeeded; otherwise
    (never submitted, a failure, a pool since replaced) `jobs` run now, so errors name what
    this call asked for.

    With `time_limits` (seconds, one per job), a job still running after its limit gets
    TimedOut in place of its result: its worker is killed, the pool replaced, and the jobs
    that had not finished run again in the new one. A job's clock starts at the latest when
    every job before it has finished (the workers take jobs in order), so a limit is never
    cut short by the jobs queued before it.

    An exception raised by a task is raised here as it was; a worker that dies takes the
    pool with it, so the pool is dropped (the next call starts a fresh one) and WorkerDied
    is raised.
    """
    started = time.monotonic()
    try:
        if ahead_key is not None:
            taken = _take_ahead(ahead_key, workers, time_limits)
            if taken is not None:
                return taken
        results: dict[int, T | TimedOut] = {}
        todo = list(range(len(jobs)))
        while todo:
            todo = _run_round(workers, task, jobs, todo, time_limits, results)
        return [results[index] for index in range(len(jobs))]
    finally:
        # All of it is the caller blocked on the workers: it does nothing else meanwhile.
        if ledger := open_ledger():
            ledger.waited += time.monotonic() - started


def _run_round(
    workers: int,
    task: Callable[..., T],
    jobs: Sequence[tuple[Any, ...]],
    todo: list[int],
    time_limits: Sequence[float] | None,
    results: dict[int, T | TimedOut],
) -> list[int]:
    """Run the jobs numbered `todo` into `results`; the ones to run again after a timeout."""
    idle_seconds = idle_timeout()
    pool = _check_out(workers)
    futures: list[Future] = []
    try:
        if time_limits is not None:
            # A new worker loads the layout model (seconds) before its first job: no clock
            # runs until one is ready.
            _result(_submit(pool, _ready, ()))
        futures = [_submit(pool, task, jobs[index]) for index in todo]
        for position, (index, future) in enumerate(zip(todo, futures, strict=True)):
            limit = None if time_limits is None else time_limits[index]
            try:
                results[index] = _result(future, limit)
            except TimeoutError:
                _kill(pool)
                results[index] = TimedOut(limit)
                return _finished_or_again(todo[position + 1 :], futures[position + 1 :], results)
        return []
    except BrokenProcessPool as error:
        _discard(pool)
        raise WorkerDied(str(error) or "a parse worker process ended unexpectedly") from None
    except BaseException:
        # A failed range or Ctrl-C: the ranges not started yet are not wanted.
        for future in futures:
            future.cancel()
        raise
    finally:
        _check_in(pool, idle_seconds)


def _finished_or_again(
    todo: list[int], futures: list[Future], results: dict[int, Any]
) -> list[int]:
    """After a kill: results of the jobs that finished before it; the others, to run again."""
    again = []
    for index, future in zip(todo, futures, strict=True):
        # (exception() would wait for a job not done: `and` asks it only of finished ones)
        finished = future.done() and not future.cancelled()
        if finished and not isinstance(future.exception(), BrokenProcessPool):
            results[index] = _result(future)  # a task's own error is raised as it was
        else:
            again.append(index)
    return again


def read_ahead(
    workers: int, task: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], key: Hashable
) -> None:
    """Submit `task(*job)` for every job now, for a later `run_in_workers(..., ahead_key=key)`.

    The workers take jobs in submission order, so a document read ahead after another is
    parsed after it. Results nobody takes are held until `drop_read_ahead`.
    """
    idle_seconds = idle_timeout()
    pool = _check_out(workers)
    try:
        futures = [_submit(pool, task, job) for job in jobs]
    except BaseException:
        _check_in(pool, idle_seconds)
        raise
    with _lock:
        replaced = _ahead.pop(key, None)
        _ahead[key] = ReadAhead(pool, workers, futures, idle_seconds)
    if replaced is not None:
        _release(replaced)


def pending_read_ahead() -> list[Hashable]:
    """The keys submitted ahead and not taken yet."""
    with _lock:
        return list(_ahead)


def drop_read_ahead() -> None:
    """Cancel and forget every read-ahead not taken (the caller is done)."""
    with _lock:
        dropped = list(_ahead.values())
        _ahead.clear()
    for entry in dropped:
        _release(entry)


def _take_ahead(
    key: Hashable, workers: int, time_limits: Sequence[float] | None
) -> list[Any] | None:
    with _lock:
        entry = _ahead.pop(key, None)
    if entry is None:
        return None
    limits = time_limits or [None] * len(entry.futures)
    try:
        if entry.workers != workers:
            return None
        results = [_result(f, t) for f, t in zip(entry.futures, limits, strict=True)]
        if ledger := open_ledger():
            ledger.read_ahead = True
        return results
    except TimeoutError:
        # The call runs its jobs again under the same limits and reports which ran over.
        _kill(entry.pool)
        return None
    except BrokenProcessPool:
        _discard(entry.pool)
        return None
    except Exception:  # the call runs its own jobs and raises their error, naming its file
        return None
    finally:
        _release(entry)


def _release(entry: ReadAhead) -> None:
    for future in entry.futures:
        future.cancel()
    _check_in(entry.pool, entry.idle_seconds)


def _submit(pool: ProcessPoolExecutor, task: Callable[..., Any], job: Sequence[Any]) -> Future:
    """`task(*job)` in the pool, timed by its worker."""
    return pool.submit(_timed, time.monotonic(), _idle_counted_from, task, *job)


def _result(future: Future, timeout: float | None = None) -> Any:
    """A `_submit`ted job's result; its worker's times go to the open ledger."""
    result, times = future.result(timeout=timeout)
    if ledger := open_ledger():
        ledger.add(times)
    return result


def _timed(
    submitted: float, counted_from: float, task: Callable[..., T], *args: Any
) -> tuple[T, JobTime]:
    """In a worker: `task(*args)`, with how long it ran and how long the worker had waited for
    it. time.monotonic() is the machine's clock, the same in the caller and its workers."""
    global _free_since
    started = time.monotonic()
    waited = idle_before(max(_free_since, counted_from), submitted, started)
    try:
        result = task(*args)
        return result, JobTime(time.monotonic() - started, waited)
    finally:
        _free_since = time.monotonic()


def count_idle_from_now() -> None:
    """The workers' idle time counts from now: an ingest starting leaves out the pause before it."""
    global _idle_counted_from
    _idle_counted_from = time.monotonic()


def may_start_workers() -> bool:
    """False in a daemonic process, which multiprocessing forbids to have children."""
    return not multiprocessing.current_process().daemon


def idle_timeout() -> float:
    """Seconds the workers may sit idle before they are stopped (RAG_ASSETS_PARSE_WORKERS_IDLE_S)."""
    return setting(IDLE_SECONDS_ENV, DEFAULT_IDLE_SECONDS, "0 or more seconds")


def page_timeout() -> float | None:
    """Seconds a PDF page may take to parse (RAG_ASSETS_PARSE_PAGE_TIMEOUT_S); None: no limit (0)."""
    return setting(PAGE_TIMEOUT_ENV, DEFAULT_PAGE_TIMEOUT, "0 (no limit) or more seconds") or None


def memory_limit_mb() -> float | None:
    """Megabytes of address space a parse worker may take (RAG_ASSETS_PARSE_MEMORY_MB); None: no
    limit (0). A worker's parse that would need more fails with MemoryError."""
    return setting(MEMORY_ENV, DEFAULT_MEMORY_MB, "0 (no limit) or more megabytes") or None


def worker_memory() -> MemoryLimit:
    """The memory limit the workers run under: the setting, or the machine's lower limit, said
    once in the log; ConfigurationError when no worker could start under it."""
    limit = worker_memory_limit(memory_limit_mb(), MEMORY_ENV)
    if limit.mb is not None and limit.mb < MIN_WORKER_MB:
        raise ConfigurationError(
            f"parse workers need {MIN_WORKER_MB:,.0f} MB of address space to start; "
            f"they may use {limit.describe()}"
        )
    if limit.bound_by and limit not in _said:
        _said.add(limit)
        logger.info("parse workers may use %s", limit.describe())
    return limit


def setting(name: str, default: float, wanted: str) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number < math.inf:
        raise ConfigurationError(f"{name} must be {wanted}, not {value!r}")
    return number


def _check_out(workers: int) -> ProcessPoolExecutor:
    """The shared pool, started if needed, counted busy until `_check_in`."""
    global _pool, _pool_workers, _calls_in_flight
    with _lock:
        if _pool is not None and _pool_workers != workers:
            _pool.shutdown(wait=False, cancel_futures=True)
            _pool = None
        if _pool is None:
            # spawn: a fork would copy the parent's threads' locks (Dagster, gRPC, ORT) mid-use.
            _pool = ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(worker_memory().mb,),
            )
            _pool_workers = workers
        _cancel_idle_timer()
        _calls_in_flight += 1
        return _pool


def _check_in(pool: ProcessPoolExecutor, idle_seconds: float) -> None:
    """One call fewer in flight; the last one out starts the idle clock."""
    global _calls_in_flight, _idle_timer
    with _lock:
        _calls_in_flight -= 1
        if _calls_in_flight or _pool is not pool:
            return
        _cancel_idle_timer()
        timer = threading.Timer(idle_seconds, lambda: _stop_if_idle(pool, timer))
        # A daemon thread: a process about to exit does not wait for the clock.
        timer.daemon = True
        _idle_timer = timer
        timer.start()


def _stop_if_idle(pool: ProcessPoolExecutor, timer: threading.Timer) -> None:
    """Stop the workers unless a call came (and maybe went, starting a new clock) meanwhile."""
    global _pool, _idle_timer
    with _lock:
        if _idle_timer is not timer or _calls_in_flight or _pool is not pool:
            return
        _pool, _idle_timer = None, None
    pool.shutdown(wait=True)


def _cancel_idle_timer() -> None:
    """Called with the lock held."""
    global _idle_timer
    if _idle_timer is not None:
        _idle_timer.cancel()
        _idle_timer = None


def _kill(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers now, busy or not, and drop the pool.

    The executor cannot stop a running task; its processes are killed (SIGKILL: a worker stuck
    in native code may ignore anything else), which it reports as a broken pool to every job
    still waiting in it.
    """
    # `_processes` is the executor's own pid -> Process map; it has no public way to them.
    for process in list((pool._processes or {}).values()):
        process.kill()
    _discard(pool)


def _discard(pool: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


def _ready() -> None:
    """A job that only returns: done once a worker has started and loaded its model."""


def _init_worker(memory_mb: float | None = None) -> None:
    """Cap the worker's memory, and load the layout model before the first task: one ONNX
    thread, the pool is the parallelism."""
    global _free_since

    if memory_mb:
        apply_limit(memory_mb)
    _exit_when_orphaned(os.getppid())
    # Ctrl-C reaches the whole process group: the caller stops and ends its workers, which
    # would otherwise each print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(WORKER_NICENESS)
    install_layout_model(threads=1)
    _free_since = time.monotonic()


def _exit_when_orphaned(parent: int, every_seconds: float = 1.0) -> None:
    """End this worker once the process that started it is gone.

    A worker blocks on its task queue, whose write end its sibling workers also hold, so a
    parent killed by SIGKILL (a parse worker running over a limit, itself parsing in workers)
    never closes it: the orphans would wait, each holding its model, for ever. (The kernel's
    parent-death signal fires when the parent's *thread* that spawned the worker ends, which
    an executor's threads do while the parent lives.)"""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_seconds)
        os._exit(1)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


def shutdown() -> None:
    """Stop the workers now (at the process's exit they stop by themselves)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
        _cancel_idle_timer()
    if pool is not None:
        pool.shutdown(wait=True)
