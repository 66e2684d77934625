"""What one document may cost before it is parsed: limits a file's size alone does not bound.

A 91 KB DOCX can hold 19 MB of XML (500,000 empty paragraphs) that a parser expands into
gigabytes; a PDF of 20,000 empty pages parses for half an hour. Each limit is checked on what
the file says of itself (a zip's directory, a PDF's page count) before a parser sees it, and a
document over one fails alone, naming the limit and its setting.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from rag_assets.errors import DocumentError
from rag_assets.settings.limits import DocumentLimits

# Formats stored as zip archives of XML (and media).
ARCHIVE_FORMATS = frozenset({"docx", "pptx", "xlsx", "xlsm", "epub", "odt"})
# A member this large that packs this tightly is a decompression bomb, not a document: office
# XML packs 5 to 30 times; 500,000 empty paragraphs pack 200 times.
_BOMB_MEMBER_BYTES = 10_000_000


def check_archive(path: Path, relative_path: str, limits: DocumentLimits) -> None:
    """Refuse an archive-based document whose directory promises too much once expanded."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # not a readable zip: the parser says what is wrong with the file
    if len(members) > limits.max_archive_entries:
        raise DocumentError(
            f"{relative_path}: {len(members):,} archive entries, over the limit of "
            f"{limits.max_archive_entries:,} (RAG_ASSETS_MAX_ARCHIVE_ENTRIES); not parsed"
        )
    expanded = sum(member.file_size for member in members)
    if expanded > limits.max_archive_mb * 1e6:
        raise DocumentError(
            f"{relative_path}: expands to {expanded / 1e6:,.0f} MB, over the "
            f"{limits.max_archive_mb:g} MB limit (RAG_ASSETS_MAX_ARCHIVE_MB); not parsed"
        )
    for member in members:
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > _BOMB_MEMBER_BYTES and ratio > limits.max_compression_ratio:
            raise DocumentError(
                f"{relative_path}: {member.filename} expands {ratio:,.0f} times "
                f"({member.file_size / 1e6:,.0f} MB), over the limit of "
                f"{limits.max_compression_ratio:g} (RAG_ASSETS_MAX_COMPRESSION_RATIO); not parsed"
            )


def check_pages(page_count: int | None, relative_path: str, limits: DocumentLimits) -> None:
    if page_count is not None and page_count > limits.max_pages:
        raise DocumentError(
            f"{relative_path}: {page_count:,} pages, over the limit of {limits.max_pages:,} "
            "(RAG_ASSETS_MAX_PAGES); not parsed"
        )


def check_elements(count: int, source_path: str, limits: DocumentLimits) -> None:
    if count > limits.max_elements:
        raise DocumentError(
            f"{source_path}: {count:,} elements, over the limit of {limits.max_elements:,} "
            "(RAG_ASSETS_MAX_ELEMENTS)"
        )
