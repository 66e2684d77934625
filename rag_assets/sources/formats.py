"""File formats: named by extension, confirmed by the first bytes."""

from __future__ import annotations

import re
from pathlib import Path

from rag_assets.errors import DocumentError
from rag_assets.sources.encoding import bom_encoding

FORMAT_BY_SUFFIX = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".md": "md",
    ".markdown": "md",
    ".txt": "txt",
}
# "1 0 obj": the first object of a PDF whose header is damaged.
_PDF_OBJECT = re.compile(rb"\d+\s+\d+\s+obj\b")
MIME_BY_FORMAT = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "html": "text/html",
    "md": "text/markdown",
    "txt": "text/plain",
}


def detect_format(path: Path) -> str:
    """The document's format, or a DocumentError that says what is wrong with the file."""
    file_format = FORMAT_BY_SUFFIX.get(path.suffix.lower())
    if file_format is None:
        supported = ", ".join(sorted(FORMAT_BY_SUFFIX))
        raise DocumentError(f"{path.name}: unsupported file type {path.suffix!r} ({supported})")
    size = path.stat().st_size
    if size == 0:
        raise DocumentError(f"{path.name}: the file is empty (0 bytes)")
    with path.open("rb") as handle:
        head = handle.read(1024)
    if file_format == "pdf" and b"%PDF" not in head and not _PDF_OBJECT.search(head):
        # A header a few bytes in, or damaged, is MuPDF's to repair: the parser says so.
        raise DocumentError(f"{path.name}: named .pdf but is not a PDF (no %PDF header)")
    if file_format == "docx" and not head.startswith(b"PK"):
        raise DocumentError(f"{path.name}: named .docx but is not a Word (zip) document")
    if file_format in ("md", "txt", "html") and b"\x00" in head and not bom_encoding(head):
        raise DocumentError(f"{path.name}: named {path.suffix} but holds binary data")
    return file_format
