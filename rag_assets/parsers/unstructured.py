"""Layer 1: Unstructured partitions a PDF, DOCX, HTML, Markdown, text or RTF document into
elements (RTF through the pandoc that pypandoc-binary ships: RTF -> HTML -> partition_html).

Unstructured is imported inside methods (`unstructured.partition.pdf` alone takes ~6 s, mostly
spaCy). Three things in it would reach the network, and each is switched off here:

- Telemetry: importing `unstructured` and every partition call ping packages.unstructured.io
  unless `SCARF_NO_ANALYTICS` is set; `_quiet_unstructured` sets it (and hides the usage banner)
  before the first import.
- spaCy: `unstructured.nlp.tokenize._get_nlp` loads `en_core_web_sm` the first time a text
  heuristic runs (`is_possible_narrative_text` / `is_possible_title`: every `.txt`, every PDF text
  block, DOCX and HTML paragraphs without a heading style) and, when it is not installed,
  downloads its wheel from GitHub into site-packages. `_offline_spacy_loader` replaces the
  loader (one function, nothing else) so that it never downloads; see its docstring.
- hi_res: the layout model comes from the Hugging Face hub. hi_res runs only when the model is
  already in the local cache, and then with the hub switched to offline mode.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from importlib.metadata import version
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docx
import pypdfium2 as pdfium
from huggingface_hub import constants, try_to_load_from_cache

from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.files import prepare_markdown, read_document_bytes
from rag_assets.parsers.quotes import QuotedHeadingsAsText

if TYPE_CHECKING:
    from spacy.language import Language
    from unstructured.documents.elements import Element

PDF_STRATEGIES = ("fast", "hi_res")
_TEXT_FORMATS = frozenset({"html", "md", "txt"})
FORMATS = frozenset({"pdf", "docx", "rtf", *_TEXT_FORMATS})

# hi_res's default layout model (unstructured_inference's "yolox"), checked against its model
# table in the tests; passed by name so that no environment variable can swap it for another.
HI_RES_MODEL_NAME = "yolox"
HI_RES_MODEL_REPO = "unstructuredio/yolo_x_layout"
HI_RES_MODEL_FILE = "yolox_l0.05.onnx"

SPACY_MODEL = "en_core_web_sm"
SPACY_FALLBACK_NOTE = (
    f"spaCy model {SPACY_MODEL} is not installed: Unstructured's text heuristics ran on a blank "
    "English pipeline (rule-based sentences, no part-of-speech tags), so a short one-sentence "
    "line is more often typed Title than NarrativeText"
)


class UnstructuredParser:
    name = "unstructured"

    def __init__(self, pdf_strategy: str = "fast") -> None:
        if pdf_strategy not in PDF_STRATEGIES:
            raise ConfigurationError(
                f"unknown Unstructured PDF strategy {pdf_strategy!r}; choose one of {PDF_STRATEGIES}"
            )
        self.pdf_strategy = pdf_strategy

    def hi_res_available(self) -> tuple[bool, str]:
        """Whether the hi_res PDF strategy can run offline; when not, the reason in words."""

        if shutil.which("tesseract") is None:
            return False, "hi_res runs Tesseract OCR on every page and `tesseract` is not on PATH"
        cached = try_to_load_from_cache(HI_RES_MODEL_REPO, HI_RES_MODEL_FILE)
        if not isinstance(cached, str):
            return False, (
                f"the hi_res layout model {HI_RES_MODEL_REPO}/{HI_RES_MODEL_FILE} is not in the "
                "local Hugging Face cache, and it is not downloaded at run time"
            )
        return True, f"layout model found at {cached}"

    def parse(self, path: Path, file_format: str) -> ParsedDocument:
        if file_format not in FORMATS:
            raise DocumentError(
                f"{path}: Unstructured reads {sorted(FORMATS)} here, not {file_format!r}"
            )
        data = read_document_bytes(path, file_format)
        if file_format in _TEXT_FORMATS and b"\x00" in data:
            raise DocumentError(f"{path} is binary (it holds NUL bytes), not {file_format.upper()}")
        notes: list[str] = []
        page_sizes = _pdf_page_sizes(path) if file_format == "pdf" else None
        strategy = self._pdf_strategy(notes) if file_format == "pdf" else None
        prepared = None
        if file_format == "html":
            # BeautifulSoup loads only for an HTML file.
            from rag_assets.parsers.page_chrome import prepare_html

            prepared, chrome = prepare_html(data)
            notes.extend(chrome)
        elif file_format == "md":
            prepared, markdown_notes = prepare_markdown(data)
            notes.extend(markdown_notes)
        elements = self._partition(path, file_format, strategy, prepared)
        native: dict[str, Any] = {"elements": [element.to_dict() for element in elements]}
        if file_format == "pdf":
            native |= {"strategy": strategy, "page_sizes": page_sizes}
        if file_format == "docx":
            native["title_style_texts"] = _docx_title_texts(path)
        if file_format in ("pdf", "txt") and not _spacy_model_installed():
            notes.append(SPACY_FALLBACK_NOTE)
        losses = []
        if not elements:
            ocr = " (image-only pages need OCR: hi_res)" if file_format == "pdf" else ""
            losses.append(f"Unstructured found no text{ocr}")
        return ParsedDocument(
            parser=self.name,
            parser_version=version("unstructured"),
            source_path=str(path),
            file_format=file_format,
            page_count=len(page_sizes) if page_sizes else None,
            native=native,
            notes=notes,
            losses=losses,
        )

    def _pdf_strategy(self, notes: list[str]) -> str:
        if self.pdf_strategy == "fast":
            return "fast"
        available, why_not = self.hi_res_available()
        if available:
            return "hi_res"
        notes.append(f"hi_res requested, fast used instead: {why_not}")
        return "fast"

    def _partition(
        self, path: Path, file_format: str, strategy: str | None, prepared: bytes | None
    ) -> list[Element]:
        _quiet_unstructured()
        partition = _partitioner(file_format, strategy, prepared)
        _install_offline_spacy_loader()
        try:
            with _hub_offline() if strategy == "hi_res" else nullcontext():
                return partition(str(path))
        except ImportError as exc:
            raise ConfigurationError(f"Unstructured cannot read {file_format}: {exc}") from exc
        except Exception as exc:  # Unstructured raises anything from ValueError to KeyError.
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DocumentError(
                f"{path} could not be read as {file_format.upper()}: {reason}"
            ) from exc


def _partitioner(
    file_format: str, strategy: str | None, prepared: bytes | None
) -> Callable[[str], list[Element]]:
    """The format's own partition function (no file-type sniffing), with our options bound;
    HTML and Markdown are partitioned from `prepared`, the text as prepared for parsing."""
    if file_format == "pdf":
        # Unstructured's partitioners take seconds to load: only the file's own format is.
        from unstructured.partition.pdf import partition_pdf

        # Table cell structure needs a second hub model (table-transformer); hi_res tables keep
        # their text and box, and the table_markdown step can render that region.
        return lambda name: partition_pdf(
            filename=name,
            strategy=strategy,
            infer_table_structure=False,
            hi_res_model_name=HI_RES_MODEL_NAME,
        )
    if file_format == "docx":
        # Unstructured's partitioners take seconds to load: only the file's own format is.
        from unstructured.partition.docx import partition_docx

        return lambda name: partition_docx(filename=name)
    if file_format == "rtf":
        # Unstructured's partitioners take seconds to load: only the file's own format is.
        from unstructured.partition.rtf import partition_rtf

        return lambda name: partition_rtf(filename=name)
    if file_format == "html":
        # Unstructured's partitioners take seconds to load: only the file's own format is.
        from unstructured.partition.html import partition_html

        return lambda name: partition_html(file=BytesIO(prepared or b""), metadata_filename=name)
    if file_format == "md":
        # Unstructured's partitioners take seconds to load: only the file's own format is.
        from unstructured.partition.md import partition_md

        # Unstructured's own extensions, then ours: a heading in a quote is quoted text.
        extensions = ["tables", "fenced_code", QuotedHeadingsAsText()]
        return lambda name: partition_md(
            file=BytesIO(prepared or b""), metadata_filename=name, extensions=extensions
        )
    # Unstructured's partitioners take seconds to load: only the file's own format is.
    from unstructured.partition.text import partition_text

    return lambda name: partition_text(filename=name)


def _quiet_unstructured() -> None:
    """No telemetry ping (on import and on every partition call) and no usage banner.

    Set for the whole process: it must hold before `import unstructured` runs anywhere.
    """
    os.environ["SCARF_NO_ANALYTICS"] = "true"
    os.environ["UNSTRUCTURED_DISABLE_NOTICE"] = "1"


def _install_offline_spacy_loader() -> None:
    # spaCy and Unstructured's NLP take seconds to load: only when text is classified.
    from unstructured.nlp import tokenize

    tokenize._load_spacy_model = _offline_spacy_loader


def _offline_spacy_loader() -> Language:
    """Unstructured's spaCy loader (`unstructured.nlp.tokenize._load_spacy_model`), minus the download.

    Upstream, `_get_nlp()` (cached for the process) calls `_load_spacy_model()`, which tries
    `spacy.load("en_core_web_sm")` and, on OSError, takes a file lock and downloads and installs
    the model wheel from GitHub. This replacement keeps the first step, so an installed model is
    used as before, and otherwise returns `spacy.blank("en")` plus the rule-based sentencizer.

    Why that is safe: Unstructured uses the pipeline only for `word_tokenize`, `sent_tokenize` and
    `pos_tag` inside its element-type heuristics. The blank pipeline has the same English
    tokenizer rules; sentences come from punctuation instead of the parser; `pos_tag` returns no
    tags, so `contains_verb` is always False. The one effect is on `.txt` and PDF text blocks: a
    short (<= 12 words) single sentence that would be NarrativeText becomes Title. DOCX, HTML and
    Markdown take headings from styles and tags; there the heuristic only picks NarrativeText over
    Text, and both are paragraphs in the IR. Parsed documents carry a note when this applies.
    """
    # spaCy and Unstructured's NLP take seconds to load: only when text is classified.
    import spacy

    # spaCy and Unstructured's NLP take seconds to load: only when text is classified.
    from unstructured.nlp import tokenize

    try:
        return spacy.load(SPACY_MODEL, exclude=tokenize._SPACY_EXCLUDE)
    except OSError:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return nlp


def _spacy_model_installed() -> bool:
    # spaCy and Unstructured's NLP take seconds to load: only when text is classified.
    import spacy

    return spacy.util.is_package(SPACY_MODEL)


@contextmanager
def _hub_offline() -> Iterator[None]:
    """The Hugging Face hub in offline mode: cached files only, never a request (hi_res models)."""

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before


def _pdf_page_sizes(path: Path) -> list[tuple[float, float]]:
    """Each page's (width, height) in points; opening the file first also rejects a bad PDF.

    Unstructured's own PDF path logs and returns no elements for a corrupt or encrypted file.
    """

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise DocumentError(f"{path}: the PDF is encrypted and needs a password") from exc
        raise DocumentError(f"{path} could not be read as PDF: {exc}") from exc
    try:
        if len(pdf) == 0:
            raise DocumentError(f"{path}: the PDF has no pages")
        return [pdf.get_page_size(index) for index in range(len(pdf))]
    finally:
        pdf.close()


def _docx_title_texts(path: Path) -> list[str]:
    """Texts of paragraphs in Word's "Title" style.

    Unstructured gives "Title" and "Heading 1" paragraphs the same category_depth (0); the
    adapter needs this to rank the document title above Heading 1, as Word and Docling do.
    """

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # python-docx raises ValueError, KeyError or BadZipFile.
        raise DocumentError(f"{path} could not be read as DOCX: {exc}") from exc
    return [
        " ".join(p.text.split()) for p in document.paragraphs if p.style and p.style.name == "Title"
    ]
