"""The raw record: the file as it landed, copied out of the inbox so later steps read a fixed copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pydantic import BaseModel

from rag_assets.errors import DocumentError
from rag_assets.settings.limits import DocumentLimits
from rag_assets.sources.formats import detect_format, mime_type
from rag_assets.sources.inbox import sha256_file
from rag_assets.sources.keys import check_partition_key
from rag_assets.sources.limits import ARCHIVE_FORMATS, check_archive, check_pages
from rag_assets.sources.paths import inside


class RawDocument(BaseModel):
    doc_id: str  # the partition key
    source_path: str  # relative to the inbox: what citations show
    stored_path: str  # the immutable copy later layers read
    sha256: str
    size_bytes: int
    file_format: str
    mime_type: str
    page_count: int | None = None


def _pdf_page_count(path: Path) -> int | None:
    # PyMuPDF takes a second to load: only when a PDF lands.
    import pymupdf

    try:
        with pymupdf.open(path) as pdf:
            return pdf.page_count
    except Exception:  # the parser reports what is wrong with the PDF, with context
        return None


def check_size(source: Path, relative_path: str, max_mb: float) -> None:
    """Refuse a file over `max_mb` megabytes (10^6 bytes) before anything reads it."""
    size = source.stat().st_size
    if size > max_mb * 1e6:
        raise DocumentError(
            f"{relative_path}: {size / 1e6:,.0f} MB is over the {max_mb:g} MB limit "
            "(RAG_ASSETS_MAX_FILE_MB); not parsed"
        )


def check_document(
    source: Path,
    relative_path: str,
    max_mb: float | None = None,
    limits: DocumentLimits | None = None,
) -> tuple[str, int | None]:
    """The file's format and page count, once its size (up to `max_mb`, if given), type and
    what it expands to or costs (`limits`, if given) are within bounds; DocumentError if not.
    Checked before a parser sees the file, whoever is about to parse it."""
    if max_mb is not None:
        check_size(source, relative_path, max_mb)
    file_format = detect_format(source)
    if limits is not None and file_format in ARCHIVE_FORMATS:
        check_archive(source, relative_path, limits, file_format)
    page_count = _pdf_page_count(source) if file_format == "pdf" else None
    if limits is not None:
        check_pages(page_count, relative_path, limits)
    return file_format, page_count


def _replace_copy(source: Path, relative_path: str, sha256: str, target_dir: Path) -> None:
    """The file's copy put in place whole: made and checked beside the folder, then swapped in,
    so another run of the same document (two launched at once) never reads a half-made or
    removed copy."""
    staged = target_dir.with_name(f".{target_dir.name}.{os.getpid()}.staged")
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    shutil.copyfile(source, staged / source.name)
    if sha256_file(staged / source.name) != sha256:
        shutil.rmtree(staged)
        raise OSError(f"{relative_path}: the file changed while it was being copied; retry")
    if target_dir.exists():
        shutil.rmtree(target_dir, ignore_errors=True)
    try:
        os.replace(staged, target_dir)
    except OSError:
        # Another run of the document put its copy there meanwhile: the same bytes, or its own.
        shutil.rmtree(staged, ignore_errors=True)
        if not (target_dir / source.name).is_file():
            raise


def capture_raw_document(
    source: Path,
    relative_path: str,
    doc_id: str,
    raw_dir: Path,
    max_mb: float | None = None,
    limits: DocumentLimits | None = None,
) -> RawDocument:
    """Check the file (`check_document`) and copy it under `raw_dir/<doc_id>/`, replacing any
    older copy; a copy of the same bytes already there is kept."""
    target_dir = inside(raw_dir, check_partition_key(doc_id))
    file_format, page_count = check_document(source, relative_path, max_mb, limits)
    sha256 = sha256_file(source)
    stored = inside(target_dir, source.name)
    if not (stored.is_file() and sha256_file(stored) == sha256):
        _replace_copy(source, relative_path, sha256, target_dir)
    return RawDocument(
        doc_id=doc_id,
        source_path=relative_path,
        stored_path=str(stored),
        sha256=sha256,
        size_bytes=stored.stat().st_size,
        file_format=file_format,
        mime_type=mime_type(source, file_format),
        page_count=page_count,
    )
