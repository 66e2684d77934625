"""Assemble the IR's whole-document markdown and each element's offsets in it."""

from __future__ import annotations

from rag_assets.contracts.ir import DocumentElement

ELEMENT_SEPARATOR = "\n\n"


def assemble_markdown(elements: list[DocumentElement]) -> tuple[str, list[DocumentElement]]:
    """Join element texts with blank lines; return the markdown and elements with offsets set."""
    parts: list[str] = []
    placed: list[DocumentElement] = []
    cursor = 0
    for element in elements:
        if parts:
            cursor += len(ELEMENT_SEPARATOR)
        start, end = cursor, cursor + len(element.text)
        placed.append(element.model_copy(update={"start_char": start, "end_char": end}))
        parts.append(element.text)
        cursor = end
    return ELEMENT_SEPARATOR.join(parts), placed
