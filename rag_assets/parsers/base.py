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
    file_format: str  # "pdf" | "docx" | "html" | "md" | "txt"
    page_count: int | None = None
    native: dict = Field(default_factory=dict)  # e.g. DoclingDocument.export_to_dict()
    notes: list[str] = Field(default_factory=list)  # fallbacks and degradations, in words


class Parser(Protocol):
    name: str

    def parse(self, path: Path, file_format: str) -> ParsedDocument: ...
