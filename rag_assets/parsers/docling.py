"""Layer 1: Docling sees a DOCX, HTML, Markdown, PPTX, XLSX, CSV, AsciiDoc, ODT, EPUB or
e-mail (.eml, .msg) document with its model-free backends (or a PDF, given its models).

Docling is imported inside methods: `docling.document_converter` alone takes ~6 s to import.
"""

from __future__ import annotations

import codecs
import sys
from importlib.metadata import version
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.files import (
    prepare_markdown,
    read_document_bytes,
    strip_docx_comments,
)
from rag_assets.parsers.typography import protect, restore

if TYPE_CHECKING:
    from docling.datamodel.document import ConversionResult
    from docling.document_converter import DocumentConverter

# The file name docling sees decides the backend; .txt is read as Markdown, and a .tsv by the
# CSV backend, which finds the delimiter itself.
_SUFFIXES = {
    "pdf": "pdf",
    "docx": "docx",
    "html": "html",
    "md": "md",
    "txt": "md",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "csv": "csv",
    "tsv": "csv",
    "asciidoc": "adoc",
    "odt": "odt",
    "epub": "epub",
    "eml": "eml",
    "msg": "msg",
}

# Folders docling 2.143 looks for under artifacts_path (checked against docling in the tests):
# the default layout model (repo id with "/" -> "--"), TableFormer, and RapidOCR.
LAYOUT_MODEL_FOLDER = "docling-project--docling-layout-heron"
TABLE_MODEL_FOLDER = "docling-project--docling-models"
OCR_MODEL_FOLDER = "RapidOcr"
_DOWNLOAD_HINT = "docling-tools models download layout tableformer rapidocr -o <artifacts_path>"


class DoclingParser:
    name = "docling"

    def __init__(self, artifacts_path: str | None = None) -> None:
        self.artifacts_path = Path(artifacts_path).expanduser() if artifacts_path else None
        self._converter: DocumentConverter | None = None

    def pdf_models_available(self) -> tuple[bool, str]:
        """Whether the PDF pipeline can run offline; when not, the reason in words."""
        root = self.artifacts_path
        if root is None:
            return False, (
                "no Docling artifacts_path is configured, and its PDF layout model "
                "is not downloaded at run time"
            )
        if not root.is_dir():
            return False, f"the Docling artifacts_path {root} does not exist"
        for folder, what in (
            (LAYOUT_MODEL_FOLDER, "layout model"),
            (TABLE_MODEL_FOLDER, "TableFormer model"),
        ):
            if not (root / folder).is_dir():
                return False, f"{root} has no {folder} folder ({what}); run `{_DOWNLOAD_HINT}`"
        return True, f"layout and table models found under {root}"

    def parse(self, path: Path, file_format: str) -> ParsedDocument:
        if file_format not in _SUFFIXES:
            raise DocumentError(f"{path}: Docling reads {sorted(_SUFFIXES)}, not {file_format!r}")
        if file_format == "pdf":
            available, why_not = self.pdf_models_available()
            if not available:
                raise ConfigurationError(f"cannot parse {path} with Docling: {why_not}")
        data = read_document_bytes(path, file_format)
        if file_format == "docx":
            data = strip_docx_comments(data)
        notes: list[str] = []
        if file_format in ("md", "txt"):
            data, notes = prepare_markdown(data)
        if file_format == "eml" and b"\x00" in data[:1024]:
            # The e-mail parser reads bytes as ASCII/UTF-8: UTF-16 would come out letter by letter.
            data = _utf16_text(data).encode("utf-8")
            notes.append("UTF-16 e-mail decoded")
        if file_format == "html":
            # BeautifulSoup loads only for an HTML file.
            from rag_assets.parsers.page_chrome import prepare_html

            data, chrome = prepare_html(data)
            notes.extend(chrome)
        back: dict[str, str] = {}
        if file_format in ("md", "txt", "html"):
            data, back = _protect_typography(data, file_format)
        result = self._convert(path, file_format, data)
        document = result.document
        return ParsedDocument(
            parser=self.name,
            parser_version=version("docling"),
            source_path=str(path),
            file_format=file_format,
            page_count=len(document.pages) or None,
            native=restore(document.export_to_dict(), back),
            notes=[*self._notes(file_format), *notes],
            losses=[f"docling: {error.error_message}" for error in result.errors],
        )

    def _convert(self, path: Path, file_format: str, data: bytes) -> ConversionResult:
        # Docling takes seconds to load: only when a file is parsed with it.
        from docling.datamodel.base_models import ConversionStatus, DocumentStream
        from docling.exceptions import ConversionError

        unreadable = f"{path} could not be read as {file_format.upper()}"
        # A stream with a canonical suffix pins the backend, whatever the file is called.
        stream = DocumentStream(name=f"{path.stem}.{_SUFFIXES[file_format]}", stream=BytesIO(data))
        try:
            result = self._get_converter().convert(stream, raises_on_error=False)
        except ConversionError as exc:
            raise DocumentError(f"{unreadable}: {_plain_reason(str(exc))}") from exc
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            raise DocumentError(f"{unreadable}: {_plain_reason(_failure(result, file_format))}")
        return result

    def _get_converter(self) -> DocumentConverter:
        if self._converter is None:
            self._converter = self._build_converter()
        return self._converter

    def _build_converter(self) -> DocumentConverter:
        # Docling takes seconds to load: only when a file is parsed with it.
        from docling.datamodel.base_models import InputFormat
        from docling.datamodel.pipeline_options import ThreadedPdfPipelineOptions
        from docling.document_converter import (
            DocumentConverter,
            MarkdownFormatOption,
            PdfFormatOption,
        )

        from rag_assets.parsers.docling_quotes import QuoteAwareMarkdownBackend

        # The PDF pipeline (and its models) is only loaded on the first PDF, after the check above.
        pdf_options = ThreadedPdfPipelineOptions(
            artifacts_path=self.artifacts_path, do_ocr=self._ocr_available()
        )
        return DocumentConverter(
            allowed_formats=[
                InputFormat.PDF,
                InputFormat.DOCX,
                InputFormat.HTML,
                InputFormat.MD,
                InputFormat.PPTX,
                InputFormat.XLSX,
                InputFormat.CSV,
                InputFormat.ASCIIDOC,
                InputFormat.ODT,
                InputFormat.EPUB,
                InputFormat.EMAIL,
            ],
            format_options={
                InputFormat.PDF: PdfFormatOption(pipeline_options=pdf_options),
                InputFormat.MD: MarkdownFormatOption(backend=QuoteAwareMarkdownBackend),
            },
        )

    def _ocr_available(self) -> bool:
        return self.artifacts_path is not None and (self.artifacts_path / OCR_MODEL_FOLDER).is_dir()

    def _notes(self, file_format: str) -> list[str]:
        notes = []
        if file_format == "txt":
            notes.append("plain text read as Markdown")
        if file_format == "pdf" and not self._ocr_available():
            notes.append(
                f"OCR off: no {OCR_MODEL_FOLDER} folder under {self.artifacts_path}; "
                "image-only pages give no text"
            )
        return notes


def _protect_typography(data: bytes, file_format: str) -> tuple[bytes, dict[str, str]]:
    """The bytes with dashes, curly quotes and ellipses out of the HTML backend's reach."""
    try:
        text, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        # Another encoding: its raw characters cannot be found, but entities can (ASCII).
        text, encoding = data.decode("latin-1"), "latin-1"
    protected, back = protect(text, as_html=file_format == "html")
    return protected.encode(encoding), back


def _utf16_text(data: bytes) -> str:
    """UTF-16 text by its byte-order mark, or else by which side its zero bytes fall on."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = "utf-16-le" if data[1::2].count(0) > data[0::2].count(0) else "utf-16-be"
    return data.decode(encoding, errors="replace")


def _plain_reason(reason: str) -> str:
    """Python's words for deep nesting (e.g. thousands of nested <div>s) in a person's words."""
    if "maximum recursion depth" in reason:
        return (
            "elements are nested too deeply to parse (beyond Python's recursion limit of "
            f"{sys.getrecursionlimit()}); flatten the document"
        )
    return reason


def _failure(result: ConversionResult, file_format: str) -> str:
    """Docling's status and errors as one sentence a person can act on."""
    # Docling takes seconds to load: only when a file is parsed with it.
    from docling.datamodel.base_models import DoclingComponentType

    if any(e.component_type == DoclingComponentType.USER_INPUT for e in result.errors):
        # Docling's own message here only names the backend and the file hash.
        return f"the file is corrupt or is not really a {file_format.upper()} file"
    if result.errors:
        return "; ".join(e.error_message for e in result.errors)
    return f"Docling gave up with status {result.status.value}"
