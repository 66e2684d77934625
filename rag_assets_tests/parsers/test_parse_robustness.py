"""Documents nobody picked: each lands, degraded where it must be, or fails alone in one line.

Every case is made here (a clone without ../shared runs them all); the real files of the
robustness corpus that showed each defect are read too when ../shared/corpus is there.
"""

from __future__ import annotations

import codecs
import io
import os
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rag_assets.errors import DocumentError
from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers import isolation, page_pool
from rag_assets.parsers import pymupdf as pymupdf_parser
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.files import MAX_NESTING_DEPTH, check_nesting_depth, read_document_bytes
from rag_assets.parsers.isolation import DOCUMENT_TIMEOUT_ENV
from rag_assets.parsers.page_pool import PAGE_TIMEOUT_ENV, TimedOut, run_in_workers
from rag_assets.parsers.plaintext import PlainTextParser
from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets.parsers.pymupdf_pages import parse_page_range
from rag_assets.parsers.routing import ParserRouter
from rag_assets.sources.formats import detect_format
from rag_assets_tests.conftest import SHARED_CORPUS

PARAGRAPH = "The controller keeps a queue of pending requests and serves them in order."


@pytest.fixture(scope="module", autouse=True)
def _stop_workers() -> Iterator[None]:
    yield
    page_pool.shutdown()


def _corpus(name: str) -> Path:
    path = SHARED_CORPUS / name
    if not path.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path} is missing; CI runs with shared/ beside the checkout")
        pytest.skip(f"{path} is absent (the corpus sits beside the checkout)")
    return path


def _ir(parsed: ParsedDocument):
    return to_ir(parsed, doc_id="doc", source_sha256="0" * 64)


def _pdf(path: Path, pages: list[str]) -> Path:
    import pymupdf

    with pymupdf.open() as doc:
        for text in pages:
            doc.new_page().insert_text((72, 100), text, fontsize=11)
        doc.save(path)
    return path


# --- every library call on a file is inside the error handling ----------------------------


def test_a_page_tree_mupdf_cannot_count_is_refused_in_words(tmp_path: Path) -> None:
    # MuPDF opens it, then raises "code=7: Invalid number of pages" when the pages are counted.
    path = tmp_path / "count.pdf"
    path.write_bytes(
        b"%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n"
        b"2 0 obj <</Type /Pages /Kids [3 0 R] /Count 9999999999>> endobj\n"
        b"3 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]>> endobj\n"
        b"trailer <</Root 1 0 R>>\n%%EOF\n"
    )
    with pytest.raises(DocumentError, match=r"corrupt and cannot be opened") as raised:
        PyMuPDFParser().parse(path)
    message = str(raised.value)
    assert "\n" not in message and "code=" not in message and "RuntimeError" not in message
    assert not PyMuPDFParser(workers=2).read_ahead(path)


@pytest.mark.parametrize(
    "name", ["pdfjs/test__pdfs__poppler-67295-0.pdf", "pdfjs/test__pdfs__poppler-742-0-fuzzed.pdf"]
)
def test_corpus_pdfs_mupdf_cannot_open_are_refused_in_words(name: str) -> None:
    with pytest.raises(DocumentError, match="cannot be opened") as raised:
        PyMuPDFParser().parse(_corpus(name))
    assert "\n" not in str(raised.value) and "code=" not in str(raised.value)


def _docx_with_comments(path: Path) -> Path:
    """A Word document whose body holds XML comments, as some tools write them."""
    import docx

    document = docx.Document()
    document.add_heading("Maintenance schedule", level=1)
    document.add_paragraph(PARAGRAPH)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Part", "Interval"
    table.cell(1, 0).text, table.cell(1, 1).text = "Filter", "Monthly"
    buffer = io.BytesIO()
    document.save(buffer)
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == "word/document.xml":
                content = content.replace(b"<w:body>", b"<w:body><!-- a table follows -->")
                content = content.replace(b"<w:tbl>", b"<!-- the grid --><w:tbl>")
            target.writestr(info, content)
    return path


def test_a_docx_with_xml_comments_is_read(tmp_path: Path) -> None:
    path = _docx_with_comments(tmp_path / "commented.docx")
    assert b"<!--" in zipfile.ZipFile(path).read("word/document.xml")
    parsed, _ = ParserRouter("auto").parse(path, "docx")
    texts = " ".join(e.text for e in _ir(parsed).elements)
    assert "Maintenance schedule" in texts and "Monthly" in texts and PARAGRAPH in texts


def test_corpus_docx_files_with_xml_comments_are_read() -> None:
    router = ParserRouter("auto")
    for name in ("contains-pictures", "tables-with-incomplete-rows"):
        path = _corpus(f"unstructured/example-docs__{name}.docx")
        parsed, _ = router.parse(path, "docx")
        assert _ir(parsed).elements


class _Broken:
    name = "plaintext"

    def parse(self, path: Path, file_format: str) -> ParsedDocument:
        raise KeyError(object())


def test_an_unexpected_parser_error_fails_the_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("some text")
    router = ParserRouter("auto")
    router._instances["plaintext"] = _Broken()
    with pytest.raises(DocumentError) as raised:
        router.parse(path, "txt")
    assert str(raised.value) == (
        "notes.txt: the plaintext parser failed on this file (KeyError); see the log for details"
    )


# --- a parse that hangs is stopped by the product itself --------------------------------


def _sleep_deaf(seconds: float, value: str) -> tuple[str, int]:
    """Sleeps deaf to Ctrl-C and to SIGTERM, as MuPDF stuck in native code is."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(seconds)
    return value, os.getpid()


def _command_line(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
        return []


def test_a_job_over_its_time_limit_is_killed_and_the_others_still_run() -> None:
    jobs = [(0.1, "a"), (3600, "hangs"), (0.1, "c"), (0.1, "d")]
    started = time.monotonic()
    results = run_in_workers(2, _sleep_deaf, jobs, time_limits=[30, 2, 30, 30])
    assert time.monotonic() - started < 60
    assert results[1] == TimedOut(2)
    assert [r[0] for i, r in enumerate(results) if i != 1] == ["a", "c", "d"]
    # the pool that held the hung worker is gone; the next call gets fresh workers
    pids = {pid for _, pid in (results[0], results[2], results[3])}
    assert run_in_workers(2, pow, [(2, 3)], time_limits=[30]) == [8]
    stuck = [p for p in psutil.Process().children(recursive=True) if p.pid not in pids]
    # A killed worker the pool has not reaped yet is a zombie: it runs nothing.
    assert all("sleep" not in " ".join(_command_line(p)) for p in stuck)


def test_page_time_limit_defaults_to_a_minute_zero_is_off_and_nonsense_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rag_assets.errors import ConfigurationError

    monkeypatch.delenv(PAGE_TIMEOUT_ENV, raising=False)
    assert page_pool.page_timeout() == 60
    monkeypatch.setenv(PAGE_TIMEOUT_ENV, "0")
    assert page_pool.page_timeout() is None
    monkeypatch.setenv(PAGE_TIMEOUT_ENV, "2.5")
    assert page_pool.page_timeout() == 2.5
    for value in ("-1", "soon", "inf", "nan"):
        monkeypatch.setenv(PAGE_TIMEOUT_ENV, value)
        with pytest.raises(ConfigurationError, match=PAGE_TIMEOUT_ENV):
            page_pool.page_timeout()


# --- a whole-document parse (Docling, Unstructured) runs under the document limits ----------


def _paragraphs_html(path: Path, count: int) -> Path:
    path.write_text(
        "<html><body>"
        + "".join(f"<p>Paragraph {i} says a few words.</p>" for i in range(count))
        + "</body></html>"
    )
    return path


def _table_html(path: Path, side: int) -> Path:
    row = "<tr>" + "<td>x</td>" * side + "</tr>"
    path.write_text(f"<html><body><table>{row * side}</table></body></html>")
    return path


def test_a_docling_parse_over_its_time_is_stopped_and_the_next_document_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    router = ParserRouter("auto")
    good = tmp_path / "good.md"
    good.write_text(f"# Queue\n\n{PARAGRAPH}\n")
    router.parse(good, "md")  # the worker is up: the clock below measures the parse alone
    monkeypatch.setenv(DOCUMENT_TIMEOUT_ENV, "1")
    slow = _paragraphs_html(tmp_path / "slow.html", 20_000)  # ~6 s in Docling here
    started = time.monotonic()
    with pytest.raises(DocumentError) as raised:
        router.parse(slow, "html")
    assert time.monotonic() - started < 20
    assert str(raised.value) == (
        "slow.html: parsing stopped after 1 s, the time limit of a document's parse "
        f"({DOCUMENT_TIMEOUT_ENV})"
    )
    monkeypatch.setenv(DOCUMENT_TIMEOUT_ENV, "60")  # the new worker loads Docling first
    parsed, choice = router.parse(good, "md")
    assert choice.parser == "docling" and PARAGRAPH in str(parsed.native)


def test_a_docling_parse_is_not_in_the_calling_process(tmp_path: Path) -> None:
    """Its memory is the worker's: the caller never loads Docling.

    Checked in a fresh interpreter, since other tests in this process may import Docling.
    """
    path = _paragraphs_html(tmp_path / "long.html", 5_000)
    script = (
        "import sys\n"
        "from rag_assets.parsers import page_pool\n"
        "from rag_assets.parsers.routing import ParserRouter\n"
        f"parsed, _ = ParserRouter('auto').parse({str(path)!r}, 'html')\n"
        "assert 'Paragraph 4999' in str(parsed.native)\n"
        "page_pool.shutdown()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'docling'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_a_docling_parse_over_the_memory_limit_fails_alone_naming_a_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker holds ~1.9 GB of address space once Docling is loaded; this table needs ~0.6 GB
    # more. The allocation that fails ends in a MemoryError, or in Docling's Rust code, which
    # aborts and may hang: the time limit then stops it.
    page_pool.shutdown()
    monkeypatch.setenv(page_pool.MEMORY_ENV, "2300")
    monkeypatch.setenv(DOCUMENT_TIMEOUT_ENV, "60")
    router = ParserRouter("auto")
    with pytest.raises(DocumentError) as raised:
        router.parse(_table_html(tmp_path / "wide.html", 300), "html")
    assert str(raised.value).startswith("wide.html: parsing stopped")
    assert page_pool.MEMORY_ENV in str(raised.value) or DOCUMENT_TIMEOUT_ENV in str(raised.value)
    good = tmp_path / "good.md"
    good.write_text(f"# Queue\n\n{PARAGRAPH}\n")
    assert PARAGRAPH in str(router.parse(good, "md")[0].native)
    page_pool.shutdown()


def test_a_wrapped_memory_error_counts_as_out_of_memory() -> None:
    try:
        try:
            raise MemoryError
        except MemoryError as inner:
            raise ValueError("serializing failed") from inner
    except ValueError as outer:
        assert isolation._out_of_memory(outer)
    assert isolation._out_of_memory(RuntimeError("Error calling function: MemoryError: "))
    assert not isolation._out_of_memory(KeyError("memory"))


def test_document_time_limit_defaults_to_ten_minutes_zero_is_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DOCUMENT_TIMEOUT_ENV, raising=False)
    assert isolation.document_timeout() == 600
    monkeypatch.setenv(DOCUMENT_TIMEOUT_ENV, "0")
    assert isolation.document_timeout() is None


def hangs_on_page_2(path: str, pages: list[int], ocr: bool, threads: int = 1):
    """parse_page_range, except that page 2 never finishes (and ignores Ctrl-C)."""
    if 1 in pages:
        _sleep_deaf(3600, "")
    return parse_page_range(path, pages, ocr, threads)


def test_a_page_that_hangs_is_left_out_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _pdf(tmp_path / "three.pdf", ["First page text.", "Second page.", "Third page text."])
    monkeypatch.setenv(PAGE_TIMEOUT_ENV, "5")
    # Workers import the task by name: the parent hands them this module's function.
    monkeypatch.setattr(pymupdf_parser, "parse_page_range", hangs_on_page_2)
    started = time.monotonic()
    parsed = PyMuPDFParser(ocr=False).parse(path)
    assert time.monotonic() - started < 120
    assert (
        "pages [2] left out: their parse ran over the time limit of 5 s a page "
        f"({PAGE_TIMEOUT_ENV})"
    ) in parsed.losses
    assert [p["page_number"] for p in parsed.native["layout"]["pages"]] == [1, 3]
    texts = [e.text for e in _ir(parsed).elements]
    assert "First page text." in texts and "Third page text." in texts


def hangs(path: str, pages: list[int], ocr: bool, threads: int = 1):
    """parse_page_range on a page that never finishes."""
    _sleep_deaf(3600, "")


def test_a_one_page_pdf_that_hangs_fails_naming_the_page_and_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _pdf(tmp_path / "one.pdf", ["Only page text."])
    monkeypatch.setenv(PAGE_TIMEOUT_ENV, "3")
    monkeypatch.setattr(pymupdf_parser, "parse_page_range", hangs)
    started = time.monotonic()
    with pytest.raises(DocumentError) as raised:
        PyMuPDFParser(ocr=False).parse(path)
    assert time.monotonic() - started < 60
    assert str(raised.value) == (
        f"{path}: parsing stopped, pages [1] ran over the time limit of 3 s a page "
        f"({PAGE_TIMEOUT_ENV})"
    )


def test_a_short_pdf_is_parsed_by_the_workers_when_pages_have_a_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _pdf(tmp_path / "one.pdf", ["Only page text."])
    monkeypatch.setenv(PAGE_TIMEOUT_ENV, "60")
    page_pool.shutdown()
    limited = PyMuPDFParser(ocr=False).parse(path)
    assert psutil.Process().children(), "no worker parsed it"
    monkeypatch.setenv(PAGE_TIMEOUT_ENV, "0")
    in_process = PyMuPDFParser(ocr=False).parse(path)
    assert limited.model_dump() == in_process.model_dump()


@pytest.mark.parametrize(
    "name", ["pdfjs/test__pdfs__bug1978317.pdf", "pdfjs/test__pdfs__issue12810.pdf"]
)
def test_corpus_pdfs_whose_page_takes_minutes_are_stopped(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _corpus(name)
    monkeypatch.setenv(PAGE_TIMEOUT_ENV, "5")
    started = time.monotonic()
    with pytest.raises(DocumentError, match=rf"pages \[1\] ran over .*{PAGE_TIMEOUT_ENV}"):
        PyMuPDFParser().parse(path)
    assert time.monotonic() - started < 120


def test_the_layout_parse_does_not_look_up_links(tmp_path: Path) -> None:
    # The lookup walks the page's annotations; on a corpus PDF it never ends. Nothing reads it.
    import pymupdf

    path = tmp_path / "link.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_text((72, 100), "See the site.")
        page.insert_link(
            {
                "kind": pymupdf.LINK_URI,
                "from": pymupdf.Rect(72, 90, 200, 104),
                "uri": "https://example.org/",
            }
        )
        doc.save(path)
    result = parse_page_range(str(path), [0], False)
    assert result.document.pages[0].links == []
    assert pymupdf.open(path)[0].get_links()  # the library's own method is back


# --- a nesting depth the parsers cannot take is refused first -------------------------


@pytest.mark.parametrize("depth", [20_000, 200_000])
def test_deeply_nested_html_is_refused_fast(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.html"
    path.write_bytes(b"<html><body>" + b"<div>" * depth + b"x" + b"</div>" * depth + b"</body>")
    started = time.monotonic()
    with pytest.raises(DocumentError) as raised:
        ParserRouter("auto").parse(path, "html")
    assert time.monotonic() - started < 5
    assert str(raised.value) == (
        f"deep.html: elements are nested too deeply (more than {MAX_NESTING_DEPTH} levels, "
        "beyond what the parsers can read); flatten the document"
    )


def test_normal_pages_pass_the_depth_check(tmp_path: Path) -> None:
    # End tags left out (<p>, <li>, <td>), comments, scripts with "<" and 50 nested lists.
    paragraphs = b"<p>para" * 5000
    table = b"<table>" + b"<tr><td>a<td>b" * 2000 + b"</table>"
    script = b"<script>for (i=0;i<n;i++) { if (a<b) x = '<div>'; }</script>" * 300
    comment = b"<!-- <div><div><div> -->" * 1000
    lists = b"<ul><li>item" * 50 + b"</ul>" * 50
    page = b"<html><body>" + paragraphs + table + script + comment + lists + b"</body></html>"
    check_nesting_depth(tmp_path / "page.html", page)
    # the same lists nested past the limit are counted, not closed by their items
    deep = b"<ul><li>item" * MAX_NESTING_DEPTH
    with pytest.raises(DocumentError, match="nested too deeply"):
        check_nesting_depth(tmp_path / "page.html", deep)


def test_corpus_html_pages_pass_the_depth_check() -> None:
    _corpus("unstructured/example-docs__example-steelJIS-datasheet-utf-16.html")
    pages = sorted(SHARED_CORPUS.glob("*/*.htm*"))
    for page in pages:
        read_document_bytes(page, "html")  # 35 pages, none refused


# --- PDFs that MuPDF repairs are read and said to be repaired -----------------------------


def _damaged(tmp_path: Path, name: str, damage) -> Path:
    good = _pdf(tmp_path / "good.pdf", [PARAGRAPH, "Second page text."]).read_bytes()
    path = tmp_path / name
    path.write_bytes(damage(good))
    return path


@pytest.mark.parametrize(
    ("name", "damage", "what"),
    [
        ("junk-first.pdf", lambda pdf: b"Some junk before the header\n" + pdf, "bytes before"),
        ("no-eof.pdf", lambda pdf: pdf[: pdf.rindex(b"%%EOF")], "no %%EOF marker"),
        ("no-header.pdf", lambda pdf: b"%\xe2\xe3\xcf\xd3" + pdf[pdf.index(b"\n") :], "no %PDF-"),
        ("truncated.pdf", lambda pdf: pdf[: int(len(pdf) * 0.9)], "no %%EOF marker"),
    ],
)
def test_a_pdf_mupdf_repairs_is_read_with_a_note(tmp_path: Path, name, damage, what) -> None:
    path = _damaged(tmp_path, name, damage)
    assert detect_format(path) == "pdf"
    parsed = PyMuPDFParser(ocr=False).parse(path)
    note = next(n for n in parsed.notes if "repaired it on open" in n)
    assert what in note
    assert PARAGRAPH in " ".join(e.text for e in _ir(parsed).elements)


def test_a_pdf_that_cannot_be_opened_is_still_refused(tmp_path: Path) -> None:
    path = _damaged(tmp_path, "stub.pdf", lambda pdf: pdf[:40])
    with pytest.raises(DocumentError, match="truncated or corrupt .* cannot be opened"):
        PyMuPDFParser().parse(path)
    picture = tmp_path / "picture.pdf"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    with pytest.raises(DocumentError, match="not a PDF"):
        detect_format(picture)


@pytest.mark.parametrize(
    "name",
    [
        "pdfjs/test__pdfs__bug1250079.pdf",
        "pdfjs/test__pdfs__bug1606566.pdf",
        "pdfjs/test__pdfs__issue6069.pdf",
        "pdfjs/test__pdfs__scan-bad.pdf",
        "pdfplumber/tests__pdfs__issue-848.pdf",
    ],
)
def test_corpus_pdfs_mupdf_repairs_land(name: str) -> None:
    path = _corpus(name)
    parsed = PyMuPDFParser().parse(path)
    assert any("repaired it on open" in note for note in parsed.notes)
    assert _ir(parsed).elements


# --- text in any Unicode encoding with a BOM ---------------------------------------------

ENCODINGS = [
    ("utf-8-sig", b""),
    ("utf-16-le", codecs.BOM_UTF16_LE),
    ("utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-32-le", codecs.BOM_UTF32_LE),
    ("utf-32-be", codecs.BOM_UTF32_BE),
]
TEXT = "Grüße from the Zürich office: 东京 and Ελλάδα.\nSecond line.\n"


@pytest.mark.parametrize(("encoding", "bom"), ENCODINGS, ids=[e for e, _ in ENCODINGS])
def test_text_with_a_bom_is_read_in_its_encoding(tmp_path: Path, encoding: str, bom: bytes):
    raw = bom + TEXT.encode(encoding)
    for suffix in ("txt", "md", "html"):
        path = tmp_path / f"doc.{suffix}"
        path.write_bytes(raw)
        assert detect_format(path) == suffix
        data = read_document_bytes(path, suffix)
        assert data.decode("utf-8").lstrip("\ufeff") == TEXT
    parsed = PlainTextParser().parse(tmp_path / "doc.txt")
    assert parsed.native["text"] == TEXT


def test_utf16_html_lands_with_its_text(tmp_path: Path) -> None:
    html = "<html><head><meta charset='utf-16'></head><body><h1>Zürich 东京</h1><p>Grüße.</p>"
    path = tmp_path / "page.html"
    path.write_bytes(codecs.BOM_UTF16_LE + html.encode("utf-16-le"))
    for parser in ("auto", "unstructured"):
        parsed, _ = ParserRouter(parser).parse(path, "html")
        texts = [e.text for e in _ir(parsed).elements]
        assert any("Zürich 东京" in t for t in texts) and any("Grüße." in t for t in texts)


@pytest.mark.parametrize(
    "name",
    [
        "unstructured/example-docs__fake-text-utf-16.txt",
        "unstructured/example-docs__fake-text-utf-32.txt",
        "unstructured/example-docs__example-steelJIS-datasheet-utf-16.html",
    ],
)
def test_corpus_files_with_a_bom_land(name: str) -> None:
    path = _corpus(name)
    file_format = detect_format(path)
    parsed, _ = ParserRouter("auto").parse(path, file_format)
    assert _ir(parsed).elements


# --- vertical and rotated text keeps its words ---------------------------------------------


def test_rotated_and_vertical_text_lands_as_plain_text(tmp_path: Path) -> None:
    import pymupdf

    path = tmp_path / "turned.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 100), "Upright page text.", fontsize=11)
        turned = doc.new_page()  # a page shown turned by a quarter
        turned.insert_text((72, 100), "Text on a turned page.", fontsize=11)
        turned.set_rotation(90)
        vertical = doc.new_page()  # lines running up the page
        vertical.insert_text((300, 600), "Text running up the page.", fontsize=11, rotate=90)
        vertical.insert_text((280, 600), "A second vertical line.", fontsize=11, rotate=90)
        doc.save(path)
    parsed = PyMuPDFParser(ocr=False).parse(path)
    assert (
        "pages [2, 3] read as plain text blocks: the layout parse kept none of their text "
        "(vertical or rotated lines)"
    ) in parsed.notes
    by_page = {}
    for element in _ir(parsed).elements:
        by_page.setdefault(element.page_start, []).append(element.text)
    assert by_page[1] == ["Upright page text."]
    assert by_page[2] == ["Text on a turned page."]
    assert " ".join(by_page[3]).count("Text running up the page.") == 1
    assert "A second vertical line." in " ".join(by_page[3])


@pytest.mark.parametrize(
    "name",
    [
        "pdfjs/test__pdfs__vertical.pdf",
        "pdfjs/test__pdfs__issue11555.pdf",
        "unstructured/example-docs__rotated-page-90.pdf",
    ],
)
def test_corpus_pdfs_with_vertical_or_rotated_text_land(name: str) -> None:
    parsed = PyMuPDFParser().parse(_corpus(name))
    assert any("read as plain text blocks" in note for note in parsed.notes)
    assert _ir(parsed).elements
