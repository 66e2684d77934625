"""Which parser sees a document, and why: by file type and by what is installed here."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.build import build_parser
from rag_assets.parsers.image import ImageParser
from rag_assets.parsers.isolation import parse_in_worker
from rag_assets.parsers.page_pool import may_start_workers
from rag_assets.parsers.unstructured import FORMATS as UNSTRUCTURED_FORMATS

logger = logging.getLogger(__name__)

PARSERS = ("auto", "docling", "pymupdf", "unstructured", "plaintext")
# Formats only one installed parser reads offline here, whatever parser is requested:
# RTF (Docling would convert it with LibreOffice) and images (Docling needs its OCR models).
_ONLY_READER = {
    "rtf": ("unstructured", "rtf: Unstructured, through the pandoc bundled in pypandoc-binary"),
    "image": ("pymupdf", "image: as a PDF page, read by the RapidOCR bundled with pymupdf4llm"),
}

# Parsers that read a whole document in one call nothing can interrupt: run in a parse worker
# under the document limits (isolation.py). PyMuPDF runs its pages in the workers itself;
# plain text is read in one linear pass.
_WHOLE_DOCUMENT_PARSERS = ("docling", "unstructured")


@dataclass(frozen=True)
class ParserChoice:
    parser: str
    reason: str
    fallbacks: list[str] = field(default_factory=list)  # what was wanted and why it was not used
    # The fallbacks are owed to what this machine has installed (an optional model), not to the
    # file: the router says so once per process at INFO, a document's log only at INFO too.
    from_setup: bool = False


@dataclass
class ParserRouter:
    """Chooses and runs parsers; each parser object is built once and reused across documents."""

    requested: str = "auto"
    docling_artifacts_path: str | None = None
    parse_workers: int = 1  # parse worker processes (page ranges of long PDFs run in parallel)
    _instances: dict = field(default_factory=dict, repr=False)
    _setup_said: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        if self.requested not in PARSERS:
            raise ConfigurationError(f"unknown parser {self.requested!r}; choose one of {PARSERS}")
        if self.parse_workers < 1:
            raise ConfigurationError(f"parse workers must be 1 or more, not {self.parse_workers}")

    def parser_for(self, name: str, file_format: str = ""):
        """The parser object called `name` (for images: the image parser), built on first use."""
        if file_format == "image":
            if "image" not in self._instances:
                self._instances["image"] = ImageParser(self.parser_for("pymupdf"))
            return self._instances["image"]
        if name not in self._instances:
            self._instances[name] = build_parser(
                name, self.docling_artifacts_path, self.parse_workers
            )
        return self._instances[name]

    def choose(self, file_format: str) -> ParserChoice:
        if file_format in _ONLY_READER:
            return self._only_reader(file_format)
        if self.requested == "unstructured":
            return self._unstructured(file_format)
        if self.requested == "plaintext" or (self.requested == "auto" and file_format == "txt"):
            if file_format != "txt":
                raise ConfigurationError(f"parser 'plaintext' reads .txt only, not {file_format}")
            return ParserChoice("plaintext", "txt: read as plain text, line breaks kept")
        if file_format != "pdf":
            if self.requested == "pymupdf":
                raise ConfigurationError(f"parser 'pymupdf' reads PDF only, not {file_format}")
            return ParserChoice("docling", f"{file_format}: Docling's model-free pipeline")
        return self._pdf()

    def _only_reader(self, file_format: str) -> ParserChoice:
        parser, reason = _ONLY_READER[file_format]
        if self.requested not in ("auto", parser):
            return ParserChoice(
                parser, reason, fallbacks=[f"{self.requested} does not read {file_format} here"]
            )
        return ParserChoice(parser, reason)

    @staticmethod
    def _unstructured(file_format: str) -> ParserChoice:
        if file_format in UNSTRUCTURED_FORMATS:
            return ParserChoice("unstructured", f"{file_format}: Unstructured requested")
        return ParserChoice(
            "docling",
            f"{file_format}: Docling's model-free pipeline",
            fallbacks=[f"unstructured does not read {file_format} here"],
        )

    def _pdf(self) -> ParserChoice:
        available, why_not = self.parser_for("docling").pdf_models_available()
        if self.requested == "docling":
            if not available:
                raise ConfigurationError(f"parser 'docling' was requested for PDF but {why_not}")
            return ParserChoice("docling", "pdf: Docling requested, layout models present")
        if self.requested == "pymupdf":
            return ParserChoice("pymupdf", "pdf: PyMuPDF requested")
        if available:
            return ParserChoice("docling", "pdf: Docling standard pipeline (layout models present)")
        fallback = f"docling not used for PDF: {why_not}"
        if fallback not in self._setup_said:
            self._setup_said.add(fallback)
            logger.info("%s; PDFs are read by PyMuPDF", fallback)
        return ParserChoice(
            "pymupdf",
            "pdf: PyMuPDF with its bundled layout models",
            fallbacks=[fallback],
            from_setup=True,
        )

    def read_ahead(self, path: Path, file_format: str, short_too: bool = False) -> bool:
        """Start parsing `path` before its `parse` is called, where the parser chosen for it can
        (PDFs in PyMuPDF's workers; short ones only `short_too`); False when nothing started."""
        try:
            choice = self.choose(file_format)
        except ConfigurationError:
            return False  # `parse` reports it
        start = getattr(self.parser_for(choice.parser, file_format), "read_ahead", None)
        return bool(start and start(path, short_too=short_too))

    def parse(self, path: Path, file_format: str) -> tuple[ParsedDocument, ParserChoice]:
        choice = self.choose(file_format)
        try:
            if choice.parser in _WHOLE_DOCUMENT_PARSERS and file_format != "image":
                if may_start_workers():
                    parsed = parse_in_worker(
                        choice.parser,
                        path,
                        file_format,
                        self.parse_workers,
                        self.docling_artifacts_path,
                    )
                    return parsed, choice
                logger.info("%s: parsed in process, without the document limits", path.name)
            return self.parser_for(choice.parser, file_format).parse(path, file_format), choice
        except RecursionError:
            # e.g. HTML with thousands of nested <div>s: the parser walks the tree recursively.
            raise DocumentError(
                f"{path.name}: elements are nested too deeply for the {choice.parser} parser "
                f"(deeper than Python's recursion limit of {sys.getrecursionlimit()}); "
                f"flatten the document"
            ) from None
        except (DocumentError, ConfigurationError):
            raise
        except Exception as exc:
            # A parser's own bug or a library's surprise on this file: the file fails alone, in
            # one line; the exception's text (often a repr of internal objects) stays in the log.
            logger.warning("%s: the %s parser raised", path, choice.parser, exc_info=True)
            raise DocumentError(
                f"{path.name}: the {choice.parser} parser failed on this file "
                f"({type(exc).__name__}); see the log for details"
            ) from exc
