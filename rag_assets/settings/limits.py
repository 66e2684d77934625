"""What one document may expand to or cost once read (sources/limits.py checks them)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from rag_assets.settings.base import EnvSettings


class DocumentLimits(EnvSettings):
    """What one document may expand to or cost once read, checked before it is parsed."""

    model_config = SettingsConfigDict(frozen=True)

    max_pages: int = Field(
        5_000, ge=1, description="a PDF with more pages fails before it is parsed"
    )
    max_archive_mb: float = Field(
        500,
        gt=0,
        description=(
            "megabytes a DOCX, PPTX, XLSX, EPUB or ODT may expand to, read from its zip directory "
            "before it is parsed"
        ),
    )
    max_archive_entries: int = Field(
        10_000,
        ge=1,
        description=(
            "entries a DOCX, PPTX, XLSX, EPUB or ODT may hold, read from its zip directory before "
            "it is parsed"
        ),
    )
    max_compression_ratio: float = Field(
        100,
        gt=1,
        description=(
            "a member over 10 MB packed tighter than this is a decompression bomb (office XML "
            "packs 5 to 40 times)"
        ),
    )
    max_elements: int = Field(
        200_000,
        ge=1,
        description=(
            "a DOCX, ODT or PPTX with more paragraphs fails before it is parsed; an IR with more "
            "elements, before the repairs run"
        ),
    )
