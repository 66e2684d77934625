"""scripts/setup.sh prints one line per stage and `environment ready`; a failing stage prints its
own output and the script exits with its status.

The script runs in a scratch copy of the repository whose `.venv/bin/python` stands in for the
interpreter (a real install takes minutes): it prints what pip, torch's exporter and the import
check print, and fails the stage named in SETUP_FAILS.
"""

import os
import shutil
import stat
import subprocess
from pathlib import Path

from rag_assets_tests.conftest import REPO_ROOT

NOISE = "TracerWarning: Converting a tensor to a Python boolean"

PYTHON = f"""#!/usr/bin/env bash
echo "$*" >> "$SETUP_CALLS"
case "$*" in
  "-c import torch") exit 0 ;;
  *"pip show -q torchvision"*) exit 1 ;;
  *"pip install"*) echo "Collecting dagster"; echo "{NOISE}" >&2 ;;
  *"rag_assets.embedding.prepare"*)
    echo "{NOISE}" >&2
    if [ "$SETUP_FAILS" = prepare ]; then
      echo "Traceback (most recent call last):" >&2
      echo "RuntimeError: the export broke" >&2
      exit 3
    fi
    echo "$HOME/.cache/rag_assets/onnx/model" ;;
  *) echo "UserWarning: importing something" >&2 ;;
esac
"""
# Stand-ins for the system packages' checks and installers, whatever this machine has.
TOOL = '#!/usr/bin/env bash\necho "$(basename "$0") $*" >> "$SETUP_CALLS"\necho "Reading lists"\n'


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def run_setup(tmp_path: Path, fails: str = "") -> subprocess.CompletedProcess:
    repo = tmp_path / "repo"
    for name in ("scripts/setup.sh", "pyproject.toml", "constraints.txt"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, repo / name)
    executable(repo / ".venv" / "bin" / "python", PYTHON)
    tools = tmp_path / "bin"
    for tool in ("chromium", "apt-get", "sudo"):
        executable(tools / tool, TOOL)
    env = {
        **os.environ,
        "PATH": f"{tools}:{os.environ['PATH']}",
        "SETUP_CALLS": str(tmp_path / "calls"),
        "SETUP_FAILS": fails,
    }
    return subprocess.run(
        ["bash", str(repo / "scripts" / "setup.sh")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_setup_prints_one_line_per_stage_then_environment_ready(tmp_path):
    done = run_setup(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(line.startswith("rag_assets: ") for line in lines), lines
    assert "rag_assets: installing rag_assets and its pinned stack" in lines
    assert "rag_assets: exporting the embedding model to ONNX" in lines
    assert lines[-1] == "rag_assets: environment ready in .venv"
    assert done.stderr == ""
    calls = (tmp_path / "calls").read_text()
    assert "-m rag_assets.embedding.prepare" in calls  # it ran, and said nothing


def test_a_failing_stage_prints_its_output_and_exits_with_its_status(tmp_path):
    done = run_setup(tmp_path, fails="prepare")
    assert done.returncode == 3
    assert "RuntimeError: the export broke" in done.stderr and NOISE in done.stderr
    assert "rag_assets: failed (exporting the embedding model to ONNX), exit status 3" in (
        done.stderr
    )
    assert "environment ready" not in done.stdout
