"""Layer 3 output: one row per chunk, with full provenance."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, Field, field_validator

ChunkType = Literal["text", "table", "table_row", "figure", "qa", "clause", "glossary"]


def chunk_id_for(doc_id: str, template: str, chunk_index: int, text: str) -> str:
    """Stable id: the same document, template, position and text give the same id."""
    payload = "\x1f".join([doc_id, template, str(chunk_index), text])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ChunkRow(BaseModel):
    chunk_id: str
    doc_id: str
    source_path: str
    source_sha256: str
    template: str
    chunk_index: int
    text: str  # what a person reads, and embeds by default: the heading line, then the body
    # What BM25 matches (and what is embedded with `embedded_text=context`): title and heading
    # breadcrumb, then `text`.
    context_text: str = ""
    # Ancestors of the chunk's own heading: "/", "/A/", "/A/B/" (the separator is a template option).
    header_path: str = "/"
    headings: list[str] = Field(default_factory=list)  # the full heading stack, own heading last
    chunk_type: ChunkType = "text"
    page_start: int | None = None
    page_end: int | None = None
    start_char: int | None = None  # in the IR markdown
    end_char: int | None = None
    logical_unit: str | None = None
    token_count: int = 0
    metadata: dict = Field(default_factory=dict)  # template fields: question_id, table_name, ...

    @field_validator("header_path")
    @classmethod
    def _header_path_shape(cls, value: str) -> str:
        # Opens and closes with its separator; the chunk checks know which separator it is.
        if not value or value[0].isalnum() or value[0].isspace() or value[0] != value[-1]:
            raise ValueError(f"header_path must look like '/' or '/A/B/', got {value!r}")
        return value
