"""Every file of the shared corpus through Layers 1-3, each in a worker process with a time and
a memory limit: a file lands, degrades or fails alone with a one-line reason, and never takes
the run down with it.

A worker parses, adapts, repairs, renders the tables' markdown and chunks with every registered
template (no embedding), checking the invariants of `rag_assets_tests.support.invariants` on the way.
Workers are spawned processes (no state forked from the parent), reused from file to file; one
that overruns its file's time limit is killed, one that dies is replaced, and the next file goes
on. `run_corpus` is shared by `test_corpus.py` and `bench/corpus.py`.
"""

from __future__ import annotations

import csv
import faulthandler
import fnmatch
import itertools
import logging
import multiprocessing
import os
import re
import resource
import signal
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

from rag_assets.embedding.models import EmbeddingSpec
from rag_assets.embedding.selection import select_model
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.normalize.adapt import _adapt, require_content
from rag_assets.normalize.repairs import repair_document
from rag_assets.optional import failure_reason
from rag_assets.parsers.routing import ParserRouter
from rag_assets.sources.formats import detect_format
from rag_assets.sources.inbox import sha256_file
from rag_assets.sources.keys import partition_key_for
from rag_assets.tables.structure import structure_markdown, with_table_markdown
from rag_assets.templates.registry import available_templates, build_template
from rag_assets.templates.select import choose_template
from rag_assets.templates.tokens import TokenizerCounter
from rag_assets_tests.support.invariants import chunk_problems, repair_problems

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

LANDED = "landed"
DEGRADED = "degraded"
FAILED = "failed cleanly"
UNSUPPORTED = "unsupported"
CRASHED = "crashed"
OVER_TIME = "over the time limit"
OVER_MEMORY = "over the memory limit"
STATUSES = (LANDED, DEGRADED, FAILED, UNSUPPORTED, CRASHED, OVER_TIME, OVER_MEMORY)

# Wall-clock seconds a file may take (parse, repairs and every template), and the address space
# of a worker: what it maps, not what it uses. A worker that has loaded Docling, PyMuPDF's layout
# models and RapidOCR maps about 4 GB while holding about 1 GB resident.
TIMEOUT_S = 120.0
MEMORY_MB = 8192

# A failure message a person can act on is one line of words, not an exception's own text.
_RAW_MESSAGE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception|Warning):"  # KeyError: 'x', wrapped as it was raised
    r"|<[\w.]+ object at 0x[0-9a-f]+>|<class '[\w.]+'>"  # a repr
    r"|Traceback \(most recent call last\)"
)
# What native code prints when an allocation fails under the memory limit.
_OUT_OF_MEMORY = re.compile(
    r"bad_alloc|Failed to allocate|Cannot allocate memory|out of memory|MemoryError"
)
# A file the faulthandler dump names, and the frames it lists.
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


@dataclass
class FileResult:
    path: str  # relative to the corpus folder
    kind: str
    status: str = CRASHED
    reason: str = ""  # one line: why it failed, degraded, crashed or was stopped
    violations: list[str] = field(default_factory=list)  # broken invariants, "stage: problem"
    degraded: list[str] = field(default_factory=list)
    parser: str = ""
    pages: int | None = None
    template: str = ""  # the one `auto` chooses
    chunks: dict[str, int] = field(default_factory=dict)  # per template
    seconds: float = 0.0
    cpu_seconds: float | None = None  # the worker's own CPU time: wall time under no load
    peak_rss_mb: float | None = None  # the worker's high-water mark when the file ended


@dataclass
class CorpusRun:
    results: list[FileResult]
    seconds: float
    jobs: int
    timeout_s: float
    memory_mb: int
    token_counter: str

    def counts(self) -> Counter[str]:
        return Counter(r.status for r in self.results)

    def crashed(self) -> list[FileResult]:
        return [r for r in self.results if r.status == CRASHED]

    def over_limit(self) -> list[FileResult]:
        return [r for r in self.results if r.status in (OVER_TIME, OVER_MEMORY)]

    def violating(self) -> list[FileResult]:
        return [r for r in self.results if r.violations]

    def cpu_seconds(self) -> float:
        """CPU time of the files that finished, plus the time limit for each one stopped."""
        return sum(r.cpu_seconds if r.cpu_seconds is not None else r.seconds for r in self.results)

    def peak_rss_mb(self) -> float | None:
        return max((r.peak_rss_mb for r in self.results if r.peak_rss_mb), default=None)


@dataclass(frozen=True)
class CorpusFile:
    path: str  # relative to the corpus folder
    kind: str
    bytes: int


def corpus_files(
    corpus: Path = CORPUS,
    patterns: Sequence[str] = (),
    kinds: Sequence[str] = (),
) -> list[CorpusFile]:
    """The manifest's files, optionally only those matching a glob of `patterns` (on the path
    under the corpus) or of one of `kinds`."""
    with (corpus / "MANIFEST.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    files = [CorpusFile(row["path"], row["kind"], int(row["bytes"])) for row in rows]
    if patterns:
        files = [f for f in files if any(fnmatch.fnmatch(f.path, p) for p in patterns)]
    if kinds:
        files = [f for f in files if f.kind in kinds]
    return files


# --- the worker ----------------------------------------------------------------------------


FileRunner = Callable[[Path, str, Callable[[str], None]], FileResult]


class Pipeline:
    """What a worker builds once and reuses for every file: parser router, token counter and
    the templates' names."""

    def __init__(self) -> None:
        self.router = ParserRouter()
        resolved, _ = select_model(EmbeddingSpec())
        self.counter = TokenizerCounter.from_model_dir(resolved.path, resolved.name)
        self.templates = available_templates()
        # The parsers' libraries take seconds to import: not the first file's time.
        import docling.document_converter  # noqa: F401
        import pymupdf4llm.helpers.document_layout  # noqa: F401

    def __call__(self, path: Path, relative: str, stage: Callable[[str], None]) -> FileResult:
        result = FileResult(relative, "")
        try:
            self._run(path, relative, stage, result)
        except MemoryError as error:
            result.status = OVER_MEMORY
            cause = f": {error}" if error.__cause__ else ""
            result.reason = f"out of memory while {_current(stage)}{cause}"
        return result

    def _run(
        self, path: Path, relative: str, stage: Callable[[str], None], result: FileResult
    ) -> None:
        def failed(error: Exception, status: str = FAILED) -> None:
            message = str(error)
            raw = raw_message(message)
            if raw:
                result.status = CRASHED
                result.reason = f"{_current(stage)}: {raw}: {_one_line(message)}"
            else:
                result.status, result.reason = status, message

        try:
            stage("detecting the format")
            file_format = detect_format(path)
        except DocumentError as error:
            return failed(error, UNSUPPORTED if "unsupported file type" in str(error) else FAILED)
        try:
            stage(f"parsing {file_format}")
            parsed, choice = self.router.parse(path, file_format)
            result.parser, result.pages = choice.parser, parsed.page_count
            stage(f"adapting {choice.parser} output")
            before = _adapt(
                parsed, doc_id=partition_key_for(path.name), source_sha256=sha256_file(path)
            )
            stage("repairing")
            doc = repair_document(before)
        except (DocumentError, ConfigurationError) as error:
            return failed(error)
        except Exception as error:  # what the test is for: any other exception is a crash
            result.reason = crash_reason(_current(stage), error)
            return None
        doc = doc.model_copy(update={"source_path": relative})
        result.violations += [f"repairs: {p}" for p in repair_problems(before.elements, doc)]
        result.degraded += parsed.losses
        result.degraded += doc.metadata.get("degraded", [])
        try:  # as normalized_documents: running headers and footers alone are no content
            require_content(doc, parsed)
        except DocumentError as error:
            return failed(error)
        crashes = []
        try:
            stage("rendering tables")
            doc = with_table_markdown(doc, structure_markdown(doc))
            stage("choosing the template")
            picked = choose_template(doc, "auto")
            result.template = picked.template
            result.degraded += list(picked.degraded)
        except Exception as error:
            result.reason = crash_reason(_current(stage), error)
            return None
        for name in self.templates:
            try:
                stage(f"chunking with {name}")
                template = build_template(name)
                chunks = template.chunk(doc, self.counter)
                stage(f"checking {name} chunks")
                problems = chunk_problems(chunks, doc, template, self.counter)
            except Exception as error:  # every template runs, so one crash hides no other
                crashes.append(crash_reason(_current(stage), error))
                continue
            result.chunks[name] = len(chunks)
            result.violations += [f"{name}: {p}" for p in problems]
            result.degraded += [f"{name}: {n}" for n in template.failures.notes()]
        if crashes:
            more = f" (and {len(crashes) - 1} more)" if len(crashes) > 1 else ""
            result.reason = crashes[0] + more
            return None
        if not result.chunks.get(result.template):
            # As document_chunks: a document with nothing to search fails, saying why.
            return failed(
                DocumentError(
                    f"{relative}: the {result.template} template made no chunks from "
                    f"{len(doc.elements)} elements"
                )
            )
        result.status = DEGRADED if result.degraded else LANDED
        result.reason = "; ".join(result.degraded)
        return None


def raw_message(message: str) -> str:
    """Why `message` is no reason a person can act on, or "" when it is one."""
    if not message.strip():
        return "empty message"
    if "\n" in message.strip():
        return "multi-line message"
    if _RAW_MESSAGE.search(message):
        return "raw exception text"
    if len(message.split()) < 2:
        return "a bare value, not a reason"
    return ""


def crash_reason(stage: str, error: BaseException) -> str:
    """`parsing pdf: KeyError: 'x' at rag_assets/x.py:12 > docling/y.py:34`: the innermost
    frame of the project and the innermost of all, on one line, for grouping by cause.
    Running out of memory is no crash but the memory limit: a MemoryError goes on up."""
    if isinstance(error, MemoryError) or _OUT_OF_MEMORY.search(str(error)):
        # Native code (ONNX Runtime) raises its bad_alloc wrapped in its own exception.
        raise MemoryError(failure_reason(error)) from error
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/rag_assets/" in f.filename]
    where = [f"{_short(f.filename)}:{f.lineno}" for f in (ours[-1:] + frames[-1:])]
    if len(where) == 2 and where[0] == where[1]:
        where.pop()
    return f"{stage}: {failure_reason(error)}" + (f" at {' > '.join(where)}" if where else "")


def _current(stage: Callable[[str], None]) -> str:
    return getattr(stage, "current", "")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(filename: str) -> str:
    """A frame's file from the package root: site-packages/x/y.py -> x/y.py."""
    for marker in ("/site-packages/", "/lib/python"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    for package in ("/rag_assets/", "/rag_assets_tests/"):
        if package in filename:
            return package.strip("/") + "/" + filename.split(package, 1)[1]
    return filename


class _Stage:
    """Tells the parent what the worker is doing, so a killed file says where it was."""

    def __init__(self, connection: Connection, index: int) -> None:
        self.connection, self.index, self.current = connection, index, ""

    def __call__(self, stage: str) -> None:
        self.current = stage
        self.connection.send(("stage", self.index, stage))


def _worker(
    connection: Connection,
    corpus: str,
    memory_mb: int,
    stderr_path: str,
    runner: FileRunner | None,
) -> None:
    """Runs files sent by the parent until it sends None. stderr goes to `stderr_path`, which
    faulthandler also writes to: a traceback when the worker segfaults or overruns its limit."""
    if memory_mb:
        limit = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    stderr = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(stderr, 2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    faulthandler.enable(file=stderr, all_threads=True)
    logging.disable(logging.CRITICAL)  # fail-soft steps log warnings; results carry them
    run = runner or Pipeline()
    connection.send(("ready", -1, None))
    while (job := connection.recv()) is not None:
        index, relative, dump_after = job
        os.ftruncate(stderr, 0)
        os.lseek(stderr, 0, os.SEEK_SET)
        faulthandler.dump_traceback_later(dump_after, file=stderr)
        started, cpu = time.perf_counter(), time.process_time()
        result = run(Path(corpus) / relative, relative, _Stage(connection, index))
        faulthandler.cancel_dump_traceback_later()
        result.seconds = round(time.perf_counter() - started, 2)
        result.cpu_seconds = round(time.process_time() - cpu, 2)
        result.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        connection.send(("done", index, result))


# --- the parent ----------------------------------------------------------------------------


@dataclass
class _Slot:
    process: multiprocessing.Process
    connection: Connection
    stderr_path: Path
    ready: bool = False
    index: int | None = None  # the file it is on
    stage: str = ""
    started: float = 0.0


def run_corpus(
    files: Sequence[CorpusFile],
    corpus: Path = CORPUS,
    jobs: int = 2,
    timeout_s: float = TIMEOUT_S,
    memory_mb: int = MEMORY_MB,
    runner: FileRunner | None = None,
    progress: Callable[[FileResult], None] | None = None,
) -> CorpusRun:
    """Every file in `files` through `runner` (the pipeline) in `jobs` worker processes."""
    context = multiprocessing.get_context("spawn")
    results: dict[int, FileResult] = {}
    pending = list(range(len(files)))
    # Big files first: the long ones overlap with many short ones instead of ending the run.
    pending.sort(key=lambda i: files[i].bytes)
    started = time.perf_counter()
    # The dump comes a little before the kill, so that the stack is in the file when it comes.
    grace_s = min(5.0, timeout_s / 4)
    # A worker's first file also pays for loading the parser's models.
    startup_s = 120.0
    with tempfile.TemporaryDirectory(prefix="corpus-run-") as scratch:
        slots: list[_Slot] = []
        numbers = itertools.count()

        def spawn() -> _Slot:
            parent, child = context.Pipe()
            stderr_path = Path(scratch) / f"worker-{next(numbers)}.stderr"
            process = context.Process(
                target=_worker,
                args=(child, str(corpus), memory_mb, str(stderr_path), runner),
                # Not daemonic: the parser starts its own page workers, as it does in a run.
                daemon=False,
            )
            process.start()
            child.close()
            return _Slot(process, parent, stderr_path, started=time.perf_counter())

        def finish(slot: _Slot, result: FileResult) -> None:
            assert slot.index is not None
            result.kind = files[slot.index].kind
            results[slot.index] = result
            slot.index, slot.stage = None, ""
            if progress:
                progress(result)

        def replace(slot: _Slot, result: FileResult) -> _Slot:
            result.seconds = round(time.perf_counter() - slot.started, 2)
            result.peak_rss_mb = _high_water_mb(slot.process.pid)
            slot.process.kill()
            slot.process.join()
            slot.connection.close()
            finish(slot, result)
            return spawn()

        slots += [spawn() for _ in range(max(1, min(jobs, len(files))))]
        try:
            while len(results) < len(files):
                for slot in slots:
                    if slot.ready and slot.index is None and pending:
                        slot.index = pending.pop()
                        slot.started = time.perf_counter()
                        slot.connection.send((slot.index, files[slot.index].path, timeout_s))
                now = time.perf_counter()
                deadlines = [_deadline(s, timeout_s + grace_s, startup_s) for s in slots]
                ready = wait(
                    [s.connection for s in slots] + [s.process.sentinel for s in slots],
                    timeout=max(0.0, min(deadlines) - now),
                )
                for number, slot in enumerate(slots):
                    if slot.connection in ready:
                        try:
                            kind, index, payload = slot.connection.recv()
                        except EOFError:
                            kind = "died"
                        if kind == "ready":
                            slot.ready = True
                        elif kind == "stage" and time.perf_counter() < slot.started + timeout_s:
                            # Past the limit the stack is dumped: the stage stays the one it shows.
                            slot.stage = payload
                        elif kind == "done":
                            finish(slot, payload)
                        if kind != "died":
                            continue
                    if slot.process.sentinel in ready or not slot.process.is_alive():
                        slots[number] = _dead(slot, files, replace)
                    elif time.perf_counter() > _deadline(slot, timeout_s + grace_s, startup_s):
                        if slot.index is None:
                            raise RuntimeError(f"a worker did not start in {startup_s:.0f} s")
                        path = files[slot.index].path
                        reason = f"over {timeout_s:g} s while {slot.stage}{_where(slot)}"
                        slots[number] = replace(slot, FileResult(path, "", OVER_TIME, reason))
            for slot in slots:
                slot.connection.send(None)
            for slot in slots:
                slot.process.join(timeout=10)
        finally:  # interrupted, or done: no worker outlives the run
            for slot in slots:
                if slot.process.is_alive():
                    slot.process.kill()
    return CorpusRun(
        [results[i] for i in range(len(files))],
        round(time.perf_counter() - started, 1),
        jobs,
        timeout_s,
        memory_mb,
        "a stand-in runner" if runner else "the bundled embedding model's tokenizer",
    )


def _deadline(slot: _Slot, timeout_s: float, startup_s: float) -> float:
    if not slot.ready:
        return slot.started + startup_s
    if slot.index is None:
        return float("inf")
    return slot.started + timeout_s


def _dead(
    slot: _Slot,
    files: Sequence[CorpusFile],
    replace: Callable[[_Slot, FileResult], _Slot],
) -> _Slot:
    """A worker that exited by itself: its file crashed it (or it never started)."""
    slot.process.join()
    code = slot.process.exitcode
    how = f"signal {signal.Signals(-code).name}" if code and code < 0 else f"exit code {code}"
    if slot.index is None:
        raise RuntimeError(f"a worker died before any file ({how}): {_last_line(slot)}")
    reason = f"the worker died ({how}) while {slot.stage}{_where(slot)}"
    status = CRASHED
    if _OUT_OF_MEMORY.search(_stderr(slot)):
        status = OVER_MEMORY  # native code that could not allocate under RLIMIT_AS
    elif code == -signal.SIGKILL:
        reason += " (killed from outside: out of memory?)"
    return replace(slot, FileResult(files[slot.index].path, "", status, reason))


def _stderr(slot: _Slot) -> str:
    try:
        return slot.stderr_path.read_text(errors="replace")
    except OSError:
        return ""


def _where(slot: _Slot) -> str:
    """The innermost project frame and the innermost frame of the worker's main thread, from
    faulthandler's dump (written on a crash or just before the time limit)."""
    text = _stderr(slot)
    # The main thread is the one that runs the worker loop.
    main = next((t for t in text.split("\n\n") if "in _worker" in t), "")
    frames = [m for line in main.splitlines() if (m := _FRAME.match(line))]
    if not frames:
        last = _last_line(slot)
        return f": {last}" if last else ""
    innermost = f"{_short(frames[0]['file'])}:{frames[0]['line']} {frames[0]['func']}"
    ours = next((f for f in frames if "/rag_assets/" in f["file"]), None)
    if ours is None or ours is frames[0]:
        return f", in {innermost}"
    return f", in {_short(ours['file'])}:{ours['line']} {ours['func']} > {innermost}"


def _last_line(slot: _Slot) -> str:
    lines = _stderr(slot).strip().splitlines()
    return _one_line(lines[-1]) if lines else ""


def _high_water_mb(pid: int | None) -> float | None:
    """The process's peak RSS, read before it is killed (Linux)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return round(int(match.group(1)) / 1024, 1) if match else None


# --- the report ----------------------------------------------------------------------------


def table(run: CorpusRun) -> str:
    counts = run.counts()
    header = ["files", *STATUSES, "invariant violations"]
    row = [len(run.results), *(counts[s] for s in STATUSES), len(run.violating())]
    widths = [max(len(h), len(str(v))) for h, v in zip(header, row, strict=True)]
    return "\n".join(
        " | ".join(str(cell).rjust(width) for cell, width in zip(cells, widths, strict=True))
        for cells in (header, row)
    )


def report(run: CorpusRun, slowest: int = 10) -> str:
    """The table, then every crashed, over-limit and violating file with its reason, the
    slowest files and the workers' peak memory."""
    lines = [table(run), ""]
    for title, chosen in (
        ("crashed", run.crashed()),
        ("over a limit", run.over_limit()),
    ):
        if chosen:
            lines.append(f"{title} ({len(chosen)}):")
            lines += [f"  {r.path}: {r.reason}" for r in sorted(chosen, key=_cause)]
    if run.violating():
        lines.append(f"invariant violations ({len(run.violating())} files):")
        for r in run.violating():
            lines.append(f"  {r.path}: {'; '.join(_one_line(v) for v in r.violations[:3])}")
    timed = sorted(
        (r for r in run.results if r.status not in (OVER_TIME, OVER_MEMORY)),
        key=lambda r: r.seconds,
        reverse=True,
    )
    lines.append(f"slowest {min(slowest, len(timed))} files (parse, repairs, every template):")
    for r in timed[:slowest]:
        rate = f"{r.pages / r.seconds:.1f} pages/s" if r.pages and r.seconds else "-"
        cpu = f"{r.cpu_seconds:.1f}" if r.cpu_seconds is not None else "-"
        lines.append(
            f"  {r.seconds:7.1f} s ({cpu:>6} s CPU)  {r.pages or '-':>5} pages  {rate:>14}  "
            f"{r.path}"
        )
    peak = run.peak_rss_mb()
    lines.append(
        f"{len(run.results)} files in {run.seconds:.0f} s with {run.jobs} workers "
        f"(limits {run.timeout_s:g} s and {run.memory_mb} MB a file; {run.cpu_seconds():.0f} "
        f"CPU-seconds); peak worker RSS "
        + (f"{peak:.0f} MB" if peak else "unknown")
        + f"; tokens counted with {run.token_counter}"
    )
    return "\n".join(lines)


def _cause(result: FileResult) -> tuple[str, str]:
    """Sorts files with the same cause together: the reason without the file's own name."""
    return result.reason.replace(result.path, "").replace(Path(result.path).name, ""), result.path


def as_json(run: CorpusRun) -> dict:
    return {
        "seconds": run.seconds,
        "jobs": run.jobs,
        "timeout_s": run.timeout_s,
        "memory_mb": run.memory_mb,
        "token_counter": run.token_counter,
        "counts": dict(run.counts()),
        "files": [asdict(r) for r in run.results],
    }
