"""A page region of a PDF as PNG bytes, for a vision model to read."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2 as pdfium

from rag_assets.contracts.ir import BBox
from rag_assets.llm.settings import RENDER_DPI


def render_region(
    pdf_path: Path,
    page_number: int,
    bbox: BBox | None,
    dpi: int = RENDER_DPI,
    margin_pt: float = 12,
) -> bytes:
    """Page `page_number` (1-based) cropped to `bbox` (PDF points, top-left origin) plus a margin.

    The whole page without a bbox, on a rotated page (the IR's boxes are not in the
    rotated frame pdfium renders), or when the box falls outside the page.
    Same inputs give the same bytes, so the image hash can key a cache.
    """

    pdf = pdfium.PdfDocument(str(pdf_path))
    try:
        if not 1 <= page_number <= len(pdf):
            raise ValueError(f"{pdf_path.name}: no page {page_number} (has {len(pdf)})")
        page = pdf[page_number - 1]
        width, height = page.get_size()
        crop = (0.0, 0.0, 0.0, 0.0)
        if bbox is not None and page.get_rotation() == 0:
            x0, y0 = max(bbox[0] - margin_pt, 0.0), max(bbox[1] - margin_pt, 0.0)
            x1, y1 = min(bbox[2] + margin_pt, width), min(bbox[3] + margin_pt, height)
            if x1 > x0 and y1 > y0:
                # pdfium crops by the amount cut from each side: left, bottom, right, top.
                crop = (x0, height - y1, width - x1, y0)
        bitmap = page.render(scale=dpi / 72, crop=crop)
        buffer = io.BytesIO()
        bitmap.to_pil().save(buffer, format="PNG")
        return buffer.getvalue()
    finally:
        pdf.close()
