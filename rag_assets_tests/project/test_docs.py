"""The documentation site builds without a warning: every page in the navigation, every link and
anchor resolving, the benchmark figures included from bench/README.md."""

from __future__ import annotations

import os
import subprocess
import sys

from rag_assets_tests.conftest import REPO_ROOT


def test_mkdocs_builds_strict_without_warnings(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO_ROOT,  # mkdocs.yml and the snippets' base path are relative to the repository
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = built.stdout + built.stderr
    warnings = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert built.returncode == 0 and warnings == [], output
    assert (tmp_path / "site" / "index.html").is_file()
