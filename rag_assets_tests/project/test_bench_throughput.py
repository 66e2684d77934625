"""bench/throughput.py's command line: which files `--set financebench-dev` and `--files` pick,
and the one-line refusals, with the bench copied where no ../shared is beside it; the per-step
figures and ratios it prints, and the naive script it measures against (run for real)."""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.conftest import REPO_ROOT

BENCH_MODULES = (
    "throughput.py",
    "step_usage.py",
    "generated_corpus.py",
    "pipelines.py",
    "naive_script.py",
    "many_documents.py",
    "embedding_ceiling.py",
    "parse_overlap.py",
)


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
        (("--set", "financebench-dev", "--parts", "parse"), "runs the parts e2e, naive and script"),
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
        for name in (
            "generated_corpus",
            "step_usage",
            "pipelines",
            "many_documents",
            "embedding_ceiling",
            "parse_overlap",
        ):
            sys.modules.pop(name, None)


def load_bench_module(monkeypatch: pytest.MonkeyPatch, name: str):
    """bench/<name>.py, importable by the bench modules under its own name while the test runs."""
    monkeypatch.syspath_prepend(str(REPO_ROOT / "bench"))
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


def test_step_figures_are_read_off_the_samples_between_start_and_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step_usage = load_bench_module(monkeypatch, "step_usage")
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
    # a step between two samples shows the memory sampled just before it
    short = step_usage.step_rows("script", {"chunk": [(3.2, 3.3)]}, samples, pages=10)
    assert short[0]["peak_rss_gib"] == 3.0


def test_side_by_side_divides_ingest_by_the_naive_script_and_by_the_straight_script(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step_usage = load_bench_module(monkeypatch, "step_usage")
    samples = [step_usage.Sample(at=t, rss=2**30, own_cpu=t, all_cpu=t) for t in range(11)]
    paths = {  # wall seconds, chunks, spans, samples
        "ingest": (30.0, 40, {"parse": [(0, 5)]}, samples),
        "naive": (10.0, 20, {"parse": [(0, 5)]}, samples),
        "script": (20.0, 40, {"parse": [(0, 5)]}, samples),
    }
    ratios = [("ingest", "naive"), ("ingest", "script"), ("ingest", "absent")]
    lines = step_usage.side_by_side(10, paths, ratios).splitlines()
    assert lines[0] == "| | ingest | naive | script | ingest / naive | ingest / script |"
    assert lines[2] == "| wall s | 30.0 | 10.0 | 20.0 | 3.00 | 1.50 |"
    assert lines[5] == "| chunks a page | 4.0 | 2.0 | 4.0 | 2.00 | 1.00 |"


def test_samples_from_opens_at_the_start_with_the_cpu_interpolated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step_usage = load_bench_module(monkeypatch, "step_usage")
    samples = [step_usage.Sample(at=t, rss=t, own_cpu=2 * t, all_cpu=3 * t) for t in range(4)]
    trimmed = step_usage.samples_from(samples, 1.5)
    assert trimmed[0] == step_usage.Sample(at=1.5, rss=1, own_cpu=3.0, all_cpu=4.5)
    assert [s.at for s in trimmed[1:]] == [2, 3]


def test_naive_script_imports_nothing_of_ours() -> None:
    tree = ast.parse((REPO_ROOT / "bench" / "naive_script.py").read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {name.split(".")[0] for name in imported} == {
        "__future__",
        "docx",
        "json",
        "sys",
        "time",
        "pathlib",
        "pymupdf4llm",
        "pymilvus",
        "sentence_transformers",
    }


def test_naive_script_windows_overlap_and_end_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    naive_script = load_bench_module(monkeypatch, "naive_script")
    text = "".join(chr(ord("a") + i % 26) for i in range(2500))
    found = naive_script.windows(text)
    assert [len(w) for w in found] == [1000, 1000, 900]  # from 0, 800 and 1,600
    assert found[1][:200] == found[0][-200:]
    assert found[-1] == text[1600:]
    assert naive_script.windows("x" * 1000) == ["x" * 1000]
    assert naive_script.windows("  \n ") == []


def test_naive_path_indexes_every_window_and_times_each_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """bench/naive_script.py for real in its own process on two generated pages: every window
    of pymupdf4llm's Markdown is a row of the Milvus Lite file, and each step has its span."""
    from pymilvus import MilvusClient

    pipelines = load_bench_module(monkeypatch, "pipelines")
    generated_corpus = load_bench_module(monkeypatch, "generated_corpus")
    naive_script = load_bench_module(monkeypatch, "naive_script")
    pdf = generated_corpus.write_corpus(tmp_path / "corpus", pages=2, pages_per_doc=2)[0]
    seconds, chunks, spans, samples, tokens = pipelines.naive_path([pdf], tmp_path / "naive")

    import pymupdf4llm

    assert chunks == len(naive_script.windows(pymupdf4llm.to_markdown(str(pdf)))) > 1
    assert chunks * 3 < tokens <= chunks * 256  # cut at MiniLM's 256 word pieces
    assert set(spans) == {"load model", "parse", "chunk", "embed", "index"}
    assert all(len(found) == 1 for step, found in spans.items() if step != "load model")
    assert samples[0].at <= spans["load model"][0][0] and spans["index"][0][1] <= samples[-1].at
    assert 0 < seconds <= samples[-1].at - samples[0].at
    client = MilvusClient(str(tmp_path / "naive" / "milvus.db"))
    try:
        stored = client.query("documents", filter="id >= 0", output_fields=["file"])
    finally:
        client.close()
    assert len(stored) == chunks and {row["file"] for row in stored} == {pdf.name}


def test_busy_cores_are_read_off_each_cores_ticks_between_samples(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step_usage = load_bench_module(monkeypatch, "step_usage")

    def sample(at: float, cores: tuple) -> object:
        return step_usage.Sample(at=at, rss=0, own_cpu=0, all_cpu=0, cores=cores)

    # (busy, total) ticks a core: 0-1 both busy, 1-2 one, 2-3 none, 3-3.01 no tick yet
    samples = [
        sample(0, ((0, 0), (0, 0))),
        sample(1, ((9, 10), (8, 10))),
        sample(2, ((19, 20), (10, 20))),
        sample(3, ((20, 30), (11, 30))),
        sample(3.01, ((20, 30), (11, 30))),
        sample(4, ((30, 40), (21, 40))),
    ]
    intervals = step_usage.busy_intervals(samples)
    assert intervals == [(0, 1, 2), (1, 2, 1), (2, 3, 0), (3, 4, 2)]  # the tickless one merged
    assert step_usage.busy_seconds(intervals, [(0.5, 2.5)], cores=2) == {2: 0.5, 1: 1.0, 0: 0.5}
    rows = step_usage.busy_rows("ingest", {"embed": [(0, 1), (3, 4)]}, samples)
    assert rows[0] == {
        "path": "ingest",
        "step": "embed",
        "seconds": 2.0,
        "2 of 2 cores busy": "100%",
        "1 of 2 cores busy": "0%",
        "0 of 2 cores busy": "0%",
        "path's CPU s / wall s": 0.0,
    }
    assert rows[1]["step"] == "whole" and rows[1]["2 of 2 cores busy"] == "50%"


def test_ceiling_windows_are_exactly_256_word_pieces_of_running_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ceiling = load_bench_module(monkeypatch, "embedding_ceiling")
    ids = list(range(1000, 1600))
    windows = ceiling.token_windows(ids, bookends=[101, 102], count=2)
    assert [len(w) for w in windows] == [256, 256]
    assert windows[0] == [101, *range(1000, 1254), 102]
    assert windows[1][1:-1] == list(range(1254, 1508))
    with pytest.raises(SystemExit):
        ceiling.token_windows(ids, bookends=[101, 102], count=3)


def test_the_ceiling_is_the_best_cell_and_the_ingest_is_set_against_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ceiling = load_bench_module(monkeypatch, "embedding_ceiling")
    cell = {"runs": 4, "seconds": 3.0}
    grid = [
        {"threads": 1, "side_by_side": 1, "batch": 8, **cell, "tokens_per_s": 2000},
        {"threads": 2, "side_by_side": 1, "batch": 8, **cell, "tokens_per_s": 4000},
        {"threads": 1, "side_by_side": 2, "batch": 8, **cell, "tokens_per_s": 3900},
        {"threads": 2, "side_by_side": 1, "batch": 32, **cell, "tokens_per_s": 4000},
    ]
    assert ceiling.best(grid) is grid[1]
    ingest = {"threads": 1, "side_by_side": 2, "batch": 8}
    report = ceiling.ceiling_report({"grid": grid, "ingest": ingest, "runtime": "openvino-bf16"})
    assert "| 2 | 1 | 8 | 4 | 3.0 | 4000 | best |" in report
    assert "| 1 | 2 | 8 | 4 | 3.0 | 3900 | the ingest's settings |" in report
    assert report.endswith(
        "ceiling: 4,000 word pieces/s on openvino-bf16 (threads a batch 2, 1 side by side, "
        "batch 8, "
        "256 word pieces a text)"
    )

    # two steps: the first embedded two documents and records its 10 s on both
    records = [
        {
            "run_id": "r1",
            "step_key": "s",
            "encode_seconds": 10.0,
            "embedded_tokens": 15_000,
            "padding_tokens": 1_000,
        },
        {
            "run_id": "r1",
            "step_key": "s",
            "encode_seconds": 10.0,
            "embedded_tokens": 5_000,
            "padding_tokens": 1_000,
        },
        {
            "run_id": "r2",
            "step_key": "s",
            "encode_seconds": 5.0,
            "embedded_tokens": 10_000,
            "padding_tokens": 0,
        },
    ]
    tally = ceiling.encode_tally(records)
    assert tally == ceiling.EncodeTally(tokens=30_000, padding=2_000, encode_seconds=15.0)
    assert ceiling.embedding_figures(4000, 10, tally.tokens, 15.0, tally.padding) == {
        "word pieces embedded": "30,000",
        "word pieces a page": "3,000",
        "padding (share of the positions run)": "2,000 (6.2%)",
        "encode seconds (naive script: its embed step)": "15.0",
        "word pieces/s while encoding": "2,000",
        "share of the ceiling": "50%",
    }
    flag = ceiling.encode_tally([{"run_id": "r1", "step_key": "s", "encode_seconds": 3.0}])
    assert (flag.tokens, flag.padding, flag.encode_seconds) == (None, None, 3.0)
    table = ceiling.embedding_report(
        {"grid": grid}, 10, {"ingest": (None, 3.0, None), "naive": (8_000, 4.0, None)}
    ).splitlines()
    assert table[0] == "|  | ingest | naive |"
    assert "| word pieces/s while encoding | not counted | 2,000 |" in table
    assert "| padding (share of the positions run) | not counted | not counted |" in table


def test_beside_parse_windows_hold_four_chunks_words_cut_at_the_ceilings_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    beside = load_bench_module(monkeypatch, "embedding_beside_parse")
    counter = ApproxTokenCounter()
    texts = [" ".join(f"c{n}w{i}" for i in range(100)) for n in range(6)]
    windows = beside.ceiling_windows(texts, counter)
    assert len(windows) == 2  # chunks 0-3, then 4-5
    assert [counter.count(w) for w in windows] == [254, 200]
    assert windows[0].startswith("c0w0 c0w1") and windows[0].endswith("c2w53")
    assert windows[1] == f"{texts[4]} {texts[5]}"
