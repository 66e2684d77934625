"""Long PDFs parsed in page ranges by worker processes, and the layout model's ONNX sessions."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rag_assets.cores import available_cores
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers import layout_model, page_pool
from rag_assets.parsers.layout_model import install_layout_model
from rag_assets.parsers.page_pool import (
    MIN_RANGE_PAGES,
    MIN_SPLIT_PAGES,
    RANGES_PER_WORKER,
    WorkerDied,
    page_ranges,
    run_in_workers,
)
from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets.parsers.routing import ParserRouter
from rag_assets.settings import Settings

WORDS = [
    "queue",
    "buffer",
    "command",
    "status",
    "register",
    "transfer",
    "timing",
    "host",
    "device",
    "error",
    "recovery",
]


@pytest.fixture(scope="module", autouse=True)
def _stop_workers() -> Iterator[None]:
    yield
    page_pool.shutdown()


@pytest.mark.parametrize("pages", [1, 3, MIN_SPLIT_PAGES - 1, MIN_SPLIT_PAGES, 17, 50, 1000])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_page_ranges_cover_the_document_in_order(pages: int, workers: int) -> None:
    ranges = page_ranges(pages, workers)
    assert [p for r in ranges for p in r] == list(range(pages))
    if workers == 1 or pages < MIN_SPLIT_PAGES:
        assert len(ranges) == 1
    else:
        assert 1 < len(ranges) <= workers * RANGES_PER_WORKER
        assert min(len(r) for r in ranges) >= MIN_RANGE_PAGES
        assert max(len(r) for r in ranges) - min(len(r) for r in ranges) <= 1


def test_parse_workers_default_to_one_per_core_and_reach_the_pymupdf_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Settings(data_dir=tmp_path).parse_workers == available_cores()
    monkeypatch.setenv("RAG_ASSETS_PARSE_WORKERS", "3")
    workers = Settings.from_env(tmp_path).parse_workers
    assert ParserRouter("pymupdf", parse_workers=workers).parser_for("pymupdf").workers == 3
    with pytest.raises(ConfigurationError, match="parse workers"):
        ParserRouter("pymupdf", parse_workers=0)


@pytest.mark.parametrize(
    ("files", "cores"),
    [
        ({"cpu.max": "max 100000\n"}, None),  # cgroup v2, no quota
        ({"cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs: rounded up
        ({"cpu.max": "100000 100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # v1
        ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),
        ({}, None),  # no cgroup files at all
    ],
)
def test_a_container_cpu_quota_caps_the_cores(
    tmp_path: Path, files: dict[str, str], cores: int | None
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    affinity = len(os.sched_getaffinity(0))
    assert available_cores(tmp_path) == (min(affinity, cores) if cores else affinity)


def _sessions(obj: object, seen: set[int] | None = None) -> list:
    """Every ONNX Runtime session reachable from a pymupdf.layout object."""
    import onnxruntime as ort

    seen = seen if seen is not None else set()
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, ort.InferenceSession):
        return [obj]
    if isinstance(obj, list | tuple):
        return [s for item in obj for s in _sessions(item, seen)]
    if not type(obj).__module__.startswith("pymupdf.layout") or not hasattr(obj, "__dict__"):
        return []
    return [s for value in vars(obj).values() for s in _sessions(value, seen)]


@pytest.mark.slow
def test_layout_model_sessions_use_one_thread_and_do_not_spin() -> None:
    sessions = _sessions(install_layout_model(threads=1))
    # the layout graph network, the page image features, the table grid
    assert len(sessions) >= 3
    arenas = []
    for session in sessions:
        options = session.get_session_options()
        assert options.intra_op_num_threads == 1
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        if options.enable_cpu_mem_arena:
            arenas.append(session)
            assert not options.enable_mem_pattern
    # Only the page image and table crop models, whose inputs are always resized to the
    # same size, keep their allocations; the graph network's inputs vary with the page.
    assert sorted(i.shape[1:] for s in arenas for i in s.get_inputs()) == [
        [1, 300, 300],
        [3, 360, 300],
    ]


@pytest.mark.slow
def test_the_image_model_runs_its_prelus_as_leaky_relus_with_the_same_outputs() -> None:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import pymupdf
    from pymupdf.layout.onnx import BoxRFDGNN

    path = str(Path(BoxRFDGNN.__file__).parents[1] / "resources/onnx/feature_imf1.onnx")
    rewritten = layout_model._with_leaky_relu(onnx.load(path))
    ops = [node.op_type for node in onnx.load_from_string(rewritten).graph.node]
    original_ops = [node.op_type for node in onnx.load(path).graph.node]
    assert "PRelu" not in ops and ops.count("LeakyRelu") == original_ops.count("PRelu") > 20

    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_text((72, 72), "Register map", fontsize=18)
        page.insert_textbox(pymupdf.Rect(72, 100, 520, 700), " ".join(WORDS * 60), fontsize=10)
        pix = page.get_pixmap(dpi=36)
    gray = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)[..., 0]
    image = np.zeros((1, 1, 300, 300), np.float32)
    image[0, 0, : min(300, pix.height), : min(300, pix.width)] = gray[:300, :300] / 255
    outputs = [
        ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input": image})
        for model in (path, rewritten)
    ]
    for before, after in zip(*outputs, strict=True):
        # Fused into the convolutions, the same arithmetic in another order.
        np.testing.assert_allclose(after, before, rtol=0, atol=1e-4)


def _long_report(path: Path, seed: int = 13) -> None:
    """~25 pages: a cover title in the largest font (page 1 only), unnumbered chapter and
    section headings that fall anywhere on a page, sections running over page breaks,
    register tables, and a running footer."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    rng = random.Random(seed)
    styles = getSampleStyleSheet()

    def words(n: int) -> str:
        text = " ".join(rng.choice(WORDS) for _ in range(n))
        return text[0].upper() + text[1:]

    def footer(canvas, doc) -> None:
        canvas.setFont("Helvetica", 8)
        canvas.drawString(72, 30, f"Controller Reference Manual - page {doc.page}")

    cover = ParagraphStyle("Cover", parent=styles["Title"], fontSize=28, leading=34)
    story = [Paragraph("Controller Reference Manual", cover)]
    for chapter in range(14):
        story.append(Paragraph(f"{words(3)} chapter", styles["Heading1"]))
        for _ in range(3):
            story.append(Paragraph(words(3), styles["Heading2"]))
            for _ in range(rng.randint(2, 5)):
                story.append(Paragraph(words(rng.randint(60, 140)) + ".", styles["BodyText"]))
        if chapter % 3 == 1:
            rows = [["Offset", "Field", "Default"]] + [
                [f"0x{i * 4:02X}", words(1).upper(), f"0x{rng.randrange(256):02X}"]
                for i in range(12)
            ]
            table = Table(rows)
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
            story.append(table)
    SimpleDocTemplate(str(path), pagesize=A4, invariant=1).build(
        story, onFirstPage=footer, onLaterPages=footer
    )


@pytest.mark.slow
def test_split_parse_equals_the_whole_parse(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    _long_report(path)
    whole = PyMuPDFParser(workers=1).parse(path)
    split = PyMuPDFParser(workers=2).parse(path)
    ranges = page_ranges(whole.page_count, 2)
    assert len(ranges) > 2, "the document must be cut into several ranges"

    # The parser's own output, heading levels by font size included, is the same ...
    assert split.native == whole.native
    assert split.notes == whole.notes
    # ... and so is the IR after the adapter and the whole-document repairs.
    a = to_ir(whole, doc_id="report", source_sha256="0" * 64)
    b = to_ir(split, doc_id="report", source_sha256="0" * 64)
    assert b.model_dump() == a.model_dump()

    # What makes the comparison mean something: the cover font is on page 1 only, so a
    # range ranking its own heading fonts would put its chapters at level 1, not 2 ...
    chapters = [e for e in a.elements if e.type == "heading" and e.text.endswith("chapter")]
    assert [e.page_start for e in chapters if e.level == 2] == [e.page_start for e in chapters]
    assert any(e.page_start - 1 not in ranges[0] for e in chapters)
    native_levels = {
        box["header_level"]
        for page in whole.native["layout"]["pages"][ranges[1].start :]
        for box in page["boxes"]
        if box["boxclass"] == "section-header"
    }
    assert 1 not in native_levels
    # ... sections run over the cuts between ranges ...
    first_on_page = {}
    for element in a.elements:
        first_on_page.setdefault(element.page_start, element)
    crossing = [r.start + 1 for r in ranges[1:] if first_on_page[r.start + 1].type != "heading"]
    assert crossing
    # ... tables are found, and the running footer is taken out on every page.
    assert any(e.type == "table" for e in a.elements)
    assert a.metadata["repairs"]["furniture_dropped"] >= whole.page_count - 1


@pytest.mark.slow
def test_a_dead_worker_fails_the_call_and_the_next_call_gets_fresh_workers() -> None:
    with pytest.raises(WorkerDied):
        run_in_workers(2, os._exit, [(1,), (1,)])
    assert run_in_workers(2, pow, [(2, 3), (3, 2)]) == [8, 9]


def _allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 2**20))


@pytest.mark.slow
def test_a_worker_may_not_take_more_memory_than_its_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page_pool.shutdown()  # the limit is set when a worker starts
    monkeypatch.setenv(page_pool.MEMORY_ENV, "3072")
    try:
        with pytest.raises(MemoryError):
            run_in_workers(1, _allocate, [(4096,)])
        assert run_in_workers(1, _allocate, [(64,)]) == [64 * 2**20]  # the same worker goes on
    finally:
        page_pool.shutdown()
    monkeypatch.setenv(page_pool.MEMORY_ENV, "lots")
    with pytest.raises(ConfigurationError, match="RAG_ASSETS_PARSE_MEMORY_MB must be"):
        page_pool.memory_limit_mb()


def test_the_worker_memory_limit_is_the_lowest_of_the_setting_rlimit_and_cgroup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import resource

    from rag_assets.parsers import worker_memory

    setting = page_pool.MEMORY_ENV
    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    monkeypatch.setattr(worker_memory, "cgroup_memory_bytes", lambda: None)
    monkeypatch.setattr(worker_memory.resource, "getrlimit", lambda _: unlimited)
    assert worker_memory.worker_memory_limit(8192.0, setting).describe() == (
        "8,192 MB (RAG_ASSETS_PARSE_MEMORY_MB)"
    )
    inherited = 8_000_000 * 1024  # `ulimit -v 8000000`
    monkeypatch.setattr(worker_memory.resource, "getrlimit", lambda _: (inherited, inherited))
    assert worker_memory.worker_memory_limit(8192.0, setting).describe() == (
        "7,812 MB (the inherited address-space limit, ulimit -v; "
        "RAG_ASSETS_PARSE_MEMORY_MB asks for more)"
    )
    assert worker_memory.worker_memory_limit(4096.0, setting).bound_by == ""
    monkeypatch.setattr(worker_memory, "cgroup_memory_bytes", lambda: 3 * 2**30)
    lowered = worker_memory.worker_memory_limit(None, setting)
    assert (lowered.mb, lowered.bound_by) == (3072, "the memory limit of this process's cgroup")


def test_cgroup_memory_ceilings_are_read_in_either_version(tmp_path: Path) -> None:
    from rag_assets.parsers.worker_memory import cgroup_memory_bytes

    assert cgroup_memory_bytes(tmp_path) is None
    (tmp_path / "memory.max").write_text("max\n")  # v2, no ceiling
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cgroup_memory_bytes(tmp_path) is None
    (tmp_path / "memory.max").write_text("4294967296\n")
    assert cgroup_memory_bytes(tmp_path) == 4 * 2**30
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("2147483648\n")
    assert cgroup_memory_bytes(tmp_path) == 2 * 2**30


def test_a_memory_limit_no_worker_can_start_under_is_one_line_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(page_pool.MEMORY_ENV, "500")
    with pytest.raises(ConfigurationError) as refused:
        page_pool.worker_memory()
    assert str(refused.value) == (
        "parse workers need 1,024 MB of address space to start; they may use 500 MB "
        "(RAG_ASSETS_PARSE_MEMORY_MB)"
    )


def _worker_pids(workers: int) -> set[int]:
    """The pool's worker processes: enough slow jobs that every worker takes one."""
    return set(run_in_workers(workers, _pid_after, [(0.5,)] * workers * 2))


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _gone(pids: set[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_idle_workers_stop_and_the_next_call_starts_fresh_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(page_pool.IDLE_SECONDS_ENV, "3")
    first = _worker_pids(2)
    # A call that outlasts the idle period is not cut short: the clock starts when it ends.
    assert run_in_workers(2, _pid_after, [(4.0,), (4.0,)])
    assert all(psutil.pid_exists(pid) for pid in first)
    assert _gone(first, within=10), "idle workers were not stopped"
    second = _worker_pids(2)
    assert second and not second & first
    # Used again before the period is out, the workers stay.
    time.sleep(1)
    assert run_in_workers(2, pow, [(2, 3), (3, 2)]) == [8, 9]
    time.sleep(1)
    assert all(psutil.pid_exists(pid) for pid in second)
    assert _gone(second, within=10)


def test_idle_period_defaults_to_a_minute_and_refuses_nonsense(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(page_pool.IDLE_SECONDS_ENV, raising=False)
    assert page_pool.idle_timeout() == 60
    monkeypatch.setenv(page_pool.IDLE_SECONDS_ENV, "0")
    assert page_pool.idle_timeout() == 0
    for value in ("-1", "soon", "inf", "nan"):
        monkeypatch.setenv(page_pool.IDLE_SECONDS_ENV, value)
        with pytest.raises(ConfigurationError, match=page_pool.IDLE_SECONDS_ENV):
            page_pool.idle_timeout()


def _copies(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """Where a file lies in the inbox and where its run's fixed copy of it does."""
    inbox, stored = tmp_path / "inbox" / name, tmp_path / "raw" / "doc-1" / name
    for path in (inbox, stored):
        path.parent.mkdir(parents=True)
    return inbox, stored


@pytest.mark.slow
def test_a_parse_read_ahead_from_another_copy_is_taken_and_equals_a_fresh_parse(
    tmp_path: Path,
) -> None:
    inbox, stored = _copies(tmp_path, "report.pdf")
    _long_report(inbox)
    stored.write_bytes(inbox.read_bytes())
    parser = PyMuPDFParser(workers=2)
    fresh = parser.parse(stored)

    assert parser.read_ahead(inbox)
    assert len(page_pool.pending_read_ahead()) == 1
    taken = parser.parse(stored)
    assert page_pool.pending_read_ahead() == []
    # The ranges were parsed from the inbox copy; nothing of that path is left in the output.
    assert taken.model_dump() == fresh.model_dump()
    assert str(inbox) not in taken.model_dump_json()


@pytest.mark.slow
def test_a_short_pdf_read_ahead_is_parsed_by_a_worker_and_equals_its_parse_in_process(
    tmp_path: Path,
) -> None:
    """A short PDF whose run comes later is parsed beside the run before it, as one job."""
    import pymupdf

    inbox, stored = _copies(tmp_path, "note.pdf")
    _long_report(tmp_path / "long.pdf")
    with pymupdf.open(tmp_path / "long.pdf") as long, pymupdf.open() as short:
        short.insert_pdf(long, from_page=0, to_page=MIN_SPLIT_PAGES // 2)
        short.save(stored)
    inbox.write_bytes(stored.read_bytes())
    parser = PyMuPDFParser(workers=2)
    in_process = parser.parse(stored)

    assert parser.read_ahead(inbox, short_too=True)
    [(_, _, ranges)] = page_pool.pending_read_ahead()
    assert ranges == ((tuple(range(MIN_SPLIT_PAGES // 2 + 1)), parser.ocr),), "one job, all pages"
    taken = parser.parse(stored)
    assert page_pool.pending_read_ahead() == [], "the run's parse did not take the read-ahead"
    assert taken.model_dump() == in_process.model_dump()


@pytest.mark.slow
def test_a_read_ahead_of_other_bytes_is_not_taken_and_is_dropped(tmp_path: Path) -> None:
    first, second = tmp_path / "a.pdf", tmp_path / "b.pdf"
    _long_report(first)
    _long_report(second, seed=2)
    parser = PyMuPDFParser(workers=2)
    assert parser.read_ahead(first)
    parsed = parser.parse(second)
    assert parsed.source_path == str(second)
    assert len(page_pool.pending_read_ahead()) == 1, "a.pdf's parse was taken for b.pdf"
    page_pool.drop_read_ahead()
    assert page_pool.pending_read_ahead() == []
    # The workers are free again: the pool is not left counting a call in flight.
    assert run_in_workers(2, pow, [(2, 3), (3, 2)]) == [8, 9]


def test_nothing_is_read_ahead_for_broken_or_non_pdf_files_nor_unasked_for_short_ones(
    tmp_path: Path,
) -> None:
    short = tmp_path / "short.pdf"
    pymupdf = pytest.importorskip("pymupdf")
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "one page")
        doc.save(short)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"not a pdf at all")
    parser = PyMuPDFParser(workers=2)
    assert not parser.read_ahead(short)
    assert not parser.read_ahead(broken)
    assert not parser.read_ahead(broken, short_too=True)
    assert not ParserRouter("auto", parse_workers=2).read_ahead(tmp_path / "notes.md", "md")
    assert page_pool.pending_read_ahead() == []
    # the broken file's own parse still says what is wrong with it
    with pytest.raises(DocumentError, match="not a PDF"):
        parser.parse(broken)


@pytest.mark.slow
def test_a_failed_read_ahead_is_run_again_by_its_call() -> None:
    # pow(0, -1) raises in the worker: the call runs its own jobs, whose outcome it reports.
    page_pool.read_ahead(2, pow, [(0, -1), (0, -1)], key="doc")
    assert run_in_workers(2, pow, [(2, 3), (3, 2)], ahead_key="doc") == [8, 9]
    assert page_pool.pending_read_ahead() == []
    # Taken when it succeeded: the call's own jobs (here different) do not run.
    page_pool.read_ahead(2, pow, [(2, 2), (3, 3)], key="doc")
    assert run_in_workers(2, pow, [(2, 3), (3, 2)], ahead_key="doc") == [4, 27]
    with pytest.raises(ZeroDivisionError):
        run_in_workers(2, pow, [(0, -1)], ahead_key="doc")


def test_workers_end_when_the_process_that_started_them_is_killed() -> None:
    # The parent holds its workers and is then SIGKILLed, as a parse worker over its limit is.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time\n"
            "from rag_assets.parsers.page_pool import run_in_workers\n"
            "print(*run_in_workers(2, os.getpid, [(), ()]), flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert workers, "the workers did not start"
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in workers
    ):
        assert time.monotonic() < deadline, f"workers {workers} outlived their parent"
        time.sleep(0.2)


def _niceness() -> int:
    return os.nice(0)


@pytest.mark.slow
def test_workers_parse_at_a_lower_priority_than_the_run_they_serve() -> None:
    """Read ahead, they take only what the run's own steps leave of the cores."""
    expected = min(os.nice(0) + page_pool.WORKER_NICENESS, 19)
    assert page_pool.run_in_workers(2, _niceness, [(), ()]) == [expected, expected]
