"""`fixed`: overlapping token windows over the document text, the baseline to compare against.

It knows no structure: every chunk has header_path "/" and no headings. Windows
break between words, so a window can start or end inside any element.
"""

from __future__ import annotations

from bisect import bisect_right

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.normalize.markdown import ELEMENT_SEPARATOR
from rag_assets.templates.base import ChunkTemplate, ElementSpan, body_elements
from rag_assets.templates.tokens import TokenCounter, token_windows


class FixedTemplate(ChunkTemplate):
    name = "fixed"
    version = "1"

    def chunk(self, doc: StandardizedDocument, counter: TokenCounter) -> list[ChunkRow]:
        # The markdown as the elements build it, minus page headers/footers; each
        # element's offset in this text maps windows back to pages and IR offsets.
        elements = body_elements(doc)
        starts: list[int] = []
        cursor = 0
        for element in elements:
            starts.append(cursor)
            cursor += len(element.text) + len(ELEMENT_SEPARATOR)
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
            rows.append(self.make_row(doc, len(rows), text[start:end], counter, spans))
        return rows
