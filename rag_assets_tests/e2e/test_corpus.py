"""Every file of ../shared/corpus through parse, repairs and every template, each in a worker
process with a time and a memory limit (`corpus_run.py`): no file may crash or break an
invariant, and every file stopped at a limit is named with the reason.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rag_assets.normalize import repairs
from rag_assets.optional import StepFailures
from rag_assets_tests.support.corpus_run import (
    CRASHED,
    FAILED,
    LANDED,
    MEMORY_MB,
    OVER_MEMORY,
    OVER_TIME,
    TIMEOUT_S,
    CorpusFile,
    CorpusRun,
    FileResult,
    Pipeline,
    corpus_files,
    crash_reason,
    raw_message,
    report,
    run_corpus,
)


def problems(run: CorpusRun) -> list[str]:
    """What makes a run fail: crashed files, broken invariants, files stopped without reason."""
    found = [f"crashed: {r.path}: {r.reason}" for r in run.crashed()]
    found += [f"{r.path}: {'; '.join(r.violations)}" for r in run.violating()]
    found += [f"{r.path}: {r.status}, no reason given" for r in run.over_limit() if not r.reason]
    return found


def _check(run: CorpusRun) -> None:
    print(report(run))
    found = problems(run)
    assert not found, f"{len(found)} files crashed or broke an invariant:\n" + "\n".join(found)


@pytest.mark.corpus
@pytest.mark.slow
def test_corpus(shared_corpus: Path) -> None:
    """Every file of the corpus; about 13 minutes on 2 cores."""
    _check(run_corpus(corpus_files(shared_corpus), shared_corpus, _jobs(), TIMEOUT_S, MEMORY_MB))


def _jobs() -> int:
    return min(2, os.cpu_count() or 1)


# --- the harness itself: what it must catch --------------------------------------------------


def _files(*names: str) -> list[CorpusFile]:
    return [CorpusFile(name, "test", 1) for name in names]


def lands(path: Path, relative: str, stage: Callable[[str], None]) -> FileResult:
    return FileResult(relative, "", LANDED)


def raises_on_bad(path: Path, relative: str, stage: Callable[[str], None]) -> FileResult:
    stage("parsing")
    if "bad" in relative:
        raise KeyError("x")  # escapes the runner: the worker dies with it
    return FileResult(relative, "", LANDED)


def misbehaves(path: Path, relative: str, stage: Callable[[str], None]) -> FileResult:
    """Hangs, segfaults or allocates without end, by the file's name."""
    stage(f"parsing {relative}")
    if relative == "hangs":
        time.sleep(600)
    if relative == "segfaults":
        os.kill(os.getpid(), signal.SIGSEGV)
    if relative == "allocates":
        # 640 GB: the MemoryError under the worker's limit escapes and ends the worker.
        blocks = [bytearray(2**26) for _ in range(10_000)]
        return FileResult(relative, "", LANDED, f"{len(blocks)} blocks")
    return FileResult(relative, "", LANDED)


class WithoutFailSoft:
    """The real pipeline with one repair raising KeyError and the repairs' fail-soft removed:
    what the corpus run exists to catch."""

    def __init__(self) -> None:
        self.pipeline: Callable[[Path, str, Callable[[str], None]], FileResult] | None = None

    def __call__(self, path: Path, relative: str, stage: Callable[[str], None]) -> FileResult:
        if self.pipeline is None:

            def broken(elements):
                raise KeyError("x")

            def run(self, step, call, fallback):
                return call()

            repairs.REPAIRS = (("hyphens_joined", broken), *repairs.REPAIRS[1:])
            StepFailures.run = run
            self.pipeline = Pipeline()
        return self.pipeline(path, relative, stage)


def test_a_crash_fails_the_run_naming_the_file(tmp_path: Path) -> None:
    run = run_corpus(_files("a.pdf", "bad.pdf", "c.pdf"), tmp_path, 2, 30, 0, raises_on_bad)
    assert [r.status for r in run.results] == [LANDED, CRASHED, LANDED]
    assert "the worker died" in run.results[1].reason
    with pytest.raises(AssertionError, match=r"crashed: bad\.pdf: .*while parsing"):
        _check(run)


def test_limits_stop_a_file_and_the_next_goes_on(tmp_path: Path) -> None:
    names = ("hangs", "after-hang", "segfaults", "after-crash", "allocates", "after-memory")
    run = run_corpus(_files(*names), tmp_path, 1, 3, 1024, misbehaves)
    status = {r.path: r for r in run.results}
    assert status["hangs"].status == OVER_TIME
    # The reason says where the worker was: the stage, and the frame faulthandler dumped.
    assert "while parsing hangs, in " in status["hangs"].reason
    assert "test_corpus.py" in status["hangs"].reason
    assert status["segfaults"].status == CRASHED
    assert "SIGSEGV" in status["segfaults"].reason
    assert status["allocates"].status == OVER_MEMORY
    assert all(status[n].status == LANDED for n in names if n.startswith("after"))
    assert [problem.split(":")[1] for problem in problems(run)] == [" segfaults"]


def test_a_raw_exception_in_the_real_pipeline_is_a_crash(shared_corpus: Path) -> None:
    name = "docling/tests__data__docx__sources__lorem_ipsum.docx"
    files = [f for f in corpus_files(shared_corpus) if f.path == name]
    run = run_corpus(files, shared_corpus, 1, TIMEOUT_S, MEMORY_MB, WithoutFailSoft())
    assert run.results[0].status == CRASHED
    assert re.fullmatch(
        r"repairing: KeyError: 'x' at rag_assets/normalize/repairs/__init__\.py:\d+ > "
        r"rag_assets_tests/e2e/test_corpus\.py:\d+",
        run.results[0].reason,
    )
    with pytest.raises(AssertionError, match="lorem_ipsum.docx"):
        _check(run)


@pytest.mark.parametrize(
    ("message", "raw"),
    [
        ("a.pdf: the file is empty (0 bytes)", ""),
        ("KeyError: 'x'", "raw exception text"),
        ("a.pdf could not be read as PDF: ValueError: bad xref", "raw exception text"),
        ("<fitz.Document object at 0x7f3a2c>", "raw exception text"),
        ("a.docx: Invalid input tag of type <class 'cython_function'>", "raw exception text"),
        ("'x'", "a bare value, not a reason"),
        ("a.pdf: failed\nTraceback", "multi-line message"),
        ("  ", "empty message"),
    ],
)
def test_raw_messages_are_told_from_reasons(message: str, raw: str) -> None:
    assert raw_message(message) == raw


def test_an_allocation_failure_in_native_code_is_the_memory_limit() -> None:
    """ONNX Runtime wraps its bad_alloc in its own exception: no crash, but out of memory."""
    with pytest.raises(MemoryError, match=r"^RuntimeError: .*std::bad_alloc"):
        crash_reason("parsing pdf", RuntimeError("Status Message: std::bad_alloc"))
    assert crash_reason("parsing pdf", KeyError("x")) == "parsing pdf: KeyError: 'x'"


def test_failures_and_degradations_are_no_problem(tmp_path: Path) -> None:
    run = run_corpus(_files("a", "b"), tmp_path, 1, 30, 0, lands)
    run.results[0].status, run.results[0].reason = FAILED, "a: the file is empty"
    assert problems(run) == []
