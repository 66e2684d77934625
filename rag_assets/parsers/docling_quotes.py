"""Headings inside block quotes are quoted text, not the document's sections.

CommonMark and HTML both allow a heading inside a quote (`> # Quoted`,
`<blockquote><h2>…</h2></blockquote>`), but Docling keeps no block quotes: such a heading
would open a top-level section and take every paragraph after the quote into it. Here it is
read as a paragraph of the quote, which stays in the section it is in.

Imported only when Docling's converter is built (it subclasses Docling's Markdown backend).
"""

from __future__ import annotations

import marko
from bs4 import BeautifulSoup
from docling.backend.md_backend import MarkdownDocumentBackend

_QUOTED_HEADINGS = ", ".join(f"blockquote h{level}" for level in range(1, 7))


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


def unquote_html_headings(html: bytes) -> bytes:
    """The HTML with every heading inside a <blockquote> made a <p>; untouched when none is."""
    soup = BeautifulSoup(html, "html.parser")
    quoted = soup.select(_QUOTED_HEADINGS)
    if not quoted:
        return html
    for heading in quoted:
        heading.name = "p"
    # ASCII with character references: no reader can guess this page's encoding wrong.
    return soup.encode("ascii", formatter="html")
