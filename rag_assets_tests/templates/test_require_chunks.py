"""A document its template cuts into no chunks fails, naming the template and what it read."""

from __future__ import annotations

import pytest

from rag_assets.chunking import chunk_document, require_chunks
from rag_assets.errors import DocumentError
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import doc_from_pages


def test_running_lines_alone_make_no_chunks_and_fail_saying_so() -> None:
    doc = doc_from_pages(
        [[("page_header", "Lyme Harbour Ferries"), ("page_footer", "Page 1")]],
        source_path="inbox/timetable.pdf",
    )
    chunked = chunk_document(doc, "fixed", {}, ApproxTokenCounter())
    with pytest.raises(DocumentError) as raised:
        require_chunks(chunked)
    assert str(raised.value) == (
        "inbox/timetable.pdf: the fixed template made no chunks from 2 elements"
    )


def test_a_document_with_chunks_passes() -> None:
    doc = doc_from_pages(
        [[("page_header", "Lyme Harbour Ferries"), ("paragraph", "Ferries leave hourly.")]]
    )
    chunked = chunk_document(doc, "fixed", {}, ApproxTokenCounter())
    assert chunked.rows
    require_chunks(chunked)
