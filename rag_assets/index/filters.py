"""Milvus filter expressions over the index's fields, with every value quoted."""

from __future__ import annotations

import re
from collections.abc import Sequence

# Milvus' expression language has no escape that matches a control character in a literal, and
# a line break inside a `like` pattern ends Milvus Lite's engine process.
_UNQUOTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def quote(value: str) -> str:
    """A Milvus filter string literal; ids may hold quotes and backslashes. A value holding a
    control character is refused (ValueError)."""
    if _UNQUOTABLE.search(value):
        raise ValueError(f"a filter value holds a control character: {value[:60]!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def document_is(doc_id: str) -> str:
    """The rows of one document."""
    return f"doc_id == {quote(doc_id)}"


def documents_in(doc_ids: Sequence[str]) -> str:
    """The rows of these documents."""
    return f"doc_id in [{', '.join(quote(i) for i in doc_ids)}]"


def chunk_id_in(chunk_ids: Sequence[str]) -> str:
    """The rows of these chunks."""
    return f"chunk_id in [{', '.join(quote(i) for i in chunk_ids)}]"


def within(doc_id: str | None, expr: str) -> str:
    """`expr` (anything when empty), within one document when `doc_id` is given."""
    clauses = [document_is(doc_id)] if doc_id is not None else []
    clauses += [f"({expr})"] if expr else []
    return " and ".join(clauses)
