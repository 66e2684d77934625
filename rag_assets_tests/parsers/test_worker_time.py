"""How long a parse's caller waited on the parse workers, and the workers on it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from rag_assets.parsers import page_pool
from rag_assets.parsers.page_pool import run_in_workers
from rag_assets.parsers.worker_time import (
    JobTime,
    ParseWorkerTime,
    idle_before,
    open_ledger,
    timing_parse_workers,
)


@pytest.fixture(scope="module")
def _workers() -> Iterator[None]:
    yield
    page_pool.drop_read_ahead()
    page_pool.shutdown()


@pytest.mark.parametrize(
    ("free_since", "submitted", "started", "idle"),
    [
        (10.0, 14.0, 14.5, 4.0),  # free at 10, nothing came until 14
        (10.0, 8.0, 10.2, 0.0),  # queued before the worker was free: the job waited, not it
        (10.0, 10.0, 10.1, 0.0),
        (10.0, 14.0, 13.9, 3.9),  # the worker's clock read before the caller's: the start
    ],
)
def test_a_worker_is_idle_from_when_it_was_free_until_its_next_job_was_submitted(
    free_since: float, submitted: float, started: float, idle: float
) -> None:
    assert idle_before(free_since, submitted, started) == pytest.approx(idle)


def test_a_ledger_sums_its_jobs_and_is_open_only_in_its_block() -> None:
    assert open_ledger() is None
    with timing_parse_workers() as ledger:
        assert open_ledger() is ledger
        with timing_parse_workers() as inner:  # a parse inside another keeps its own
            assert open_ledger() is inner
        assert open_ledger() is ledger
        ledger.add(JobTime(busy=2.0, idle_before=0.5))
        ledger.add(JobTime(busy=1.25, idle_before=0.0))
        ledger.waited = 1.0004
    assert open_ledger() is None
    assert ledger.metadata() == {
        "parse_wait_seconds": 1.0,
        "parse_read_ahead": False,
        "parse_worker_seconds": 3.25,
        "parse_workers_idle_seconds": 0.5,
    }
    assert ParseWorkerTime().metadata()["parse_wait_seconds"] == 0


@pytest.mark.slow
@pytest.mark.usefixtures("_workers")
def test_the_pool_counts_the_callers_wait_its_jobs_and_the_workers_idle_before_them() -> None:
    run_in_workers(1, time.sleep, [(0,)])  # the worker started and its model loaded
    with timing_parse_workers() as first:
        assert run_in_workers(1, time.sleep, [(0.2,), (0.1,)]) == [None, None]
    # The caller waited through both jobs, which ran at least their sleeps.
    assert first.waited >= first.busy >= 0.3
    assert not first.read_ahead

    paused_at = time.monotonic()
    time.sleep(0.3)  # the worker has nothing to do meanwhile
    paused = time.monotonic() - paused_at
    with timing_parse_workers() as second:
        run_in_workers(1, time.sleep, [(0,)])
    assert second.idle >= paused

    page_pool.count_idle_from_now()  # an ingest starting: the pause before it is not its own
    with timing_parse_workers() as third:
        run_in_workers(1, time.sleep, [(0,)])
    assert third.idle < paused


@pytest.mark.slow
@pytest.mark.usefixtures("_workers")
def test_results_read_ahead_are_counted_when_taken() -> None:
    page_pool.read_ahead(1, time.sleep, [(0.2,), (0,)], key="doc")
    with timing_parse_workers() as taken:
        assert run_in_workers(1, time.sleep, [(0.2,), (0,)], ahead_key="doc") == [None, None]
    assert taken.read_ahead
    assert taken.busy >= 0.2
    # Nothing is counted outside a ledger, and a call outside one still runs.
    assert run_in_workers(1, pow, [(2, 3)]) == [8]
