"""SIGINT and SIGTERM during an ingest: stop at once, keep what finished, undo what did not.

Outside a run a stop signal is noted and acted on at safe points: at once in a wait
(`interruptible`: for the data folder, a pool slot, the Milvus Lite file), else at the next
`check` (before each document). Raised anywhere else it could cut a library's clean-up in two
(a database connection being closed). Inside a run Dagster installs its own handlers, which end
the run's step with an interrupt and discard the signal's number; the wakeup fd set here still
records it, so the ingest learns which signal stopped the run once the run returns.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A stop signal, raised at a safe point outside a run."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_active: list[StopSignals] = []  # the StopSignals in force, innermost last
_waiting = [0]  # depth of `interruptible` blocks on the main thread


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class StopSignals:
    """Notes the first SIGINT or SIGTERM, including those Dagster's handlers took during a run,
    and raises `Interrupted` at safe points. A no-op off the main thread (no handlers there)."""

    def __init__(self) -> None:
        self._first: int | None = None
        self._pipe: tuple[int, int] | None = None
        self._previous: dict[int, object] = {}
        self._previous_fd = -1
        # Told of each signal noted outside a wait (a run about to start must learn of it).
        self.listeners: list[Callable[[], None]] = []

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._note(signum)
        for listener in self.listeners:
            listener()
        if _waiting[0]:
            raise Interrupted(self._first or signum)

    def check(self) -> None:
        """Raise `Interrupted` if a stop signal has arrived."""
        if signum := self.received():
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
        _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pipe is None:
            return
        self.received()
        _active.remove(self)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        for fd in self._pipe:
            os.close(fd)
        self._pipe = None


@contextmanager
def stop_signals() -> Iterator[StopSignals]:
    """The StopSignals in force (a caller's), or a new one for the block."""
    if _active:
        yield _active[-1]
        return
    with StopSignals() as stop:
        yield stop


@contextmanager
def interruptible() -> Iterator[None]:
    """A wait that a stop signal ends at once: nothing is half-done in it."""
    if _active and _main_thread():
        _active[-1].check()
        _waiting[0] += 1
        try:
            yield
        finally:
            _waiting[0] -= 1
    else:
        yield


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
