"""Headings inside block quotes are quoted text, not the document's sections.

CommonMark and HTML both allow a heading inside a quote (`> # Quoted`,
`<blockquote><h2>…</h2></blockquote>`), but neither Docling nor Unstructured keeps block
quotes: such a heading would open a top-level section and take every paragraph after the
quote into it. Every parser here reads it as a paragraph of the quote instead, which stays
in the section it is in. (Docling's Markdown backend: docling_quotes.py.)
"""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bs4 import BeautifulSoup
from markdown import Markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

_HEADINGS = tuple(f"h{level}" for level in range(1, 7))
_QUOTED_HEADINGS = ", ".join(f"blockquote {tag}" for tag in _HEADINGS)


def unquote_headings(soup: BeautifulSoup) -> bool:
    """Every heading inside a <blockquote> made a <p>, in place; whether there was one."""
    quoted = soup.select(_QUOTED_HEADINGS)
    for heading in quoted:
        heading.name = "p"
    return bool(quoted)


class QuotedHeadingsAsText(Extension):
    """Python-Markdown (Unstructured's Markdown reader): a heading in a quote renders as <p>."""

    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's API)
        md.treeprocessors.register(_Unquote(md), "rag_assets_unquote_headings", 0)


class _Unquote(Treeprocessor):
    def run(self, root: Element) -> None:
        for quote in root.iter("blockquote"):
            for element in quote.iter():
                if element.tag in _HEADINGS:
                    element.tag = "p"
