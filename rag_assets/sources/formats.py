"""File formats: named by extension, confirmed by the first bytes."""

from __future__ import annotations

import re
from pathlib import Path

from rag_assets.errors import DocumentError
from rag_assets.sources.encoding import bom_encoding

IMAGE_MIME_BY_SUFFIX = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".bmp": "image/bmp",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".jb2": "image/x-jbig2",
}
FORMAT_BY_SUFFIX = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".md": "md",
    ".markdown": "md",
    ".txt": "txt",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
    ".tsv": "tsv",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    ".odt": "odt",
    ".epub": "epub",
    ".eml": "eml",
    ".msg": "msg",
    ".rtf": "rtf",
    **dict.fromkeys(IMAGE_MIME_BY_SUFFIX, "image"),
}
# "1 0 obj": the first object of a PDF whose header is damaged.
_PDF_OBJECT = re.compile(rb"\d+\s+\d+\s+obj\b")
MIME_BY_FORMAT = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "html": "text/html",
    "md": "text/markdown",
    "txt": "text/plain",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "asciidoc": "text/asciidoc",
    "odt": "application/vnd.oasis.opendocument.text",
    "epub": "application/epub+zip",
    "eml": "message/rfc822",
    "msg": "application/vnd.ms-outlook",
    "rtf": "application/rtf",
}
# Binary Office 97-2003 files: every reader installed here would first convert them with
# LibreOffice, which is not installed.
LEGACY_OFFICE = {".doc": ".docx", ".ppt": ".pptx", ".xls": ".xlsx"}

_ZIP_FORMATS = {
    "docx": "a Word",
    "pptx": "a PowerPoint",
    "xlsx": "an Excel",
    "odt": "an OpenDocument",
    "epub": "an EPUB",
}
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Outlook .msg (and every legacy Office file)
_IMAGE_MAGIC = (
    b"\x89PNG",
    b"\xff\xd8\xff",  # JPEG
    b"II*\x00",  # TIFF, little-endian
    b"MM\x00*",  # TIFF, big-endian
    b"BM",
    b"GIF8",
    b"\x97JB2",
)


def detect_format(path: Path) -> str:
    """The document's format, or a DocumentError that says what is wrong with the file."""
    file_format = _format_by_suffix(path)
    size = path.stat().st_size
    if size == 0:
        raise DocumentError(f"{path.name}: the file is empty (0 bytes)")
    with path.open("rb") as handle:
        head = handle.read(1024)
    _confirm_content(path, file_format, head)
    return file_format


def _format_by_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in LEGACY_OFFICE:
        raise DocumentError(
            f"{path.name}: legacy binary Office format {suffix!r} needs LibreOffice to convert, "
            f"which is not installed; save it as {LEGACY_OFFICE[suffix]}"
        )
    file_format = FORMAT_BY_SUFFIX.get(suffix)
    if file_format is None:
        supported = ", ".join(sorted(FORMAT_BY_SUFFIX))
        raise DocumentError(f"{path.name}: unsupported file type {path.suffix!r} ({supported})")
    return file_format


def _confirm_content(path: Path, file_format: str, head: bytes) -> None:
    """A DocumentError when the file's first bytes are not what its name says."""
    if file_format == "pdf" and b"%PDF" not in head and not _PDF_OBJECT.search(head):
        # A header a few bytes in, or damaged, is MuPDF's to repair: the parser says so.
        raise DocumentError(f"{path.name}: named .pdf but is not a PDF (no %PDF header)")
    if file_format in _ZIP_FORMATS and head.startswith(_OLE2_MAGIC):
        raise DocumentError(
            f"{path.name}: named {path.suffix} but is an OLE2 compound file: a password-protected "
            "Office document (remove the password) or a legacy binary one renamed"
        )
    if file_format in _ZIP_FORMATS and not head.startswith(b"PK"):
        kind = _ZIP_FORMATS[file_format]
        raise DocumentError(f"{path.name}: named {path.suffix} but is not {kind} (zip) document")
    if file_format == "msg" and not head.startswith(_OLE2_MAGIC):
        raise DocumentError(f"{path.name}: named .msg but is not an Outlook message")
    if file_format == "rtf" and not head.startswith(b"{\\rtf"):
        raise DocumentError(f"{path.name}: named .rtf but does not start with {{\\rtf")
    if file_format == "image" and not _is_image(head):
        raise DocumentError(f"{path.name}: named {path.suffix} but is not an image")
    if file_format in ("md", "txt", "html") and b"\x00" in head and not bom_encoding(head):
        raise DocumentError(f"{path.name}: named {path.suffix} but holds binary data")
    if file_format in ("csv", "tsv", "asciidoc", "eml") and b"\x00" in head and not _utf16(head):
        raise DocumentError(f"{path.name}: named {path.suffix} but holds binary data")


def mime_type(path: Path, file_format: str) -> str:
    if file_format == "image":
        return IMAGE_MIME_BY_SUFFIX[path.suffix.lower()]
    return MIME_BY_FORMAT[file_format]


def _is_image(head: bytes) -> bool:
    return head.startswith(_IMAGE_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def _utf16(head: bytes) -> bool:
    """UTF-16 text, which its readers decode: a byte-order mark, or, without one, zero bytes
    (the high byte of Latin characters) only at even or only at odd offsets."""
    found = bom_encoding(head)
    if found is not None:
        return found[0].startswith("utf-16")
    return head[0::2].count(0) == 0 or head[1::2].count(0) == 0
