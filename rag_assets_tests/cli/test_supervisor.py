"""The process that runs `rag-assets ui`'s server: a stop signal reaches the server's whole
process group, and what does not stop within the grace period is killed."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from rag_assets.cli.supervisor import supervise


def _signal_us_after(seconds: float, signum: int) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signum))
    timer.start()
    return timer


def _group_gone(pid_file) -> bool:
    try:
        os.killpg(int(pid_file.read_text()), 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_reaches_the_servers_children(tmp_path, signum):
    # The server waits on a child of its own, as `dg dev` waits on the webserver.
    pid_file = tmp_path / "pid"
    server = (
        "import os, subprocess, sys\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']).wait()\n"
    )
    timer = _signal_us_after(1.0, signum)
    started = time.monotonic()
    status = supervise([sys.executable, "-c", server], os.environ, grace=20)
    timer.join()
    assert status == 128 + signum
    assert time.monotonic() - started < 5
    assert _group_gone(pid_file)


def test_a_server_deaf_to_the_signal_is_killed_after_the_grace_period(tmp_path):
    pid_file = tmp_path / "pid"
    script = f"trap '' TERM; echo $$ > {pid_file}; sleep 60 & wait"
    timer = _signal_us_after(1.0, signal.SIGTERM)
    started = time.monotonic()
    status = supervise(["sh", "-c", script], os.environ, grace=1)
    timer.join()
    assert status == 128 + signal.SIGKILL
    assert time.monotonic() - started < 5
    assert _group_gone(pid_file)


def test_the_servers_own_exit_status_is_returned(tmp_path):
    assert supervise(["sh", "-c", "exit 3"], os.environ) == 3
