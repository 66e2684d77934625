"""SIGINT and SIGTERM during an ingest: stop at once, keep what finished, undo what did not.

Outside a run either signal raises `Interrupted` where the ingest is (a wait for the data folder
or a pool slot, planning). Inside a run Dagster installs its own handlers, which end the run's
step with an interrupt and discard the signal's number; the wakeup fd set here still records it,
so the ingest learns which signal stopped the run once the run returns.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived outside a run."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class StopSignals:
    """Turns SIGINT and SIGTERM into `Interrupted` and remembers the first one received, including
    those Dagster's handlers took during a run. A no-op off the main thread (no handlers there)."""

    def __init__(self) -> None:
        self._first: int | None = None
        self._pipe: tuple[int, int] | None = None
        self._previous: dict[int, object] = {}
        self._previous_fd = -1

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self._first is None
        self._note(signum)
        if first:  # a second signal while stopping is noted, not raised into the clean-up
            raise Interrupted(signum)

    def _note(self, signum: int) -> None:
        if self._first is None and signum in STOP_SIGNALS:
            self._first = signum

    def received(self) -> int | None:
        """The first stop signal received so far, or None."""
        if self._pipe is not None:
            try:
                for byte in os.read(self._pipe[0], 512):
                    self._note(byte)
            except BlockingIOError:
                pass
        return self._first

    def __enter__(self) -> StopSignals:
        if not _main_thread():
            return self
        read, write = os.pipe()
        for fd in (read, write):
            os.set_blocking(fd, False)
        self._pipe = (read, write)
        self._previous_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        self._previous = {s: signal.signal(s, self._handle) for s in STOP_SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pipe is None:
            return
        self.received()
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        for fd in self._pipe:
            os.close(fd)
        self._pipe = None


@contextmanager
def deferred_signals(redeliver: bool = True) -> Iterator[None]:
    """Hold SIGINT and SIGTERM off while the block runs (an undo must not be cut short by a
    second Ctrl-C), then hand the first one that arrived to the handler in place before; with
    `redeliver` off, only a `StopSignals` around notes it (its wakeup fd)."""
    if not _main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {s: signal.signal(s, lambda n, _f: arrived.append(n)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if arrived and redeliver:
            signal.raise_signal(arrived[0])


@contextmanager
def children_deaf_to_stop_signals(signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Children started in the block begin with `signals` (SIGINT and SIGTERM) blocked.

    Ctrl-C in a terminal signals the whole process group: a helper process (Milvus Lite's engine)
    must outlive it so the ingest can undo the interrupted document and close the index cleanly;
    it stops when its parent lets it go. The mask is this thread's: other threads still take the
    signals meanwhile, and a signal blocked here is delivered when the block ends, not lost.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
