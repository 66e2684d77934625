"""Docling's Markdown backend, reading a heading inside a block quote as a paragraph (see
quotes.py for why). Imported only when Docling's converter is built: it subclasses Docling's
Markdown backend.
"""

from __future__ import annotations

import marko
from docling.backend.md_backend import MarkdownDocumentBackend


class QuoteAwareMarkdownBackend(MarkdownDocumentBackend):
    """Docling's Markdown backend, reading a heading inside a quote as a paragraph."""

    def _iterate_elements(self, *, element: marko.element.Element, **kwargs) -> None:
        if isinstance(element, marko.block.Quote):
            element.children = [_as_paragraph(child) for child in element.children]
        return super()._iterate_elements(element=element, **kwargs)


def _as_paragraph(element: marko.element.Element) -> marko.element.Element:
    if not isinstance(element, marko.block.Heading | marko.block.SetextHeading):
        return element
    paragraph = marko.block.Paragraph([])
    paragraph.children = element.children
    return paragraph
