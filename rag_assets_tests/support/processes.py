"""Start servers from a test process that has threads: no Python code between fork and exec."""

from __future__ import annotations

import sys

# A shell in the background hands its children SIGINT (and so SIGTERM, which Dagster copies from
# it) as ignored; the server must obey both. A `preexec_fn` could reset them, but it runs Python in
# a child forked from a process with threads (Milvus, torch, gRPC), which can abort or deadlock
# there; a fresh interpreter resets them and then becomes the server.
_SET_STOP_SIGNALS_THEN_EXEC = (
    "import os, signal, sys\n"
    "action = getattr(signal, sys.argv[1])\n"
    "signal.signal(signal.SIGINT, action)\n"
    "signal.signal(signal.SIGTERM, action)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def with_default_signals(command: list[str]) -> list[str]:
    """`command`, run with SIGINT and SIGTERM at their default actions whatever was inherited."""
    return [sys.executable, "-c", _SET_STOP_SIGNALS_THEN_EXEC, "SIG_DFL", *command]


def with_ignored_signals(command: list[str]) -> list[str]:
    """`command`, started as a background shell job or a service manager may start it: SIGINT
    and SIGTERM ignored, which survives exec."""
    return [sys.executable, "-c", _SET_STOP_SIGNALS_THEN_EXEC, "SIG_IGN", *command]
