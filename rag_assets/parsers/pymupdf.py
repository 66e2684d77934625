"""Layer 1: PyMuPDF with its bundled layout models (pymupdf4llm 2.0), fully offline.

The document is parsed once with pymupdf4llm's layout engine and serialized two ways,
both kept as the native output:
- ``layout``: the engine's own JSON (pages -> boxes with class, bbox, text lines and
  spans with fonts, table grids with cell text), minus each page's ``fulltext`` dump,
  which only repeats the text the boxes already carry;
- ``pages``: its ``to_markdown(page_chunks=True)`` output, whose ``page_boxes[i]`` is
  ``layout.pages[p].boxes[i]`` with ``pos`` slicing that box's markdown out of ``text``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rag_assets.errors import DocumentError
from rag_assets.parsers.base import ParsedDocument

logger = logging.getLogger(__name__)

# The PDF spec puts %PDF- in the first 1024 bytes and %%EOF in the last 1024.
_MARKER_WINDOW = 1024
# A page with fewer legible characters than this is treated as an image page worth OCR
# (a scan may still carry a stamped page number or header).
_MIN_TEXT_LAYER_CHARS = 100


class PyMuPDFParser:
    name = "pymupdf"

    def __init__(self, *, ocr: bool = True) -> None:
        # OCR (seconds per page) reads pages that pymupdf4llm's bundled decision model flags
        # and that have no usable text layer; see _ocr_engine.
        self.ocr = ocr

    def parse(self, path: Path, file_format: str = "pdf") -> ParsedDocument:
        if file_format != "pdf":
            raise DocumentError(f"{path}: the pymupdf parser reads PDF only, not {file_format}")
        _check_file_markers(path)
        doc, notes = _open_pdf(path)
        try:
            with _printed_output_to_log():
                return self._parse_open(doc, path, notes)
        finally:
            doc.close()

    def _parse_open(self, doc: Any, path: Path, notes: list[str]) -> ParsedDocument:
        import pymupdf
        import pymupdf.layout  # noqa: F401  (activates the layout models before pymupdf4llm)
        import pymupdf4llm
        from pymupdf4llm.helpers import document_layout
        from pymupdf4llm.ocr import OCRMode

        # MuPDF's and pymupdf4llm's messages go to Python logging, not stdout.
        pymupdf.set_messages(pylogging=True, pylogging_name=__name__)
        ocr_pages: list[int] = []
        skipped: list[int] = []
        engine = _ocr_engine(ocr_pages, skipped) if self.ocr else None
        if self.ocr and engine is None:
            notes.append(
                "OCR requested but no OCR engine is installed; image-only pages stay empty"
            )
        try:
            parsed = document_layout.parse_document(
                doc,
                force_text=True,  # keep text found inside pictures (diagram labels, OCR)
                use_ocr=OCRMode.SELECT_KEEP_OLD if engine else OCRMode.NEVER,
                ocr_function=engine,
            )
        except (RuntimeError, pymupdf.mupdf.FzErrorBase) as exc:
            # MuPDF's own errors (bad page content, broken streams) surface as either type.
            raise DocumentError(
                f"{path}: the PDF is corrupt, a page could not be read: {exc}"
            ) from exc
        # to_json first: to_markdown consumes the text lines it renders (it mutates them).
        layout = json.loads(parsed.to_json())
        for page in layout["pages"]:
            page.pop("fulltext", None)
        pages = json.loads(json.dumps(parsed.to_markdown(page_chunks=True)))
        notes.extend(_page_notes(layout, ocr_pages, skipped))
        return ParsedDocument(
            parser=self.name,
            parser_version=pymupdf.__version__,
            source_path=str(path),
            file_format="pdf",
            page_count=parsed.page_count,
            native={
                "pymupdf4llm_version": pymupdf4llm.__version__,
                "ocr_pages": ocr_pages,
                "ocr_font": _ocr_font_name() if ocr_pages else None,
                "layout": layout,
                "pages": pages,
            },
            notes=notes,
        )


@contextlib.contextmanager
def _printed_output_to_log() -> Iterator[None]:
    """pymupdf4llm and RapidOCR print progress to stdout, which would corrupt `--json` output."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            yield
    finally:
        for line in captured.getvalue().splitlines():
            if line.strip():
                logger.debug("pymupdf4llm: %s", line)


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


def _ocr_engine(ocr_pages: list[int], skipped: list[int]) -> Callable[..., Any] | None:
    """pymupdf4llm's own OCR choice (bundled RapidOCR), run only on pages without a text layer.

    pymupdf4llm also asks for OCR on text pages that carry screenshots or logos; that text
    would only land inside figures, costs seconds per page, and turns logos into headings.
    """
    from pymupdf4llm.helpers.document_layout import select_ocr_function

    engine = select_ocr_function()
    if engine is None:
        return None

    def image_page_engine(page: Any, **kwargs: Any) -> Any:
        if _text_layer_chars(page) >= _MIN_TEXT_LAYER_CHARS:
            skipped.append(page.number + 1)
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
