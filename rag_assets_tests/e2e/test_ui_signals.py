"""`rag-assets ui` started as a service manager or a background shell job starts it (SIGINT and
SIGTERM inherited as ignored) stops on either signal, with its webserver, daemon and code servers.

Before, it exec'd `dagster dev`, which kept the ignored SIGINT and copied it to SIGTERM: only
SIGKILL stopped it, and its children outlived it for a minute.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from rag_assets_tests.e2e.test_webserver import free_port, graphql
from rag_assets_tests.support.processes import with_ignored_signals

pytestmark = pytest.mark.slow

# A few seconds on an idle machine; the tests share two cores with other work.
STOP_SECONDS = 30


def _living(processes: list[psutil.Process]) -> list[str]:
    alive = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                alive.append(" ".join(process.cmdline()))
        except psutil.NoSuchProcess:
            pass
    return alive


def _session(sid: int) -> list[psutil.Process]:
    members = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == sid:
                members.append(process)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return members


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_ui_stops_with_its_children_on_a_signal_it_inherited_as_ignored(tmp_path, signum):
    port = free_port()
    log_path = tmp_path / "ui.log"
    env = {**os.environ, "RAG_ASSETS_DATA_DIR": str(tmp_path / "data")}
    env.pop("DAGSTER_HOME", None)  # `rag-assets ui` puts it under the data folder
    with log_path.open("wb") as log:
        ui = subprocess.Popen(
            with_ignored_signals(
                [sys.executable, "-m", "rag_assets.cli", "ui", "--port", str(port)]
            ),
            env=env,
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own session: everything it starts can be found
        )
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                workspace = graphql(
                    port, "{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"
                )
                break
            except OSError:
                assert ui.poll() is None, f"ui exited with {ui.returncode}:\n{log_path.read_text()}"
                assert time.monotonic() < deadline, "the UI did not answer within 240 s"
                time.sleep(1)
        # The code location keeps the name workspace.yaml gives it, so run history carries over.
        assert [e["name"] for e in workspace["workspaceOrError"]["locationEntries"]] == [
            "rag_assets"
        ]
        children = psutil.Process(ui.pid).children(recursive=True)
        commands = [" ".join(child.cmdline()) for child in children]
        for part in ("dagster_dg_cli.cli dev", "dagster_webserver", "dagster._daemon run"):
            assert any(part in command for command in commands), (part, commands)
        assert any("code-server" in c or "api grpc" in c for c in commands), commands

        started = time.monotonic()
        ui.send_signal(signum)
        status = ui.wait(timeout=STOP_SECONDS)
        took = time.monotonic() - started
    finally:
        if ui.poll() is None:
            os.killpg(ui.pid, signal.SIGKILL)
            ui.wait()
    output = log_path.read_text(errors="replace")
    assert status == 0, f"not a clean stop ({status}) after {took:.1f} s:\n{output[-3000:]}"
    assert took < STOP_SECONDS
    assert _living(children) == []
    assert _living(_session(ui.pid)) == []
    assert "Dagster services shut down." in output
