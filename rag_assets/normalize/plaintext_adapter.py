"""Plain text -> IR: one paragraph per block between blank lines, its line breaks kept.

Line starts carry structure in extracted text (`Article 5`, `第三条`, `(1)`), so
lines are not joined; the IR repairs and templates read them as they are.
"""

from __future__ import annotations

import re

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.normalize.document import adapted_document
from rag_assets.parsers.base import ParsedDocument

_BLANK_LINES = re.compile(r"\n\s*\n")


def plaintext_to_ir(
    parsed: ParsedDocument, *, doc_id: str, source_sha256: str
) -> StandardizedDocument:
    text = parsed.native["text"].replace("\r\n", "\n").replace("\r", "\n")
    blocks = [
        "\n".join(line.rstrip() for line in block.strip("\n").splitlines())
        for block in _BLANK_LINES.split(text)
    ]
    elements = [DocumentElement(type="paragraph", text=block) for block in blocks if block.strip()]
    return adapted_document(parsed, elements, doc_id=doc_id, source_sha256=source_sha256)
