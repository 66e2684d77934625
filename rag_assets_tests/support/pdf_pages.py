"""Some pages of a real PDF read into the IR: a filing's few pages stand in for the whole."""

from __future__ import annotations

from pathlib import Path

from rag_assets.contracts.ir import StandardizedDocument, TableData
from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.parsers.pymupdf import PyMuPDFParser


def pages_ir(pdf: Path, pages: list[int], folder: Path) -> StandardizedDocument:
    """The IR of `pages` (0-based) of `pdf`, saved alone under `folder` and parsed."""
    import pymupdf

    cut = folder / f"{pdf.stem}-{'-'.join(map(str, pages))}.pdf"
    with pymupdf.open(pdf) as source:
        source.select(pages)
        source.save(cut)
    return pymupdf_to_ir(PyMuPDFParser().parse(cut), doc_id=pdf.stem, source_sha256="0" * 64)


def tables_of(doc: StandardizedDocument) -> list[TableData]:
    return [e.table for e in doc.elements if e.table is not None]


def table_rows(doc: StandardizedDocument) -> list[list[str]]:
    """Every row of every table of `doc`, in order."""
    return [row for table in tables_of(doc) for row in table.grid()]
