"""The read-only subcommands exit cleanly after their output, also when the reader leaves early.

`chunks --json` once aborted at exit (rc 134, "terminate called without an active exception")
after printing everything: Arrow's reader was given Python file objects and could still be
closing one on its pool thread while the interpreter shut down (about 1 run in 40 here).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

CLI = str(Path(sys.executable).with_name("rag-assets"))
SECTIONS = 300  # `chunks --json` then writes well past a pipe's 64 KiB buffer


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    from rag_assets.runner.ingest import ingest
    from rag_assets.settings import Settings

    root = tmp_path_factory.mktemp("cli_exit")
    document = root / "harbour.md"
    document.write_text(
        "# Harbour log\n\n"
        + "\n\n".join(
            f"## Berth {n}\n\nBerth {n} took the ore carrier number {n * 7} on a rising tide, "
            f"and its crane {n % 9} unloaded {n * 130} tonnes before the evening shift."
            for n in range(1, SECTIONS + 1)
        )
    )
    data = root / "data"
    (outcome,) = ingest(Settings.from_env(data), [document])
    assert outcome.success, outcome.summary()
    return data


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "times"),
    [(("chunks", "--json"), 8), (("query", "--json", "ore carrier crane"), 3), (("status",), 3)],
)
def test_a_subcommand_exits_0_every_time(data_dir, args, times):
    for _ in range(times):
        done = run(*args, "--data-dir", str(data_dir))
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip(), "nothing printed"
        if "--json" in args:
            json.loads(done.stdout)
        assert "Traceback" not in done.stderr and "terminate called" not in done.stderr


@pytest.mark.slow
def test_a_reader_leaving_early_ends_it_quietly_with_the_sigpipe_status(data_dir):
    # As `rag-assets chunks --json | head -1`: one line read, then the pipe closed.
    child = subprocess.Popen(
        [CLI, "chunks", "--json", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout.readline() == b"[\n"
    child.stdout.close()  # before the rest of the output, over 64 KiB, could fit in the pipe
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=300) == 128 + signal.SIGPIPE
    assert stderr == ""
