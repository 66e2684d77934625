"""The UI: the Dagster webserver loads the workspace and lists the seven assets."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from rag_assets_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

QUERY = '{"query": "{ assetNodes { assetKey { path } } }"}'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _restore_signals() -> None:
    # Background shells may hand children SIGTERM/SIGINT as ignored; the server must obey them.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_webserver_serves_the_asset_graph(tmp_path):
    port = _free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "dagster"),
        "RAG_ASSETS_DATA_DIR": str(tmp_path),
    }
    (tmp_path / "dagster").mkdir()
    server = subprocess.Popen(
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
        ],
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_restore_signals,
    )
    try:
        deadline, nodes = time.monotonic() + 120, None
        while time.monotonic() < deadline and nodes is None:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/graphql",
                    data=QUERY.encode(),
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=5) as response:
                    nodes = json.load(response)["data"]["assetNodes"]
            except (OSError, KeyError, TypeError):
                time.sleep(1)
        assert nodes is not None, "webserver did not answer within 120 s"
        assert {n["assetKey"]["path"][0] for n in nodes} == {
            "raw_documents",
            "parsed_documents",
            "normalized_documents",
            "table_markdown",
            "document_chunks",
            "chunk_embeddings",
            "vector_index",
        }
    finally:
        server.terminate()
        server.wait(timeout=30)


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
