"""Ctrl-C kept from the processes mirroring a run's output: Dagster's `tail_to_stream` replaced
by `_tail_deaf_to_ctrl_c` on import of the package (`install`)."""

from __future__ import annotations

import signal
from contextlib import ExitStack, contextmanager

from dagster._core.execution import compute_logs

from rag_assets.interrupts import children_deaf_to_stop_signals


@contextmanager
def _tail_deaf_to_ctrl_c(path, stream):
    """Dagster's mirror of a run's stdout or stderr (a `tail` and its orphan watcher, two
    processes in the ingest's process group), started deaf to SIGINT: Ctrl-C reaches the whole
    foreground group, and the watcher would print a KeyboardInterrupt traceback where the person
    expects the ingest's own summary. Dagster ends both with SIGTERM when the run ends."""
    with ExitStack() as stack:
        with children_deaf_to_stop_signals((signal.SIGINT,)):
            pids = stack.enter_context(DAGSTER_TAIL_TO_STREAM(path, stream))
        yield pids


# Dagster's original, kept to check (test_dagster_private) that what is replaced is still
# Dagster's.
DAGSTER_TAIL_TO_STREAM = compute_logs.tail_to_stream


def install() -> None:
    """Dagster's output mirrors started deaf to Ctrl-C."""
    compute_logs.tail_to_stream = _tail_deaf_to_ctrl_c
