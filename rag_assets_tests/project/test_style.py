"""The style the contributor guide states holds on every file: ruff's rules as pyproject.toml
configures them (a function of the package past 10 paths or 50 statements is split), and the
formatter's layout."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from rag_assets_tests.conftest import REPO_ROOT

_CHECKED = ["rag_assets", "rag_assets_tests", "bench"]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    ruff = Path(sys.executable).with_name("ruff")
    return subprocess.run(
        [str(ruff), *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )


def test_ruff_finds_nothing() -> None:
    result = _ruff("check", "--no-cache", *_CHECKED)
    assert result.returncode == 0, result.stdout[-4000:]


def test_every_file_is_formatted() -> None:
    result = _ruff("format", "--check", "--no-cache", *_CHECKED)
    assert result.returncode == 0, result.stdout[-4000:]


def test_the_package_is_held_to_both_function_limits() -> None:
    """The limits the guide names are the ones ruff applies, and only tests and benches (read as
    scripts) are exempt from them."""
    lint = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"C901", "PLR0915"} <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] == 10
    assert lint["pylint"]["max-statements"] == 50
    exempt = {
        path for path, rules in lint["per-file-ignores"].items() if {"C901", "PLR0915"} & set(rules)
    }
    assert exempt == {"rag_assets_tests/**", "bench/**"}
    guide = (REPO_ROOT / "docs/contributing.md").read_text()
    assert "(C901, 10)" in guide and "(PLR0915, 50)" in guide
