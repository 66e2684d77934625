"""`rag-assets ui` and `dg` start without notices that ask nothing of the person running them:
dg's virtual environment check, Dagster's "dagster.yaml is ignored", beta and preview notices."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import pytest

from rag_assets_tests.conftest import REPO_ROOT
from rag_assets_tests.e2e.test_webserver import free_port, graphql
from rag_assets_tests.support.processes import with_default_signals

pytestmark = pytest.mark.slow

# dg's notice prints "warning" in its suppression line, Dagster's loggers "WARNING", Python's
# warnings "BetaWarning: ..." or "PreviewWarning: ...".
NOTICE = re.compile(r"warning|virtual environment|dagster\.yaml", re.IGNORECASE)
# What the daemon logs once its sensors have ticked over the code location.
SENSORS_TICKED = "Checking for new runs for sensor: inbox_sensor"
# Both halves of `rag-assets ui` up: the daemon's sensors ticked, the webserver listening.
STARTED = (SENSORS_TICKED, "Serving dagster-webserver")


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "RAG_ASSETS_DATA_DIR": str(tmp_path / "data")}
    # As run from .venv/bin without activating it; `rag-assets ui` picks its own Dagster home.
    for name in ("VIRTUAL_ENV", "DAGSTER_HOME"):
        env.pop(name, None)
    return env


def test_ui_starts_without_notices(tmp_path):
    port = free_port()
    log_path = tmp_path / "ui.log"
    with log_path.open("wb") as log:
        ui = subprocess.Popen(
            with_default_signals(
                [sys.executable, "-m", "rag_assets.cli", "ui", "--port", str(port)]
            ),
            env=_environment(tmp_path),
            cwd=REPO_ROOT,  # beside the repository's dagster.yaml, as the quick start runs it
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 240
        # The daemon's sensors may tick before the webserver listens (a loaded machine).
        while not all(line in log_path.read_text(errors="replace") for line in STARTED):
            assert ui.poll() is None, f"ui exited with {ui.returncode}:\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"not started in 240 s:\n{log_path.read_text()}"
            time.sleep(1)
        # "Serving" is logged just before the webserver binds its port.
        while True:
            try:
                graphql(port, "{ assetNodes { id } }")
                break
            except urllib.error.URLError:
                assert time.monotonic() < deadline, "the webserver never answered"
                time.sleep(1)
        # What the start printed: on the stop signal, which reaches the whole group as a
        # terminal's Ctrl-C does, Dagster's webserver may see its code server end first and say so.
        output = log_path.read_text(errors="replace")
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=60)
    finally:
        if ui.poll() is None:
            os.killpg(ui.pid, signal.SIGKILL)
            ui.wait()
    assert [line for line in output.splitlines() if NOTICE.search(line)] == []


def test_dg_says_nothing_of_the_virtual_environment(tmp_path):
    checked = subprocess.run(
        [str(Path(sys.executable).with_name("dg")), "check", "yaml"],
        env=_environment(tmp_path),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert not NOTICE.search(checked.stdout + checked.stderr), checked.stderr
