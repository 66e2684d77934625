"""`fixed`: overlapping token windows over the document text, the baseline to compare against.

It cuts by size alone: every chunk has header_path "/" and no headings. Windows break
between words, so a window can start or end inside any element. Its breadcrumb
(`context_text`) is the title and the headings open where the window starts, on top of
the window's `max_tokens` (it is known only once the window is cut); a window holding
nothing but whole headings (a document of a title alone) gives no chunk.
"""

from __future__ import annotations

from bisect import bisect_right

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.normalize.markdown import ELEMENT_SEPARATOR
from rag_assets.templates.base import (
    HEADING_TYPES,
    ChunkTemplate,
    ElementSpan,
    HeadingStack,
    content_elements,
    heading_level,
    heading_title,
)
from rag_assets.templates.tokens import TokenCounter, token_windows


class FixedTemplate(ChunkTemplate):
    name = "fixed"
    version = "8"  # 8: chunks record their section's and table's titles
    cites_articles = False

    def chunk(self, doc: StandardizedDocument, counter: TokenCounter) -> list[ChunkRow]:
        # The markdown as the elements build it, minus page headers/footers; each
        # element's offset in this text maps windows back to pages and IR offsets.
        elements = content_elements(doc)
        starts: list[int] = []
        open_headings: list[list[str]] = []  # at each element, itself included
        stack = HeadingStack()
        cursor = 0
        for element in elements:
            starts.append(cursor)
            cursor += len(element.text) + len(ELEMENT_SEPARATOR)
            if element.type in HEADING_TYPES and (title := heading_title(element)):
                stack.push(heading_level(element), title)
            open_headings.append(stack.titles)
        text = ELEMENT_SEPARATOR.join(element.text for element in elements)

        rows: list[ChunkRow] = []
        windows = token_windows(text, counter, self.options.max_tokens, self.options.overlap_tokens)
        for start, end in windows:
            first = bisect_right(starts, start) - 1
            spans = []
            for position in range(first, bisect_right(starts, end - 1)):
                element, offset = elements[position], starts[position]
                covered_start = max(start, offset) - offset
                covered_end = min(end, offset + len(element.text)) - offset
                if covered_start < covered_end:
                    spans.append(ElementSpan(element, covered_start, covered_end))
            if all(_whole_heading(span) for span in spans):
                continue
            rows.append(
                self.make_row(
                    doc,
                    len(rows),
                    text[start:end],
                    counter,
                    spans,
                    context_headings=open_headings[first],
                )
            )
        return rows


def _whole_heading(span: ElementSpan) -> bool:
    return span.element.type in HEADING_TYPES and span.end - span.start == len(span.element.text)
