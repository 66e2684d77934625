"""What one document may cost before it is parsed: limits a file's size alone does not bound.

A 91 KB DOCX can hold 19 MB of XML (500,000 empty paragraphs) that a parser expands into
gigabytes; a PDF of 20,000 empty pages parses for half an hour. Each limit is checked on what
the file says of itself (a zip's directory, a PDF's page count, the paragraphs its XML parts
hold) before a parser sees it, and a document over one fails alone, naming the limit and its
setting.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from rag_assets.errors import DocumentError
from rag_assets.settings.limits import DocumentLimits

# Formats stored as zip archives of XML (and media).
ARCHIVE_FORMATS = frozenset({"docx", "pptx", "xlsx", "xlsm", "epub", "odt"})
# A member this large that packs this tightly is a decompression bomb, not a document: office
# XML packs 5 to 30 times; 500,000 empty paragraphs pack 200 times.
_BOMB_MEMBER_BYTES = 10_000_000
# The parts that hold a format's paragraphs, and a paragraph's start tag in them: each becomes
# at least one element of the IR once parsed.
_PARAGRAPHS = {
    "docx": (re.compile(r"word/(document|footnotes|endnotes)\.xml"), re.compile(rb"<w:p[\s>/]")),
    "odt": (re.compile(r"content\.xml"), re.compile(rb"<text:[ph][\s>/]")),
    "pptx": (re.compile(r"ppt/slides/slide\d+\.xml"), re.compile(rb"<a:p[\s>/]")),
}
_READ_BYTES = 2**20
_TAIL_BYTES = 16  # longer than any paragraph tag above


def check_archive(
    path: Path, relative_path: str, limits: DocumentLimits, file_format: str = ""
) -> None:
    """Refuse an archive-based document whose directory promises too much once expanded, or
    (DOCX, ODT, PPTX) whose parts hold more paragraphs than the IR may have elements."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            _check_expansion(members, relative_path, limits)
            if file_format in _PARAGRAPHS:
                count = count_paragraphs(archive, file_format)
                if count > limits.max_elements:
                    raise DocumentError(
                        f"{relative_path}: {count:,} paragraphs, over the limit of "
                        f"{limits.max_elements:,} elements (RAG_ASSETS_MAX_ELEMENTS); not parsed"
                    )
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # not a readable zip: the parser says what is wrong with the file


def count_paragraphs(archive: zipfile.ZipFile, file_format: str) -> int:
    """The paragraph start tags in the format's text parts, read a block at a time."""
    parts, tag = _PARAGRAPHS[file_format]
    count = 0
    for name in archive.namelist():
        if not parts.fullmatch(name):
            continue
        with archive.open(name) as part:
            tail = b""
            while block := part.read(_READ_BYTES):
                # The last bytes read go before the next block, so a tag the block's end cuts is
                # found whole; a match ending within them was counted with the block before.
                text = tail + block
                count += sum(1 for m in tag.finditer(text) if m.end() > len(tail))
                tail = text[-_TAIL_BYTES:]
    return count


def _check_expansion(
    members: list[zipfile.ZipInfo], relative_path: str, limits: DocumentLimits
) -> None:
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
