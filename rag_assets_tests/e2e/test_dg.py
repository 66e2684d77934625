"""Dagster's `dg` CLI finds the project's definitions through [tool.dg] in pyproject.toml."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets.defs.assets import PIPELINE
from rag_assets_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

DG = str(Path(sys.executable).with_name("dg"))


def dg(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "home"),
        "RAG_ASSETS_DATA_DIR": str(tmp_path / "data"),
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run(
        [DG, *args], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )


def test_dg_lists_the_definitions(tmp_path):
    listed = dg(tmp_path, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr[-2000:]
    defs = json.loads(listed.stdout)
    assert {asset["asset_key"] for asset in defs["assets"]} >= set(PIPELINE)
    assert {"document_chunks", "vector_index"} <= set(PIPELINE)
    assert {"inbox_sensor", "recovery_sensor"} <= {s["name"] for s in defs["sensors"]}


def test_dg_checks_the_definitions(tmp_path):
    checked = dg(tmp_path, "check", "defs")
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
