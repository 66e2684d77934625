"""`spec`: protocol and technical specifications.

Chunks, in reading order:
- body text exactly as `semantic` chunks it, over the body pages without the tables,
  their captions and the glossary entries (those get chunks of their own below);
- per table: the whole table as `table` chunk(s), rendered by `semantic` from the section
  heading, the caption and the table; then one `table_row` chunk per body row,
  `[Table 3: Host Control Register] Bits: 15:8 | Field: Timeout Counter Value | ...`;
- per glossary entry (sections headed Glossary/Definitions/..., or `glossary_pages`):
  one `glossary` chunk, `Term: definition`;
- per captioned figure: a `figure` placeholder chunk, `[Figure 7-1: ...]`, the caption and
  the sentence that cites it; `figure_ref` tells a later step where to crop the image.

Every chunk's `metadata.references` lists what its text cites (`Table 3`, `Section 2.1.1`).
`spec_structure` gives the TOC tree and the cross-reference map of the same document.
A table row or glossary entry over `max_tokens` is cut between words, its prefix repeated.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Annotated

from pydantic import BeforeValidator, model_validator

from rag_assets.contracts.chunk import ChunkRow, ChunkType, chunk_id_for
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.templates.base import SKIPPED_TYPES, ChunkTemplate, ElementSpan, TemplateOptions
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.spec_parts.figures import Figure, find_figure
from rag_assets.templates.spec_parts.glossary import Term, element_terms
from rag_assets.templates.spec_parts.labels import (
    Caption,
    find_references,
    shorten_name,
    table_caption,
)
from rag_assets.templates.spec_parts.parts import Placed, parse_pages, place
from rag_assets.templates.spec_parts.structure import SpecStructure, build_structure
from rag_assets.templates.spec_parts.table_rows import is_footnote, parse_table, table_rows
from rag_assets.templates.tokens import TokenCounter, token_windows

__all__ = ["SpecOptions", "SpecStructure", "SpecTemplate", "spec_structure"]

# "1. Enable the clock.": an ordered list's item, a step rather than a note.
_STEP = re.compile(r"^\s*\d{1,3}\.\s")
# "1-3", "1-3,7", 5 or [1, 2, 3]; stored as sorted page numbers.
PageList = Annotated[tuple[int, ...] | None, BeforeValidator(parse_pages)]


class SpecOptions(TemplateOptions):
    drop_reserved_rows: bool = False  # drop table rows whose cell says Reserved/RSVD/保留
    toc_pages: PageList = None  # no chunks; their entries build the TOC tree
    glossary_pages: PageList = None  # read by the glossary rule
    body_pages: PageList = None  # when given, body pages outside it are skipped

    @model_validator(mode="after")
    def _toc_and_glossary_apart(self) -> SpecOptions:
        shared = set(self.toc_pages or ()) & set(self.glossary_pages or ())
        if shared:
            raise ValueError(f"pages {sorted(shared)} are both toc_pages and glossary_pages")
        return self


def spec_structure(doc: StandardizedDocument, options: SpecOptions | None = None) -> SpecStructure:
    """The document's TOC tree and cross-reference map (`Table 3` -> page, section)."""
    return build_structure(doc, (options or SpecOptions()).toc_pages)


class SpecTemplate(ChunkTemplate):
    name = "spec"
    version = "12"  # 12: chunks record their section's and table's titles
    options_class = SpecOptions
    options: SpecOptions

    def __init__(self, options: TemplateOptions | None = None) -> None:
        # The registry may hand plain TemplateOptions (sizes only); spec defaults fill the rest.
        if options is not None and not isinstance(options, SpecOptions):
            options = SpecOptions(**options.model_dump())
        super().__init__(options or SpecOptions())

    def document_structure(self, doc: StandardizedDocument) -> SpecStructure | None:
        return self.optional(
            doc, "cross-references", lambda: spec_structure(doc, self.options), None
        )

    def chunk(self, doc: StandardizedDocument, counter: TokenCounter) -> list[ChunkRow]:
        opts = self.options
        placed = place(doc, opts.toc_pages, opts.glossary_pages, opts.body_pages)
        terms = {
            p.index: found
            for p in placed
            if (p.role == "glossary" or p.in_glossary_section)
            and (found := element_terms(p.element))
        }
        tables = [p for p in placed if p.element.type == "table" and p.index not in terms]
        captions = {p.index: table_caption(doc, p.index) for p in tables}
        moved = set(terms) | set(captions) | {i for _, i in captions.values() if i is not None}
        body = self._semantic(doc, [p.element for p in placed if p.index not in moved], counter)

        ordinals = {index: ordinal for ordinal, (index, _) in enumerate(doc.tables())}
        extras: list[tuple[int, list[ChunkRow]]] = []
        for p in placed:
            if p.index in captions:
                caption, caption_index = captions[p.index]
                anchor = doc.elements[caption_index] if caption_index is not None else p.element
                rows = self._table_chunks(
                    doc, p, caption, caption_index, ordinals[p.index], counter
                )
                extras.append((min(anchor.start_char, p.element.start_char), rows))
            elif p.index in terms:
                rows = self._glossary_chunks(doc, p, terms[p.index], counter)
                extras.append((p.element.start_char, rows))
            elif p.element.type == "figure":
                rows = self.optional(
                    doc, "figure placeholders", lambda p=p: self._figures(doc, p, counter), []
                )
                extras.append((p.element.start_char, rows))
        structure = self.document_structure(doc)
        known_sections = structure.section_labels() if structure else set()
        return self._finalize(doc, _interleave(body, extras), known_sections)

    def _figures(
        self, doc: StandardizedDocument, p: Placed, counter: TokenCounter
    ) -> list[ChunkRow]:
        figure = find_figure(doc, p.index)
        return self._figure_chunks(doc, p, figure, counter) if figure else []

    def _semantic(
        self, doc: StandardizedDocument, elements: list[DocumentElement], counter: TokenCounter
    ) -> list[ChunkRow]:
        sizes = TemplateOptions(
            max_tokens=self.options.max_tokens,
            overlap_tokens=self.options.overlap_tokens,
            min_tokens=self.options.min_tokens,
        )
        part = doc.model_copy(update={"elements": elements})
        return SemanticTemplate(sizes).chunk(part, counter)

    def _table_chunks(
        self,
        doc: StandardizedDocument,
        p: Placed,
        caption: Caption | None,
        caption_index: int | None,
        table_index: int,
        counter: TokenCounter,
    ) -> list[ChunkRow]:
        """The whole table as semantic renders it, then one key-value chunk per body row."""
        table = p.element
        name = _table_name(doc, p, caption)
        metadata: dict = {
            "table_name": name,
            "table_label": caption.label if caption else None,
            "table_index": table_index,
            "element_index": p.index,
        }
        if caption:
            metadata["table_caption"] = caption.text
        own = [i for i in (caption_index, p.index) if i is not None]
        parts = [*p.stack[-1:], *(doc.elements[i] for i in sorted(own))]
        spans = [_whole(doc.elements[i]) for i in sorted(own)]
        rows = [
            self.make_row(
                doc,
                0,
                whole.text,
                counter,
                spans,
                header_path=p.header_path,
                headings=p.headings,
                chunk_type="table",
                logical_unit=whole.logical_unit,
                metadata={**whole.metadata, **metadata},
            ).model_copy(
                # A table split in parts: each part cites the pages its own rows are on.
                update={"page_start": whole.page_start, "page_end": whole.page_end}
            )
            for whole in self._semantic(doc, parts, counter)
            # Its row chunks below name every row with the table's name: no outline needed.
            if not whole.metadata.get("table_outline")
        ]
        parsed = parse_table(table)
        if parsed is None:
            return rows
        footnotes = [*(table.table.footnotes if table.table else []), *_footnotes(doc, p.index)]
        for row in table_rows(parsed, footnotes):
            if row.reserved and self.options.drop_reserved_rows:
                continue
            row_metadata = {
                **metadata,
                "row_index": row.row_index,
                "reserved": row.reserved,
                "table_source": parsed.source,
            }
            rows.extend(
                self._pieces(
                    doc,
                    p,
                    f"[{name}]",
                    " ",
                    row.text,
                    [_span(doc, table, row.span)],
                    counter,
                    chunk_type="table_row",
                    metadata=row_metadata,
                )
            )
        return rows

    def _glossary_chunks(
        self, doc: StandardizedDocument, p: Placed, terms: list[Term], counter: TokenCounter
    ) -> list[ChunkRow]:
        return [
            row
            for term in terms
            for row in self._pieces(
                doc,
                p,
                f"{term.term}:",
                " ",
                term.definition,
                [_span(doc, p.element, term.span)],
                counter,
                chunk_type="glossary",
                metadata={"term": term.term},
            )
        ]

    def _figure_chunks(
        self, doc: StandardizedDocument, p: Placed, figure: Figure, counter: TokenCounter
    ) -> list[ChunkRow]:
        metadata = {
            "figure_id": figure.label,
            "caption": figure.caption.text,
            "anchor_text": figure.anchor,
            "figure_ref": figure.ref,
        }
        own = [figure.index, *([figure.caption_index] if figure.caption_index is not None else [])]
        return self._pieces(
            doc,
            p,
            figure.heading,
            "\n",
            figure.body,
            [_whole(doc.elements[i]) for i in own],
            counter,
            chunk_type="figure",
            metadata=metadata,
        )

    def _pieces(
        self,
        doc: StandardizedDocument,
        p: Placed,
        head: str,
        separator: str,
        body: str,
        spans: list[ElementSpan],
        counter: TokenCounter,
        *,
        chunk_type: ChunkType,
        metadata: dict,
    ) -> list[ChunkRow]:
        """`head` + `body` as one chunk, or, over the limit, body windows each led by `head`."""
        texts = [f"{head}{separator}{body}" if body else head]
        if counter.count(texts[0]) > self.options.max_tokens:
            budget = max(1, self.options.max_tokens - counter.count(head + separator))
            texts = [
                f"{head}{separator}{body[s:e]}" for s, e in token_windows(body, counter, budget)
            ]
        return [
            self.make_row(
                doc,
                0,
                text,
                counter,
                spans,
                header_path=p.header_path,
                headings=p.headings,
                chunk_type=chunk_type,
                logical_unit=p.section_number,
                metadata={**metadata, "part": part} if len(texts) > 1 else metadata,
            )
            for part, text in enumerate(texts)
        ]

    def _finalize(
        self, doc: StandardizedDocument, rows: list[ChunkRow], known_sections: set[str]
    ) -> list[ChunkRow]:
        """Final positions, ids and references; body rows were made by `semantic`."""
        final = []
        for index, row in enumerate(rows):
            own = row.metadata.get("figure_id") or row.metadata.get("table_label")
            references = find_references(row.text, known_sections, exclude=own)
            final.append(
                row.model_copy(
                    update={
                        "template": self.name,
                        "chunk_index": index,
                        "chunk_id": chunk_id_for(doc.doc_id, self.name, index, row.text),
                        "metadata": {**row.metadata, "references": references},
                    }
                )
            )
        return final


def _table_name(doc: StandardizedDocument, p: Placed, caption: Caption | None) -> str:
    """The caption, else the section heading, else the document title."""
    if caption:
        return caption.name
    if p.stack:
        return p.headings[-1]
    return shorten_name(doc.title) if doc.title else "Table"


def _footnotes(doc: StandardizedDocument, index: int) -> list[str]:
    """Footnotes right after the table (a caption or page furniture may sit between): footnote
    elements, and lists or paragraphs whose every line opens with a marker (`- (1) …`)."""
    notes = []
    for element in doc.elements[index + 1 :]:
        if element.type == "caption" or element.type in SKIPPED_TYPES:
            continue
        lines = [line for line in element.text.split("\n") if line.strip()]
        marked = element.type in ("list", "paragraph") and all(
            is_footnote(line) and not (element.type == "list" and _STEP.match(line))
            for line in lines
        )
        if element.type != "footnote" and not marked:
            break
        notes.extend(lines)
    return notes


def _whole(element: DocumentElement) -> ElementSpan:
    # The IR's own extent: a table's text may since have been replaced by chosen markdown.
    return ElementSpan(element, 0, element.end_char - element.start_char)


def _span(
    doc: StandardizedDocument, element: DocumentElement, span: tuple[int, int] | None
) -> ElementSpan:
    """A line of the element's text, placed in the IR markdown only when the text is the IR's."""
    unchanged = doc.markdown[element.start_char : element.end_char] == element.text
    return ElementSpan(element, *span) if span and unchanged else _whole(element)


def _interleave(body: list[ChunkRow], extras: list[tuple[int, list[ChunkRow]]]) -> list[ChunkRow]:
    """Extra chunks in reading order: after the body chunk that covers their anchor offset,
    else after the last body chunk that starts before it."""
    slots: dict[int, list[ChunkRow]] = defaultdict(list)
    for anchor, rows in sorted(extras, key=lambda extra: extra[0]):
        slots[_slot(body, anchor)].extend(rows)
    merged = list(slots[0])
    for position, row in enumerate(body, start=1):
        merged.append(row)
        merged.extend(slots[position])
    return merged


def _slot(body: list[ChunkRow], anchor: int) -> int:
    for position, row in enumerate(body, start=1):
        if (row.start_char or 0) <= anchor < (row.end_char or 0):
            return position
    return sum(1 for row in body if (row.start_char or 0) <= anchor)
