"""Where a parse's time went between the caller and the parse workers (page_pool.py).

The caller (a run's process) waits while it takes the workers' results; a worker waits when
nothing has been submitted to it. A worker times each job it runs and, from when it was last
free, how long it sat with nothing to do before the job came; the caller adds that to the
ledger open around its parse, with the seconds it was blocked taking the results. What
parsed_documents records per document, and the throughput bench sums over an ingest: parse
and embedding overlap only when neither side waits for the other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from rag_assets.ledgers import opened


@dataclass(frozen=True)
class JobTime:
    """A job as its worker saw it."""

    busy: float  # seconds it ran
    idle_before: float  # seconds the worker had nothing to run before this job was submitted


def idle_before(free_since: float, submitted: float, started: float) -> float:
    """Seconds a worker free since `free_since` sat waiting for a job submitted at `submitted`
    that it started at `started`; none when the job was waiting for the worker instead.

    Only the wait for the submission counts: the moment a queued job takes to reach a free
    worker is not the caller's to save."""
    return max(0.0, min(submitted, started) - free_since)


@dataclass
class ParseWorkerTime:
    """A parse's share of the workers: what the caller waited, what its jobs ran, and how long
    the workers sat idle before those jobs were submitted (summed over workers)."""

    waited: float = 0.0
    busy: float = 0.0
    idle: float = 0.0
    read_ahead: bool = False  # its results were submitted before the parse asked for them

    def add(self, job: JobTime) -> None:
        self.busy += job.busy
        self.idle += job.idle_before

    def metadata(self) -> dict[str, float | bool]:
        return {
            "parse_wait_seconds": round(self.waited, 3),
            "parse_read_ahead": self.read_ahead,
            "parse_worker_seconds": round(self.busy, 3),
            "parse_workers_idle_seconds": round(self.idle, 3),
        }


_open_ledger: ContextVar[ParseWorkerTime | None] = ContextVar("parse_worker_time", default=None)


@contextlib.contextmanager
def timing_parse_workers() -> Iterator[ParseWorkerTime]:
    """A ledger of the worker time taken inside the block, in this thread only."""
    with opened(_open_ledger, ParseWorkerTime()) as ledger:
        yield ledger


def open_ledger() -> ParseWorkerTime | None:
    """The ledger open in this thread, if any."""
    return _open_ledger.get()
