"""Layer 2 entry point: the adapter for the parser that ran, then the shared IR repairs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from rag_assets.contracts.ir import FURNITURE_TYPES, StandardizedDocument
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.llm import LLMClient
from rag_assets.normalize.docling_adapter import docling_to_ir
from rag_assets.normalize.plaintext_adapter import plaintext_to_ir
from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.normalize.repairs import repair_document
from rag_assets.normalize.unstructured_adapter import unstructured_to_ir
from rag_assets.optional import StepFailures
from rag_assets.parsers.base import ParsedDocument, no_text_reason
from rag_assets.profile.llm import ProfileCache, ask_profile
from rag_assets.profile.model import DocumentProfile
from rag_assets.profile.rules import profile_document
from rag_assets.settings.limits import DocumentLimits
from rag_assets.sources.limits import check_elements
from rag_assets.sources.raw import RawDocument


@dataclass(frozen=True)
class NormalizedDocument:
    """A document's IR, what its profile came from and how many elements of each type it has."""

    doc: StandardizedDocument
    profile_by: str  # "rules", or what `with_llm_profile` says
    element_types: dict[str, int]  # in the order each type first occurs


def normalize_document(
    raw: RawDocument,
    parsed: ParsedDocument,
    *,
    limits: DocumentLimits | None = None,
    skip: Collection[str] = (),
    llm: LLMClient | None = None,
    profile_cache: ProfileCache | None = None,
) -> NormalizedDocument:
    """The IR of a landed file's parse (`to_ir`), refused when it has no content
    (`require_content`), then profiled by `llm` when there is one (asked only of a document
    with content).

    Raises DocumentError for a document over its `limits` or without content.
    """
    doc = to_ir(
        parsed,
        doc_id=raw.doc_id,
        source_sha256=raw.sha256,
        limits=limits,
        skip=skip,
        source_path=raw.source_path,
    )
    require_content(doc, parsed)
    profile_by = "rules"
    if llm is not None:
        doc, profile_by = with_llm_profile(doc, llm, profile_cache)
    return NormalizedDocument(doc, profile_by, dict(Counter(e.type for e in doc.elements)))


def require_content(doc: StandardizedDocument, parsed: ParsedDocument) -> None:
    """Raise DocumentError, saying why the parse read no text, when `doc` has no text but its
    running headers and footers: a document with nothing to search must not land as done."""
    if not any(e.text.strip() for e in doc.elements if e.type not in FURNITURE_TYPES):
        raise DocumentError(f"{doc.source_path}: {no_text_reason(parsed)}")


def to_ir(
    parsed: ParsedDocument,
    *,
    doc_id: str,
    source_sha256: str,
    limits: DocumentLimits | None = None,
    skip: Collection[str] = (),
    source_path: str | None = None,
) -> StandardizedDocument:
    """The adapter's IR, within `limits`, with every repair but those named in `skip` applied,
    and its profile (`metadata["profile"]`). `source_path`: the name the document goes by,
    when the parsed file is a copy of it."""
    doc = _adapt(parsed, doc_id=doc_id, source_sha256=source_sha256)
    if source_path is not None:
        doc = doc.model_copy(update={"source_path": source_path})
    if limits is not None:  # before the repairs, whose passes grow with the element count
        check_elements(len(doc.elements), parsed.source_path, limits)
    return with_profile(repair_document(doc, skip), parsed.native.get("document_info"))


def with_profile(
    doc: StandardizedDocument, file_info: dict[str, str] | None = None
) -> StandardizedDocument:
    """`doc` with its profile in `metadata["profile"]`; an optional step: when it fails the
    document goes on without one, degraded and said so."""
    failures = StepFailures(doc.source_path or doc.doc_id)
    profile = failures.run("profile", lambda: profile_document(doc, file_info), None)
    metadata = dict(doc.metadata)
    if profile is not None:
        metadata["profile"] = profile.model_dump(exclude_none=True)
    else:
        metadata["degraded"] = [*doc.metadata.get("degraded", []), *failures.notes()]
    return doc.model_copy(update={"metadata": metadata})


def with_llm_profile(
    doc: StandardizedDocument, llm: LLMClient, cache: ProfileCache | None = None
) -> tuple[StandardizedDocument, str]:
    """`doc` with its profile asked of `llm` over the rules' (profile/llm.py), and what the
    profile came from. An optional step: when it fails, the rules' profile stands, said so."""
    failures = StepFailures(doc.source_path or doc.doc_id)
    rules = DocumentProfile.model_validate(doc.metadata.get("profile") or {})
    asked = failures.run("profile by LLM", lambda: ask_profile(doc, rules, llm, cache), None)
    metadata = dict(doc.metadata)
    if asked is None:
        metadata["degraded"] = [*doc.metadata.get("degraded", []), *failures.notes()]
        return doc.model_copy(update={"metadata": metadata}), "rules: the LLM step failed"
    metadata["profile"] = asked.profile.model_dump(exclude_none=True)
    return doc.model_copy(update={"metadata": metadata}), asked.by


# Each parser's output has one adapter into the IR.
_ADAPTERS = {
    "docling": docling_to_ir,
    "pymupdf": pymupdf_to_ir,
    "unstructured": unstructured_to_ir,
    "plaintext": plaintext_to_ir,
}


def _adapt(parsed: ParsedDocument, *, doc_id: str, source_sha256: str) -> StandardizedDocument:
    adapter = _ADAPTERS.get(parsed.parser)
    if adapter is None:
        raise ConfigurationError(f"no adapter for parser {parsed.parser!r}")
    return adapter(parsed, doc_id=doc_id, source_sha256=source_sha256)
