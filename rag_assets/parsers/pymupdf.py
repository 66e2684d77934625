"""Layer 1: PyMuPDF with its bundled layout models (pymupdf4llm 2.0), fully offline.

The document is parsed once with pymupdf4llm's layout engine and serialized two ways,
both kept as the native output:
- ``layout``: the engine's own JSON (pages -> boxes with class, bbox, text lines and
  spans with fonts, table grids with cell text), minus each page's ``fulltext`` dump,
  which only repeats the text the boxes already carry;
- ``pages``: its ``to_markdown(page_chunks=True)`` output, whose ``page_boxes[i]`` is
  ``layout.pages[p].boxes[i]`` with ``pos`` slicing that box's markdown out of ``text``.

A long PDF is parsed in page ranges (pymupdf_pages.py) by worker processes (page_pool.py) and
joined here before the one pass that needs every page: heading levels ranked by font size.
With a time limit a page (RAG_ASSETS_PARSE_PAGE_TIMEOUT_S, the default), every PDF is parsed
there, where a page that never finishes can be stopped: the document lands without it, saying so.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from rag_assets.cores import available_cores
from rag_assets.errors import DocumentError
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.page_pool import (
    PAGE_TIMEOUT_ENV,
    TimedOut,
    WorkerDied,
    may_start_workers,
    page_ranges,
    page_timeout,
    pending_read_ahead,
    read_ahead,
    run_in_workers,
    worker_memory,
)
from rag_assets.parsers.pymupdf_pages import (
    MIN_TEXT_LAYER_CHARS,
    PageRange,
    box_has_text,
    mupdf_reason,
    parse_page_range,
)
from rag_assets.sources.inbox import sha256_file

logger = logging.getLogger(__name__)

# The PDF spec puts %PDF- in the first 1024 bytes and %%EOF in the last 1024.
_MARKER_WINDOW = 1024


class PyMuPDFParser:
    name = "pymupdf"

    def __init__(self, *, ocr: bool = True, workers: int = 1) -> None:
        # OCR (seconds per page) reads pages that pymupdf4llm's bundled decision model flags
        # and that have no usable text layer; see pymupdf_pages._ocr_engine.
        self.ocr = ocr
        # Worker processes for the page ranges of a long PDF (page_pool.py); 1 = in process.
        self.workers = workers

    def parse(self, path: Path, file_format: str = "pdf") -> ParsedDocument:
        if file_format != "pdf":
            raise DocumentError(f"{path}: the pymupdf parser reads PDF only, not {file_format}")
        page_count, notes = _open_pdf(path)
        losses: list[str] = []
        jobs = self._jobs(path, page_count)
        limit = page_timeout()
        pending = pending_read_ahead()
        # The file is hashed only when something was read ahead (an ingest of many).
        key = self._ahead_key(path, jobs) if pending else None
        if not may_start_workers():
            # A daemonic process (a multiprocessing pool's worker) may start no processes: the
            # pages are parsed here, without a time limit.
            if limit is not None:
                logger.info("%s: parsed in process, without the page time limit", path.name)
            results = [parse_page_range(*job, threads=available_cores()) for job in jobs]
        elif len(jobs) == 1 and limit is None and key not in pending:
            # No worker shares the cores: the model's ONNX sessions may use them all.
            results = [parse_page_range(*jobs[0], threads=available_cores())]
        else:
            results = self._in_workers(path, jobs, key, limit, losses)
        return self._joined(path, results, notes, losses)

    def _in_workers(
        self,
        path: Path,
        jobs: list[tuple[str, list[int], bool]],
        key: Hashable | None,
        limit: float | None,
        losses: list[str],
    ) -> list[PageRange]:
        """The ranges parsed by the workers (or read ahead under `key`), in order. A range over
        its time (`limit` seconds a page) is parsed again page by page; a page over its own is
        left out, with a note."""
        try:
            results = run_in_workers(
                self.workers,
                parse_page_range,
                jobs,
                key,
                [len(pages) * limit for _, pages, _ in jobs] if limit else None,
            )
            timed_out = [
                job for job, r in zip(jobs, results, strict=True) if isinstance(r, TimedOut)
            ]
            kept = [r for r in results if not isinstance(r, TimedOut)]
            # A range over its time is parsed again a page a job: every page that can be, is read.
            singles = [
                (job[0], [p], job[2]) for job in timed_out if len(job[1]) > 1 for p in job[1]
            ]
            if singles:
                retried = run_in_workers(
                    self.workers, parse_page_range, singles, None, [limit] * len(singles)
                )
                kept += [r for r in retried if not isinstance(r, TimedOut)]
        except WorkerDied as error:
            raise DocumentError(f"{path}: parsing stopped, a parse worker died: {error}") from None
        except MemoryError:
            raise DocumentError(
                f"{path}: parsing stopped, a page needed more than the "
                f"{worker_memory().describe()} a parse worker may use"
            ) from None
        read = {page.page_number for r in kept for page in r.document.pages}
        lost = sorted({p + 1 for job in timed_out for p in job[1]} - read)
        if lost:
            why = f"over the time limit of {limit:g} s a page ({PAGE_TIMEOUT_ENV})"
            if not kept:
                raise DocumentError(f"{path}: parsing stopped, pages {lost} ran {why}")
            losses.append(f"pages {lost} left out: their parse ran {why}")
        return sorted(kept, key=lambda r: r.document.pages[0].page_number)

    def read_ahead(self, path: Path, short_too: bool = False) -> bool:
        """Start parsing the PDF's ranges in the workers now; a later `parse` of a file with
        the same bytes (the run's fixed copy of it) takes the result. A short PDF (one range)
        is started only `short_too`: for a document whose run comes later, as one worker's job
        beside the run before it; the run starting now parses it faster in process, with every
        core. False: nothing started (also a file that cannot be opened: left to `parse`)."""
        try:
            page_count, _ = _open_pdf(path)
        except DocumentError:
            return False
        jobs = self._jobs(path, page_count)
        if len(jobs) == 1 and not short_too:
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

    def _joined(
        self, path: Path, results: list[PageRange], notes: list[str], losses: list[str]
    ) -> ParsedDocument:
        # PyMuPDF takes a second to load: only in a process that reads a PDF.
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
        notes.extend(_page_notes(ocr["ran_on"], [p["page"] for p in ocr["not_run_on"]]))
        blank, unread = _textless_pages(layout, looked=self.ocr and ocr["engine"])
        if blank:
            notes.append(f"pages {blank} have no text")
        if unread:
            losses.append(f"pages {unread} are pictures whose text, if any, was not read (OCR off)")
        plain = [page for result in results for page in result.plain_text_pages]
        if plain:
            notes.append(
                f"pages {plain} read as plain text blocks: the layout parse kept none of their "
                "text (vertical or rotated lines)"
            )
        failures = [failure for result in results for failure in result.geometry_failures]
        if failures:
            logger.warning("%s: table rules not read on %s", path, "; ".join(failures))
            notes.append(
                f"table rules and cut words not read on {len(failures)} pages, their tables "
                f"kept as found ({failures[0]})"
            )
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
                "document_info": _document_info(path, notes),
            },
            notes=notes,
            losses=losses,
        )


def _document_info(path: Path, notes: list[str]) -> dict[str, str]:
    """The PDF's own title, author, subject and keywords (its Info dictionary), those set."""
    # PyMuPDF takes a second to load: only in a process that reads a PDF.
    import pymupdf

    try:
        with pymupdf.open(path) as pdf:
            info = pdf.metadata or {}
    except Exception as error:  # the pages were read; only the Info dictionary is lost
        notes.append(f"file metadata unreadable ({type(error).__name__}: {error})")
        return {}
    fields = ("title", "author", "subject", "keywords")
    return {name: value for name in fields if (value := str(info.get(name) or "").strip())}


def _whole_document_header_levels(pages: list[Any]) -> None:
    """pymupdf4llm's heading levels: the document's title/header font sizes, ranked."""
    # PyMuPDF takes a second to load: only in a process that reads a PDF.
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
            f"holds fewer than {MIN_TEXT_LAYER_CHARS} legible characters"
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


def _damage(path: Path) -> list[str]:
    """What is missing from where the PDF spec puts it: %PDF- in the first 1024 bytes and
    %%EOF in the last 1024. MuPDF may still repair such a file; this names what it repaired."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(_MARKER_WINDOW)
            handle.seek(max(0, size - _MARKER_WINDOW))
            tail = handle.read()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read the file: {exc.strerror or exc}") from exc
    if size == 0:
        raise DocumentError(f"{path}: the file is empty (0 bytes)")
    damage = []
    if b"%PDF-" not in head:
        damage.append("no %PDF- header")
    elif not head.startswith(b"%PDF-"):
        damage.append("bytes before its %PDF- header")
    if b"%%EOF" not in tail:
        damage.append("no %%EOF marker at its end")
    return damage


def _open_pdf(path: Path) -> tuple[int, list[str]]:
    """The PDF's page count and notes on what MuPDF repaired; a DocumentError when it has no
    pages to read (cannot be opened, needs a password, no pages)."""
    # PyMuPDF takes a second to load: only in a process that reads a PDF.
    import pymupdf

    damage = _damage(path)
    try:
        with pymupdf.open(path, filetype="pdf") as doc:
            # An empty user password is tried on open; needs_pass means a real one is required.
            if doc.needs_pass:
                raise DocumentError(f"{path}: the PDF is encrypted and needs a password to open")
            page_count = doc.page_count
            repaired = doc.is_repaired
    except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:
        # pymupdf.FileDataError and its kin; a page tree MuPDF cannot count ("Invalid number
        # of pages") is only found when the pages are counted.
        raise DocumentError(_unreadable(path, damage, exc)) from None
    if page_count == 0:
        if damage and damage[0] == "no %PDF- header":
            raise DocumentError(f"{path}: not a PDF ({'; '.join(damage)}, no pages)")
        found = f" ({'; '.join(damage)}), and MuPDF's repair found none" if damage else ""
        raise DocumentError(f"{path}: the PDF has no pages{found}")
    if repaired or damage:
        damage = damage or ["its cross-reference table is damaged"]
        return page_count, [f"the PDF is damaged ({'; '.join(damage)}); MuPDF repaired it on open"]
    return page_count, []


def _unreadable(path: Path, damage: list[str], exc: Exception) -> str:
    """Why MuPDF could not open the file, in words: its own reason where it gives one."""
    if damage and damage[0] == "no %PDF- header":
        return f"{path}: not a PDF ({'; '.join(damage)}), and MuPDF cannot open it"
    detail = mupdf_reason(exc)
    if damage:
        return f"{path}: the PDF is truncated or corrupt ({'; '.join(damage)}) and cannot be opened{detail}"
    return f"{path}: the PDF is corrupt and cannot be opened{detail}"


def _ocr_font_name() -> str:
    """The font pymupdf4llm writes OCR text with: how the adapter tells OCR spans apart."""
    # PyMuPDF takes a second to load: only in a process that reads a PDF.
    from pymupdf4llm.ocr.exec_ocr_interface import FONT

    return FONT.name


def _page_notes(ocr_pages: list[int], skipped: list[int]) -> list[str]:
    notes = []
    if ocr_pages:
        notes.append(f"OCR (RapidOCR, bundled with pymupdf4llm) ran on pages {ocr_pages}")
    if skipped:
        # Their text was read; only text drawn inside their pictures is not.
        notes.append(f"OCR not run on pages {skipped}: they have a text layer (images stay unread)")
    return notes


def _textless_pages(layout: dict, looked: bool) -> tuple[list[int], list[int]]:
    """Pages that gave no text: (blank ones, or pictures the OCR model found no text to read
    in; pictures that no OCR looked at)."""
    blank, unread = [], []
    for page in layout["pages"]:
        if not _has_text(page):
            pictures = any(box.get("boxclass") == "picture" for box in page["boxes"])
            (unread if pictures and not looked else blank).append(page["page_number"])
    return blank, unread


def _has_text(page: dict) -> bool:
    return any(box_has_text(box.get("table"), box.get("textlines")) for box in page["boxes"])


def _has_text(page: dict) -> bool:
    return any(box_has_text(box.get("table"), box.get("textlines")) for box in page["boxes"])
