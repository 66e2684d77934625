"""The UI: the Dagster webserver loads the workspace and lists the document assets."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_assets.defs.assets import PIPELINE
from rag_assets.instance import ensure_dagster_home
from rag_assets.settings import Settings
from rag_assets_tests.conftest import REPO_ROOT
from rag_assets_tests.support.processes import with_default_signals

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, timeout: float = 30) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.load(response)
    assert "errors" not in answer, answer["errors"]
    return answer["data"]


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def webserver(data_dir: Path) -> Iterator[int]:
    """The webserver on 127.0.0.1 over `data_dir`'s instance, as `rag-assets ui` serves it."""
    port = free_port()
    log_path = data_dir / "webserver.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(ensure_dagster_home(Settings(data_dir=data_dir))),
        "RAG_ASSETS_DATA_DIR": str(data_dir),
    }
    log = log_path.open("wb")
    server = subprocess.Popen(
        with_default_signals(
            [
                sys.executable,
                "-m",
                "dagster_webserver",
                "-w",
                str(REPO_ROOT / "workspace.yaml"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
            ]
        ),
        env=env,
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                graphql(port, "{ assetNodes { id } }")
                break
            except OSError:
                assert time.monotonic() < deadline, "webserver did not answer within 120 s"
                assert server.poll() is None, (
                    f"webserver exited with {server.returncode}:\n{_tail(log_path)}"
                )
                time.sleep(1)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_webserver_serves_the_asset_graph(tmp_path):
    with webserver(tmp_path) as port:
        nodes = graphql(port, "{ assetNodes { assetKey { path } } }")["assetNodes"]
    assert {n["assetKey"]["path"][0] for n in nodes} >= set(PIPELINE)


def test_dagster_validates_the_workspace(tmp_path):
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path),
        "RAG_ASSETS_DATA_DIR": str(tmp_path / "data"),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dagster",
            "definitions",
            "validate",
            "-w",
            str(REPO_ROOT / "workspace.yaml"),
        ],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "All code locations passed validation" in result.stderr + result.stdout
