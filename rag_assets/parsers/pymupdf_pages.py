"""pymupdf4llm's layout parse of some pages of a PDF: what a parse worker (page_pool.py) runs,
or the calling process for a short PDF. The whole-document passes run in pymupdf.py once the
ranges are joined."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rag_assets.errors import DocumentError
from rag_assets.parsers.layout_model import install_layout_model
from rag_assets.parsers.table_geometry import read_table_geometry

# MuPDF's messages open with its error code; some name only the file, which says nothing.
_MUPDF_CODE = re.compile(r"^code=\d+:\s*")
_MUPDF_GENERIC = ("Failed to open file", "Cannot open empty file")
# A page with fewer legible characters than this is treated as an image page worth OCR
# (a scan may still carry a stamped page number or header).
MIN_TEXT_LAYER_CHARS = 100


@dataclass
class PageRange:
    """pymupdf4llm's parse of some pages of a PDF, before the whole-document passes."""

    document: Any  # pymupdf4llm's ParsedDocument holding only these pages
    ocr_pages: list[int]  # 1-based pages read by OCR
    text_layer_chars: dict[int, int]  # each page OCR was asked for: its legible characters
    ocr_engine: bool  # whether an OCR engine was there to ask
    messages: list[str]  # what MuPDF, pymupdf4llm and RapidOCR printed
    plain_text_pages: list[int]  # 1-based pages whose text the layout parse dropped, read plain
    geometry_failures: list[str]  # pages whose tables' rules and cut words were not read, why


def parse_page_range(path: str, pages: list[int], ocr: bool, threads: int = 1) -> PageRange:
    """pymupdf4llm's layout parse of `pages` (0-based) of the PDF at `path`.

    Runs in a parse worker or in the calling process. What depends on other pages (heading
    levels ranked by font size here, running headers and numbering in the IR repairs)
    runs after the ranges are joined.
    """
    # PyMuPDF takes a second to load: only in a process that reads a PDF.
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
                with _no_link_lookup():
                    parsed = document_layout.parse_document(
                        doc,
                        pages=pages,
                        force_text=True,  # keep text found inside pictures (diagram labels, OCR)
                        use_ocr=OCRMode.SELECT_KEEP_OLD if engine else OCRMode.NEVER,
                        ocr_function=engine,
                    )
                plain = _plain_text_fallback(doc, parsed.pages)
                geometry_failures = read_table_geometry(doc, parsed.pages)
    except (RuntimeError, pymupdf.mupdf.FzErrorBase) as exc:
        # MuPDF's own errors (bad page content, broken streams) surface as either type.
        where = (
            f"page {pages[0] + 1}" if len(pages) == 1 else f"pages {pages[0] + 1}-{pages[-1] + 1}"
        )
        raise DocumentError(
            f"{path}: the PDF is corrupt, {where} could not be read{mupdf_reason(exc)}"
        ) from None
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
        plain_text_pages=plain,
        geometry_failures=geometry_failures,
    )


@contextlib.contextmanager
def _no_link_lookup() -> Iterator[None]:
    """pymupdf4llm keeps each page's URI links and never reads them back, nor does the
    adapter; the lookup walks the page's annotations, which on some broken files never ends."""
    # PyMuPDF takes a second to load: only in a process that reads a PDF.
    import pymupdf

    get_links = pymupdf.Page.get_links
    pymupdf.Page.get_links = lambda page, *args, **kwargs: []
    try:
        yield
    finally:
        pymupdf.Page.get_links = get_links


def _plain_text_fallback(doc: Any, pages: list[Any]) -> list[int]:
    """Pages whose text layer the layout parse dropped entirely (it keeps horizontal lines
    only: vertical CJK columns, a page turned by its /Rotate) get their text blocks as plain
    text boxes; the 1-based numbers of those pages."""
    # PyMuPDF takes a second to load: only in a process that reads a PDF.
    from pymupdf4llm.helpers.document_layout import FLAGS, LayoutBox

    read = []
    for page_layout in pages:
        if any(box_has_text(box.table, box.textlines) for box in page_layout.boxes):
            continue
        page = doc[page_layout.page_number - 1]  # rotation removed by the parse, like its boxes
        if _text_layer_chars(page) == 0:
            continue
        for number, block in enumerate(page.get_text("dict", flags=FLAGS)["blocks"]):
            lines = [
                {
                    "bbox": line["bbox"],
                    "spans": [{**span, "line": i, "block": number} for span in line["spans"]],
                }
                for i, line in enumerate(block.get("lines", ()))
                if any(span["text"].strip() for span in line["spans"])
            ]
            if lines:
                box = LayoutBox(*block["bbox"], boxclass="text", textlines=lines)
                box.max_fontsize = round(max(s["size"] for line in lines for s in line["spans"]))
                page_layout.boxes.append(box)
        read.append(page_layout.page_number)
    return read


def mupdf_reason(exc: Exception) -> str:
    """MuPDF's own reason, without its error code, when it says more than the file's name."""
    reason = _MUPDF_CODE.sub("", str(exc).strip().split("\n")[0])
    return "" if not reason or reason.startswith(_MUPDF_GENERIC) else f" (MuPDF: {reason})"


def _ocr_engine(ocr_pages: list[int], chars: dict[int, int]) -> Callable[..., Any] | None:
    """pymupdf4llm's own OCR choice (bundled RapidOCR), run only on pages without a text layer.

    pymupdf4llm also asks for OCR on text pages that carry screenshots or logos; that text
    would only land inside figures, costs seconds per page, and turns logos into headings.
    """
    # PyMuPDF takes a second to load: only in a process that reads a PDF.
    from pymupdf4llm.helpers.document_layout import select_ocr_function

    engine = select_ocr_function()
    if engine is None:
        return None

    def image_page_engine(page: Any, **kwargs: Any) -> Any:
        chars[page.number + 1] = _text_layer_chars(page)
        if chars[page.number + 1] >= MIN_TEXT_LAYER_CHARS:
            return None
        ocr_pages.append(page.number + 1)
        return engine(page, **kwargs)

    return image_page_engine


def _text_layer_chars(page: Any) -> int:
    """Legible characters in the page's own text (U+FFFD marks glyphs without a mapping)."""
    return sum(1 for ch in page.get_text("text") if not ch.isspace() and ch != "\ufffd")


def box_has_text(table: dict | None, textlines: list[dict] | None) -> bool:
    if table:
        return True
    return any(span["text"].strip() for line in textlines or () for span in line["spans"])
