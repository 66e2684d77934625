"""Layer 1: an image (PNG, JPEG, TIFF, BMP, GIF, WebP, JBIG2) read by OCR.

The image becomes a PDF with one page per frame, which the PyMuPDF parser reads: its bundled
RapidOCR runs offline. Docling's image pipeline would need its layout and OCR models, which
are not downloaded at run time.
"""

from __future__ import annotations

import tempfile
from io import BytesIO
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from rag_assets.errors import DocumentError
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.pymupdf import PyMuPDFParser

_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I;16"})


class ImageParser:
    name = "pymupdf"

    def __init__(self, pdf_parser: PyMuPDFParser) -> None:
        self.pdf_parser = pdf_parser

    def parse(self, path: Path, file_format: str = "image") -> ParsedDocument:
        if file_format != "image":
            raise DocumentError(f"{path}: the image parser reads images only, not {file_format}")
        with tempfile.TemporaryDirectory(prefix="rag-assets-image-") as folder:
            pdf = Path(folder) / f"{path.stem}.pdf"
            pdf.write_bytes(image_to_pdf(path))
            parsed = self.pdf_parser.parse(pdf, "pdf")
        note = "the image was converted to a PDF (one page per frame) and read by OCR"
        return parsed.model_copy(
            update={
                "source_path": str(path),
                "file_format": "image",
                "notes": [note, *parsed.notes],
            }
        )


def image_to_pdf(path: Path) -> bytes:
    """The image as PDF bytes: by MuPDF, or through Pillow for what MuPDF cannot open (WebP)."""
    # PyMuPDF takes a second to load: only when an image is read.
    import pymupdf

    check_pixel_count(path)
    try:
        with pymupdf.open(path) as image:
            return image.convert_to_pdf()
    except (RuntimeError, ValueError):  # pymupdf.FileDataError and its kin
        pass

    try:
        with Image.open(path) as image:
            png = BytesIO()
            # PNG holds these modes; others (CMYK, YCbCr, ...) are converted first.
            ready = image if image.mode in _PNG_MODES else image.convert("RGB")
            ready.save(png, format="PNG")
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise DocumentError(f"{path} could not be read as an image: {exc}") from exc
    with pymupdf.open(stream=png.getvalue(), filetype="png") as image:
        return image.convert_to_pdf()


def check_pixel_count(path: Path) -> None:
    """Refuse an image whose header promises more pixels than Pillow's decompression-bomb
    limit (~179 million) before anything decodes it: a 1.5 MB PNG of 40,000 x 40,000 pixels
    took MuPDF to 3 GB before it gave up."""

    try:
        with Image.open(path):  # reads the header only
            return
    except Image.DecompressionBombError:
        pass
    except (OSError, UnidentifiedImageError, ValueError):
        return  # not for Pillow (JBIG2, ...): MuPDF reads it, or says why not
    raise DocumentError(
        f"{path.name}: the image is over {2 * Image.MAX_IMAGE_PIXELS:,} pixels, the limit of "
        "an image's decoded size (a decompression bomb, or a scan at an excessive resolution)"
    )
