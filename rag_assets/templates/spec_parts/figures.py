"""Figures as placeholders: the label and caption, and the sentence of the text that cites it.

Templates never open the source file, so the image itself is not exported here; each
placeholder carries `figure_ref` (element index, page, bbox, the parser's own ref) for a
later step that crops the figure from the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.templates.spec_parts.labels import (
    Caption,
    find_references,
    nearby_caption,
    parse_caption,
)

# Sentences end at . ! ? before a space (not after "Fig." or "Tab.") or at 。！？.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<![Ff]ig\.)(?<![Tt]ab\.)(?<!Sec\.)\s+|(?<=[。！？])")
_CITING_TYPES = frozenset({"paragraph", "list", "footnote", "table"})


@dataclass(frozen=True)
class Figure:
    index: int  # of the figure element in doc.elements
    element: DocumentElement
    label: str  # "Figure 7-1"
    caption: Caption
    caption_index: int | None  # of the caption element, when the caption is one
    anchor: str | None  # the first sentence that cites the figure

    @property
    def ref(self) -> dict:
        """Where a later step finds the image: the element, its page and box, the parser's ref."""
        return {
            "element_index": self.index,
            "page": self.element.page_start,
            "bbox": list(self.element.bbox) if self.element.bbox else None,
            "ref": self.element.metadata.get("ref"),
        }

    @property
    def heading(self) -> str:
        return f"[{self.caption.name}]"

    @property
    def body(self) -> str:
        """The whole caption when the heading shortened it, then the citing sentence."""
        lines = [self.caption.text] if self.caption.text != self.caption.name else []
        return "\n".join([*lines, *([self.anchor] if self.anchor else [])])


def find_figure(doc: StandardizedDocument, index: int) -> Figure | None:
    """The figure at `index` when it has a labelled caption; unlabelled pictures (logos,
    decorations) cannot be cited and get no placeholder."""
    element = doc.elements[index]
    caption_index = None
    caption = _own_caption(element)
    if caption is None:
        near = nearby_caption(doc, index, "figure")
        if near is None:
            return None
        caption_index, caption = near
    if caption.label is None:
        return None
    anchor = _anchor(doc, caption.label, index)
    return Figure(index, element, caption.label, caption, caption_index, anchor)


def _own_caption(element: DocumentElement) -> Caption | None:
    """A caption the adapter kept on the figure itself (in metadata, or as the text)."""
    for text in (element.metadata.get("caption"), element.text):
        caption = parse_caption(text, strict=False) if isinstance(text, str) else None
        if caption and caption.kind == "figure":
            return caption
    return None


def _anchor(doc: StandardizedDocument, label: str, skip: int) -> str | None:
    for index, element in enumerate(doc.elements):
        if index == skip or element.type not in _CITING_TYPES:
            continue
        if label not in find_references(element.text, ()):
            continue
        for sentence in _SENTENCE_END.split(element.text):
            if label in find_references(sentence, ()):
                return " ".join(sentence.split())
    return None
