"""A long-running server (`rag-assets ui`) run as a child process that SIGTERM and SIGINT stop,
however this process was started.

A shell's background job or a service manager may start us with SIGINT ignored; an ignored
disposition survives exec, and Dagster copies SIGINT's handler to SIGTERM, so a server exec'd in
our place would obey neither. Here the server runs in a process group of its own (its webserver,
daemon, code servers and run workers join it) and a stop signal to us is passed on to that whole
group, as a terminal's Ctrl-C reaches its foreground group.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

# Dagster stops in a few seconds; on a loaded machine its interpreters take several more to exit.
GRACE_SECONDS = 20.0
_POLL_SECONDS = 0.1
_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
# On Linux the server's orphaned descendants become our children rather than init's, so that a
# dead one leaves the group as soon as we reap it (not whenever init gets to it).
_SUBREAPER = sys.platform == "linux"


def supervise(
    command: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | None = None,
    grace: float = GRACE_SECONDS,
) -> int:
    """Run `command` until it exits or a stop signal ends it: the signal goes to the command's
    process group, which gets `grace` seconds to shut down before SIGKILL. Returns the
    command's exit status (128 + N for one ended by signal N, as a shell reports it)."""
    passed_on = {signal.SIGINT: signal.SIGINT, signal.SIGTERM: signal.SIGTERM}
    # A closing terminal sends SIGHUP to its foreground group, which the server's group is not;
    # under nohup (SIGHUP ignored) a hangup stops nothing.
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        passed_on[signal.SIGHUP] = signal.SIGTERM
    received: list[int] = []
    group: list[int] = []

    def pass_on(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if group:
            _signal_group(group[0], passed_on[signum])

    # Installed before the child starts, so a signal during its start is not lost. A handled
    # signal is reset to the default across exec (an ignored one is not): the child starts with
    # SIGINT and SIGTERM at their defaults whatever we inherited.
    previous = {signum: signal.signal(signum, pass_on) for signum in passed_on}
    try:
        _adopt_orphans()
        child = subprocess.Popen(list(command), env=dict(env), cwd=cwd, process_group=0)
        group.append(child.pid)
        if received:  # arrived before the group existed
            _signal_group(child.pid, passed_on[received[0]])
        deadline = None
        while (status := child.poll()) is None:
            if received and deadline is None:
                deadline = time.monotonic() + grace
            if deadline is not None and time.monotonic() > deadline:
                _signal_group(child.pid, signal.SIGKILL)
            _reap_orphans(but=child.pid)
            time.sleep(_POLL_SECONDS)
        # What the server left in its group (a code server, a run worker) gets the rest of the time.
        _empty_group(child.pid, deadline or time.monotonic() + grace)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 + -status if status < 0 else status


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group has already gone
        os.killpg(pgid, signum)


def _empty_group(pgid: int, deadline: float) -> None:
    while True:
        _reap_orphans()
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            _signal_group(pgid, signal.SIGKILL)
            return
        time.sleep(_POLL_SECONDS)


def _adopt_orphans() -> None:
    if _SUBREAPER:
        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap_orphans(but: int | None = None) -> None:
    """Reap the adopted descendants that have exited; `but` is left to its Popen."""
    while _SUBREAPER:
        try:
            exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if exited is None or exited.si_pid == but:
            return
        os.waitpid(exited.si_pid, 0)
