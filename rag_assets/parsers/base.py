"""Layer 1 contract: a parser only sees the document and returns its own output untouched."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field


class ParsedDocument(BaseModel):
    """The parser's native output, JSON-serializable, plus how it was obtained."""

    parser: str  # "docling" | "pymupdf" | ...
    parser_version: str
    source_path: str
    file_format: str  # "pdf" | "docx" | "html" | "md" | "txt" | "xlsx" | "image" | ...
    page_count: int | None = None
    native: dict = Field(default_factory=dict)  # e.g. DoclingDocument.export_to_dict()
    notes: list[str] = Field(default_factory=list)  # how the document was read, in words
    # What of the document was not read (pages left out, image-only pages without OCR, the
    # parser's own errors): a document with losses lands degraded; notes alone do not.
    losses: list[str] = Field(default_factory=list)


def no_text_reason(parsed: ParsedDocument) -> str:
    """Why a parse yielded no text, for the failure message: whether OCR was tried, and why."""
    ocr_pages = parsed.native.get("ocr_pages") or []
    notes = " ".join(parsed.notes).lower()
    if parsed.file_format not in ("pdf", "image"):
        why = "the file holds no text (OCR applies to PDF pages and images only)"
    elif ocr_pages:
        why = f"OCR ran on pages {ocr_pages} and read nothing legible"
    elif "no ocr engine" in notes:
        why = "OCR not tried: no OCR engine is installed (image-only pages stay empty)"
    elif "ocr not run" in notes:
        why = "OCR not tried: the pages have a text layer, and it holds no legible text"
    elif parsed.parser != "pymupdf":
        why = f"OCR not tried: the {parsed.parser} parser was used without OCR"
    else:
        why = "OCR found no image-only pages to read (blank pages?)"
    return f"no text found in the document: {why}"


class Parser(Protocol):
    name: str

    def parse(self, path: Path, file_format: str) -> ParsedDocument: ...
