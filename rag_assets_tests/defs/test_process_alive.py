"""Whether a run's process still runs: the recovery sensor fails runs whose process is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from rag_assets.instance import process_alive


def test_a_running_process_is_alive_an_exited_unreaped_one_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert process_alive(child.pid)
    finally:
        child.kill()
    # Killed and not yet waited for: a zombie, which signal 0 still reaches.
    deadline = time.monotonic() + 10
    while process_alive(child.pid):
        assert time.monotonic() < deadline, "a zombie read as alive"
        time.sleep(0.05)
    os.kill(child.pid, 0)  # the zombie is still there: only its parent's wait removes it
    child.wait()
    assert not process_alive(child.pid)
