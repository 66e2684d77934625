"""A parse to its IR: the document fails, saying why, when it holds nothing but running lines;
otherwise it is profiled (by the LLM only when one is given) and its elements counted by type."""

from __future__ import annotations

import json

import pytest

from rag_assets.errors import DocumentError
from rag_assets.llm import LLMClient, LLMSettings
from rag_assets.normalize.adapt import normalize_document, require_content
from rag_assets.parsers.base import ParsedDocument
from rag_assets.sources.raw import RawDocument
from rag_assets_tests.support.builders import doc_from_pages
from rag_assets_tests.support.openai_stub import Behaviour, serve_stub

NOTICE = "Ferries leave Lyme every hour.\n\nThe last crossing is at 22:00."

# The fixed copy the parser read, and the inbox path a person knows the file by.
RAW = RawDocument(
    doc_id="notice",
    source_path="inbox/notice.txt",
    stored_path="raw/ab/notice.txt",
    sha256="0" * 64,
    size_bytes=len(NOTICE),
    file_format="txt",
    mime_type="text/plain",
)


def _text(text: str) -> ParsedDocument:
    return ParsedDocument(
        parser="plaintext",
        parser_version="1",
        source_path=RAW.stored_path,
        file_format="txt",
        native={"text": text},
    )


def _normalize(parsed: ParsedDocument, llm: LLMClient | None = None):
    return normalize_document(RAW, parsed, llm=llm)


def test_a_document_with_text_is_profiled_by_the_rules_and_counted() -> None:
    normalized = _normalize(_text(NOTICE))
    assert normalized.doc.source_path == "inbox/notice.txt"
    assert normalized.profile_by == "rules"
    assert "profile" in normalized.doc.metadata
    assert normalized.element_types == {"paragraph": 2}


def test_a_document_without_text_fails_naming_its_file_and_why() -> None:
    with pytest.raises(DocumentError) as raised:
        _normalize(_text(" \n\n \n"))
    assert str(raised.value) == (
        "inbox/notice.txt: no text found in the document: "
        "the file holds no text (OCR applies to PDF pages and images only)"
    )


def test_running_headers_and_footers_alone_are_no_content() -> None:
    scan = ParsedDocument(
        parser="pymupdf",
        parser_version="1",
        source_path="raw/cd/scan.pdf",
        file_format="pdf",
        notes=["no OCR engine installed: image-only pages stay empty"],
    )
    furniture = [("page_header", "Lyme Harbour Ferries"), ("page_footer", "Page 1")]
    with pytest.raises(DocumentError, match=r"^inbox/scan\.pdf: .*no OCR engine is installed"):
        require_content(doc_from_pages([furniture], source_path="inbox/scan.pdf"), scan)
    require_content(doc_from_pages([[*furniture, ("paragraph", "Timetable")]]), scan)


def test_the_llm_profiles_a_document_with_text_and_is_not_asked_for_one_without() -> None:
    answer = {"organization": "Lyme Harbour Ferries", "kind": "notice", "year": 2024}
    with serve_stub() as stub:
        stub.default = Behaviour(text=json.dumps(answer))
        client = LLMClient(LLMSettings(base_url=stub.base_url, model="chat-m", max_retries=0))
        with pytest.raises(DocumentError):
            _normalize(_text(""), client)
        assert stub.calls == 0
        normalized = _normalize(_text(NOTICE), client)
        assert stub.calls == 1
    assert normalized.profile_by == "LLM"
    assert normalized.doc.metadata["profile"]["organization"]["value"] == "Lyme Harbour Ferries"
