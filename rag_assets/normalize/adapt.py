"""Layer 2 entry point: the adapter for the parser that ran, then the shared IR repairs."""

from __future__ import annotations

from collections.abc import Collection

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.errors import ConfigurationError
from rag_assets.llm import LLMClient
from rag_assets.normalize.repairs import repair_document
from rag_assets.optional import StepFailures
from rag_assets.parsers.base import ParsedDocument
from rag_assets.profile.llm import ProfileCache, ask_profile
from rag_assets.profile.model import DocumentProfile
from rag_assets.profile.rules import profile_document
from rag_assets.settings.limits import DocumentLimits
from rag_assets.sources.limits import check_elements


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


def _adapt(parsed: ParsedDocument, *, doc_id: str, source_sha256: str) -> StandardizedDocument:
    if parsed.parser == "docling":
        from rag_assets.normalize.docling_adapter import docling_to_ir

        return docling_to_ir(parsed, doc_id=doc_id, source_sha256=source_sha256)
    if parsed.parser == "pymupdf":
        from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir

        return pymupdf_to_ir(parsed, doc_id=doc_id, source_sha256=source_sha256)
    if parsed.parser == "unstructured":
        from rag_assets.normalize.unstructured_adapter import unstructured_to_ir

        return unstructured_to_ir(parsed, doc_id=doc_id, source_sha256=source_sha256)
    if parsed.parser == "plaintext":
        from rag_assets.normalize.plaintext_adapter import plaintext_to_ir

        return plaintext_to_ir(parsed, doc_id=doc_id, source_sha256=source_sha256)
    raise ConfigurationError(f"no adapter for parser {parsed.parser!r}")
