"""bench/throughput.py's command line: which files `--set financebench-dev` and `--files` pick,
and the one-line refusals, with the bench copied where no ../shared is beside it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets_tests.conftest import REPO_ROOT

BENCH_MODULES = ("throughput.py", "step_usage.py", "generated_corpus.py")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout holding bench/ and nothing beside it: its ../shared is tmp_path/shared."""
    bench = tmp_path / "repo" / "bench"
    bench.mkdir(parents=True)
    for name in BENCH_MODULES:
        shutil.copy(REPO_ROOT / "bench" / name, bench / name)
    return tmp_path / "repo"


def run_bench(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, str(checkout / "bench" / "throughput.py"), *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_financebench_without_shared_is_one_line(checkout: Path) -> None:
    result = run_bench(checkout, "--set", "financebench-dev", "--files", "1")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(checkout.resolve().parent / "shared" / "financebench-dev" / "pdfs") in lines[0]
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--files", "0"), "--files must be at least 1"),
        (("--set", "financebench-dev", "--parts", "parse"), "runs the parts e2e and script"),
        (("--set", "fixtures"), "invalid choice: 'fixtures'"),
    ],
)
def test_refused_arguments(checkout: Path, args: tuple[str, ...], message: str) -> None:
    result = run_bench(checkout, *args)
    assert result.returncode == 2
    assert message in result.stderr


def test_files_takes_the_first_filings_by_name(checkout: Path) -> None:
    pdfs = checkout.parent / "shared" / "financebench-dev" / "pdfs"
    pdfs.mkdir(parents=True)
    for name in ("VERIZON_2022_10K.pdf", "3M_2018_10K.pdf", "NIKE_2018_10K.pdf", "notes.txt"):
        (pdfs / name).write_bytes(b"")
    spec = importlib.util.spec_from_file_location(
        "throughput", checkout / "bench" / "throughput.py"
    )
    throughput = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(throughput)
    try:
        assert pdfs.resolve() == throughput.FILINGS
        assert [f.name for f in throughput.filings(2)] == ["3M_2018_10K.pdf", "NIKE_2018_10K.pdf"]
        assert len(throughput.filings(None)) == 3
    finally:
        sys.path.remove(str(checkout / "bench"))
        for name in ("generated_corpus", "step_usage"):
            sys.modules.pop(name, None)


def test_step_figures_are_read_off_the_samples_between_start_and_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = importlib.util.spec_from_file_location(
        "step_usage", REPO_ROOT / "bench" / "step_usage.py"
    )
    step_usage = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "step_usage", step_usage)  # its dataclass looks itself up
    spec.loader.exec_module(step_usage)
    gib = 2**30
    # this process burns 1 CPU s a second; its children 0.5 from t=2 on
    samples = [
        step_usage.Sample(
            at=t, rss=(3 if t == 3 else 1) * gib, own_cpu=t, all_cpu=t + max(0, t - 2) / 2
        )
        for t in range(6)
    ]
    rows = step_usage.step_rows(
        "ingest", {"parse": [(2.5, 3.5)], "embed": [(0.5, 1.0), (4.0, 5.0)]}, samples, pages=10
    )
    by_step = {row["step"]: row for row in rows}
    assert by_step["parse"] == {
        "path": "ingest",
        "step": "parse",
        "runs": 1,
        "seconds": 1.0,
        "cpu_s_per_page": 0.15,
        "of_it_children": 0.05,
        "peak_rss_gib": 3.0,
    }
    assert (
        by_step["embed"]["runs"],
        by_step["embed"]["seconds"],
        by_step["embed"]["peak_rss_gib"],
    ) == (2, 1.5, 1.0)
    assert by_step["embed"]["cpu_s_per_page"] == 0.2  # 1.5 own + 0.5 children over 10 pages
    assert by_step["outside steps"]["seconds"] == 2.5
    assert by_step["whole"]["cpu_s_per_page"] == 0.65  # 5 own + 1.5 children
    assert by_step["outside steps"]["cpu_s_per_page"] == 0.3
