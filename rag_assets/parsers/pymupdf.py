"""Layer 1: PyMuPDF with its bundled layout models (pymupdf4llm 2.0), fully offline.

The document is parsed once with pymupdf4llm's layout engine and serialized two ways,
both kept as the native output:
- ``layout``: the engine's own JSON (pages -> boxes with class, bbox, text lines and
  spans with fonts, table grids with cell text), minus each page's ``fulltext`` dump,
  which only repeats the text the boxes already carry;
- ``pages``: its ``to_markdown(page_chunks=True)`` output, whose ``page_boxes[i]`` is
  ``layout.pages[p].boxes[i]`` with ``pos`` slicing that box's markdown out of ``text``.

A long PDF is parsed in page ranges by worker processes (page_pool.py) and joined here
before the one pass that needs every page: heading levels ranked by font size.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_assets.errors import DocumentError
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.layout_model import install_layout_model
from rag_assets.parsers.page_pool import (
    WorkerDied,
    available_cores,
    page_ranges,
    pending_read_ahead,
    read_ahead,
    run_in_workers,
)
from rag_assets.sources.inbox import sha256_file

logger = logging.getLogger(__name__)

# The PDF spec puts %PDF- in the first 1024 bytes and %%EOF in the last 1024.
_MARKER_WINDOW = 1024
# A page with fewer legible characters than this is treated as an image page worth OCR
# (a scan may still carry a stamped page number or header).
_MIN_TEXT_LAYER_CHARS = 100


class PyMuPDFParser:
    name = "pymupdf"

    def __init__(self, *, ocr: bool = True, workers: int = 1) -> None:
        # OCR (seconds per page) reads pages that pymupdf4llm's bundled decision model flags
        # and that have no usable text layer; see _ocr_engine.
        self.ocr = ocr
        # Worker processes for the page ranges of a long PDF (page_pool.py); 1 = in process.
        self.workers = workers

    def parse(self, path: Path, file_format: str = "pdf") -> ParsedDocument:
        if file_format != "pdf":
            raise DocumentError(f"{path}: the pymupdf parser reads PDF only, not {file_format}")
        _check_file_markers(path)
        doc, notes = _open_pdf(path)
        page_count = doc.page_count
        doc.close()
        jobs = self._jobs(path, page_count)
        if len(jobs) == 1:
            # No worker shares the cores: the model's ONNX sessions may use them all.
            results = [parse_page_range(*jobs[0], threads=available_cores())]
        else:
            try:
                # The file is hashed only when something was read ahead (an ingest of many).
                key = self._ahead_key(path, jobs) if pending_read_ahead() else None
                results = run_in_workers(self.workers, parse_page_range, jobs, key)
            except WorkerDied as error:
                raise DocumentError(
                    f"{path}: parsing stopped, a parse worker died: {error}"
                ) from None
        return self._joined(path, results, notes)

    def read_ahead(self, path: Path) -> bool:
        """Start parsing a long PDF's ranges in the workers now; a later `parse` of a file with
        the same bytes (the run's fixed copy of it) takes the result. False: nothing started
        (a short PDF parses in process; a file that cannot be opened is left to `parse`)."""
        try:
            _check_file_markers(path)
            doc, _ = _open_pdf(path)
        except DocumentError:
            return False
        page_count = doc.page_count
        doc.close()
        jobs = self._jobs(path, page_count)
        if len(jobs) == 1:
            return False
        read_ahead(self.workers, parse_page_range, jobs, self._ahead_key(path, jobs))
        return True

    def _jobs(self, path: Path, page_count: int) -> list[tuple[str, list[int], bool]]:
        return [
            (str(path), list(pages), self.ocr) for pages in page_ranges(page_count, self.workers)
        ]

    @staticmethod
    def _ahead_key(path: Path, jobs: list[tuple[str, list[int], bool]]) -> tuple:
        """The same bytes parsed the same way, wherever the file lies."""
        return ("pymupdf", sha256_file(path), tuple((tuple(p), ocr) for _, p, ocr in jobs))

    def _joined(self, path: Path, results: list[PageRange], notes: list[str]) -> ParsedDocument:
        import pymupdf
        import pymupdf4llm

        for result in results:
            for line in result.messages:
                logger.debug("pymupdf4llm: %s", line)
        parsed = results[0].document
        parsed.filename = str(path)  # a range read ahead was opened from another copy
        parsed.pages = [page for result in results for page in result.document.pages]
        _whole_document_header_levels(parsed.pages)
        ocr = _ocr_record(results, self.ocr)
        # to_json first: to_markdown consumes the text lines it renders (it mutates them).
        layout = json.loads(parsed.to_json())
        for page in layout["pages"]:
            page.pop("fulltext", None)
        pages = json.loads(json.dumps(parsed.to_markdown(page_chunks=True)))
        if self.ocr and not ocr["engine"]:
            notes.append(
                "OCR requested but no OCR engine is installed; image-only pages stay empty"
            )
        notes.extend(_page_notes(layout, ocr["ran_on"], [p["page"] for p in ocr["not_run_on"]]))
        return ParsedDocument(
            parser=self.name,
            parser_version=pymupdf.__version__,
            source_path=str(path),
            file_format="pdf",
            page_count=parsed.page_count,
            native={
                "pymupdf4llm_version": pymupdf4llm.__version__,
                "ocr_pages": ocr["ran_on"],
                "ocr_font": _ocr_font_name() if ocr["ran_on"] else None,
                "ocr": ocr,
                "layout": layout,
                "pages": pages,
            },
            notes=notes,
        )


@dataclass
class PageRange:
    """pymupdf4llm's parse of some pages of a PDF, before the whole-document passes."""

    document: Any  # pymupdf4llm's ParsedDocument holding only these pages
    ocr_pages: list[int]  # 1-based pages read by OCR
    text_layer_chars: dict[int, int]  # each page OCR was asked for: its legible characters
    ocr_engine: bool  # whether an OCR engine was there to ask
    messages: list[str]  # what MuPDF, pymupdf4llm and RapidOCR printed


def parse_page_range(path: str, pages: list[int], ocr: bool, threads: int = 1) -> PageRange:
    """pymupdf4llm's layout parse of `pages` (0-based) of the PDF at `path`.

    Runs in a parse worker or in the calling process. What depends on other pages (heading
    levels ranked by font size here, running headers and numbering in the IR repairs)
    runs after the ranges are joined.
    """
    import pymupdf
    from pymupdf4llm.helpers import document_layout
    from pymupdf4llm.ocr import OCRMode

    ocr_pages: list[int] = []
    chars: dict[int, int] = {}
    # Printed output would corrupt `--json` on stdout (and a worker's goes to the terminal):
    # it is handed back for the caller to log.
    captured = io.StringIO()
    pymupdf.set_messages(stream=captured)
    try:
        with contextlib.redirect_stdout(captured):
            install_layout_model(threads)
            engine = _ocr_engine(ocr_pages, chars) if ocr else None
            with pymupdf.open(path, filetype="pdf") as doc:
                parsed = document_layout.parse_document(
                    doc,
                    pages=pages,
                    force_text=True,  # keep text found inside pictures (diagram labels, OCR)
                    use_ocr=OCRMode.SELECT_KEEP_OLD if engine else OCRMode.NEVER,
                    ocr_function=engine,
                )
    except (RuntimeError, pymupdf.mupdf.FzErrorBase) as exc:
        # MuPDF's own errors (bad page content, broken streams) surface as either type.
        raise DocumentError(f"{path}: the PDF is corrupt, a page could not be read: {exc}") from exc
    finally:
        pymupdf.set_messages(pylogging=True, pylogging_name=__name__)
    for page in parsed.pages:
        # The page's raw text dump: read while parsing, never kept, large to send back.
        page.fulltext = None
    return PageRange(
        document=parsed,
        ocr_pages=ocr_pages,
        text_layer_chars=chars,
        ocr_engine=engine is not None,
        messages=[line for line in captured.getvalue().splitlines() if line.strip()],
    )


def _whole_document_header_levels(pages: list[Any]) -> None:
    """pymupdf4llm's heading levels: the document's title/header font sizes, ranked."""
    from pymupdf4llm.helpers.document_layout import update_header_tags

    sizes = {
        box.max_fontsize
        for page in pages
        for box in page.boxes
        if box.boxclass in ("title", "section-header")
    }
    if sizes:
        update_header_tags(pages, sizes)


def _ocr_record(results: list[PageRange], requested: bool) -> dict:
    """Which pages OCR read and which it left, and why (parsed_documents' metadata)."""
    chars = {page: n for result in results for page, n in result.text_layer_chars.items()}
    ran_on = [page for result in results for page in result.ocr_pages]
    engine = all(result.ocr_engine for result in results)
    if not requested:
        why = "OCR is off"
    elif not engine:
        why = "no OCR engine is installed"
    else:
        why = (
            "OCR runs only on pages that pymupdf4llm's OCR model flags and whose text layer "
            f"holds fewer than {_MIN_TEXT_LAYER_CHARS} legible characters"
        )
    return {
        "engine": engine,
        "why": why,
        "ran_on": ran_on,
        # pages the model flagged that keep their text layer, and how much legible text it holds
        "not_run_on": [
            {"page": page, "text_layer_chars": n}
            for page, n in sorted(chars.items())
            if page not in ran_on
        ],
    }


def _check_file_markers(path: Path) -> None:
    """Name the problem before PyMuPDF silently repairs a damaged file."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read the file: {exc}") from exc
    if size == 0:
        raise DocumentError(f"{path}: the file is empty (0 bytes)")
    with path.open("rb") as handle:
        head = handle.read(_MARKER_WINDOW)
        handle.seek(max(0, size - _MARKER_WINDOW))
        tail = handle.read()
    if b"%PDF-" not in head:
        raise DocumentError(f"{path}: not a PDF (no %PDF- header in the first bytes)")
    if b"%%EOF" not in tail:
        raise DocumentError(
            f"{path}: the PDF is truncated or corrupt (no %%EOF marker at the end of the file)"
        )


def _open_pdf(path: Path) -> tuple[Any, list[str]]:
    import pymupdf

    try:
        doc = pymupdf.open(path, filetype="pdf")
    except RuntimeError as exc:  # pymupdf.FileDataError and its kin
        raise DocumentError(f"{path}: the PDF is corrupt and cannot be opened: {exc}") from exc
    # An empty user password is tried on open; needs_pass means a real password is required.
    if doc.needs_pass:
        doc.close()
        raise DocumentError(f"{path}: the PDF is encrypted and needs a password to open")
    if doc.page_count == 0:
        doc.close()
        raise DocumentError(f"{path}: the PDF has no pages")
    notes = []
    if doc.is_repaired:
        notes.append("the PDF's cross-reference table was damaged; PyMuPDF repaired it on open")
    return doc, notes


def _ocr_engine(ocr_pages: list[int], chars: dict[int, int]) -> Callable[..., Any] | None:
    """pymupdf4llm's own OCR choice (bundled RapidOCR), run only on pages without a text layer.

    pymupdf4llm also asks for OCR on text pages that carry screenshots or logos; that text
    would only land inside figures, costs seconds per page, and turns logos into headings.
    """
    from pymupdf4llm.helpers.document_layout import select_ocr_function

    engine = select_ocr_function()
    if engine is None:
        return None

    def image_page_engine(page: Any, **kwargs: Any) -> Any:
        chars[page.number + 1] = _text_layer_chars(page)
        if chars[page.number + 1] >= _MIN_TEXT_LAYER_CHARS:
            return None
        ocr_pages.append(page.number + 1)
        return engine(page, **kwargs)

    return image_page_engine


def _text_layer_chars(page: Any) -> int:
    """Legible characters in the page's own text (U+FFFD marks glyphs without a mapping)."""
    return sum(1 for ch in page.get_text("text") if not ch.isspace() and ch != "\ufffd")


def _ocr_font_name() -> str:
    """The font pymupdf4llm writes OCR text with: how the adapter tells OCR spans apart."""
    from pymupdf4llm.ocr.exec_ocr_interface import FONT

    return FONT.name


def _page_notes(layout: dict, ocr_pages: list[int], skipped: list[int]) -> list[str]:
    notes = []
    if ocr_pages:
        notes.append(f"OCR (RapidOCR, bundled with pymupdf4llm) ran on pages {ocr_pages}")
    if skipped:
        notes.append(f"OCR not run on pages {skipped}: they have a text layer (images stay unread)")
    empty = [page["page_number"] for page in layout["pages"] if not _has_text(page)]
    if empty:
        notes.append(f"pages {empty} yielded no text (blank, or images without OCR)")
    return notes


def _has_text(page: dict) -> bool:
    for box in page["boxes"]:
        if box.get("table"):
            return True
        for line in box.get("textlines") or []:
            if any(span["text"].strip() for span in line["spans"]):
                return True
    return False
