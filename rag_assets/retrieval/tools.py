"""Typed retrieval tools: precise lookups that plain similarity search does badly.

- `glossary`: a term's definition from glossary chunks (exact, then fuzzy), else from passages
  that say "X means / is defined as ...";
- `table_rows`: rows of table and table_row chunks as key/value cells, with the table's name,
  caption, footnotes and page;
- `text`: general passages with their header paths;
- `figures`: figure placeholders (caption, anchor text, exported image, page);
- `section`: a section's chunks in reading order, cross-references resolved through the
  document's xref map.

Each returns pydantic models carrying a `Source`, so an answer can cite what a tool found.
Functions take a `Toolbox`: the retriever on the index plus the stored chunks, read lazily.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.figures import figure_image
from rag_assets.index.rows import SearchHit
from rag_assets.retrieval.inputs import (
    FilterValue,
    Keywords,
    QueryText,
    Term,
    TopK,
    tool_arguments,
)
from rag_assets.retrieval.search import (
    RetrievedHit,
    Retriever,
    SearchFilters,
    citation,
    open_retriever,
)
from rag_assets.settings import Settings
from rag_assets.sources.collections import RuntimeChoices, load_collections, plan_document
from rag_assets.storage import asset_dir, read_chunks
from rag_assets.templates.spec import SpecOptions, SpecStructure, spec_structure

FUZZY_CUTOFF = 0.8  # difflib ratio: "Block-Gap", "block gaps" match "Block Gap"; "Clock" does not
_DEFINES = r"(?:means|is defined as|are defined as|refers to|stands for|denotes)"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_ROW_PREFIX = re.compile(r"^\[(?P<name>[^\]]*)\]\s*")
_NOTE = re.compile(r"\(Note: ([^)]*)\)")  # how the spec template attaches a footnote to a cell
_MARKS = re.compile(r"<sup>[^<]*</sup>|\s*\(Note: [^)]*\)|[*†‡§¶]+$")
_SECTION_NUMBER = re.compile(r"^\d+(?:\.\d+)*\.?$")


class Source(BaseModel):
    """Where a result came from: enough to cite it and to find it again."""

    chunk_id: str
    doc_id: str
    source_path: str
    header_path: str
    section: str  # the chunk's headings, " / "-joined, else its header path
    page_start: int | None
    page_end: int | None
    chunk_type: str
    text: str
    citation: str  # "file.pdf, p. 3, § 2 Register Map / 2.1 Host Control Register"

    @classmethod
    def from_hit(cls, hit: SearchHit) -> Source:
        headings = hit.metadata.get("headings") or []
        return cls(
            chunk_id=hit.chunk_id,
            doc_id=hit.doc_id,
            source_path=hit.source_path,
            header_path=hit.header_path,
            section=" / ".join(headings) if headings else hit.header_path,
            page_start=hit.page_start,
            page_end=hit.page_end,
            chunk_type=hit.chunk_type,
            text=hit.text,
            citation=citation(hit),
        )

    @classmethod
    def from_chunk(cls, chunk: ChunkRow) -> Source:
        return cls.from_hit(
            SearchHit(
                **chunk.model_dump(
                    include=set(SearchHit.model_fields) - {"score", "metadata", "language"}
                ),
                score=0.0,
                metadata={**chunk.metadata, "headings": chunk.headings},
                language="",
            )
        )


class GlossaryEntry(BaseModel):
    term: str
    definition: str
    match: Literal["exact", "fuzzy", "defined_in_text"]
    source: Source


class TableRow(BaseModel):
    table: str  # the table's name ("Table 3: Host Control Register (Offset 0x04)")
    caption: str | None
    footnotes: list[str]
    page: int | None
    cells: dict[str, str]  # column -> value, as the document writes them
    score: float
    source: Source


class Passage(BaseModel):
    text: str
    header_path: str
    score: float
    found_by: dict[str, int]
    source: Source


class FigureResult(BaseModel):
    figure_id: str | None
    caption: str | None
    anchor_text: str | None
    image_path: str | None  # the PNG cropped from the document, when it is a PDF
    page: int | None
    score: float
    source: Source


class CrossReference(BaseModel):
    label: str  # "Table 3", "Section 3.2", "Figure 7-1"
    kind: str | None = None  # None: the label is not in the document's xref map
    title: str | None = None
    page: int | None = None
    section: str | None = None


class SectionChunk(BaseModel):
    chunk_index: int
    chunk_type: str
    text: str
    references: list[CrossReference]
    source: Source


class SectionResult(BaseModel):
    doc_id: str
    source_path: str
    section: str  # the heading the query matched
    chunks: list[SectionChunk]


@dataclass
class Toolbox:
    """The index and the stored chunks, as the assets wrote them under one data folder."""

    settings: Settings
    retriever: Retriever
    _chunks: list[ChunkRow] | None = None
    _structures: dict[str, SpecStructure | None] = field(default_factory=dict)

    def chunks(self) -> list[ChunkRow]:
        if self._chunks is None:
            self._chunks = read_chunks(self.settings)
        return self._chunks

    def figure_image(self, hit: RetrievedHit) -> str | None:
        path = figure_image(
            self.settings.raw_dir,
            self.settings.data_dir / "figures",
            hit.doc_id,
            hit.metadata,
            hit.chunk_index,
        )
        return str(path) if path else None

    def structure(self, doc_id: str, source_path: str) -> SpecStructure | None:
        """The TOC tree and xref map `document_chunks` records in its metadata, rebuilt by the
        same function from the stored `normalized_documents` partition (no Dagster needed)."""
        if doc_id not in self._structures:
            self._structures[doc_id] = self._load_structure(doc_id, source_path)
        return self._structures[doc_id]

    def _load_structure(self, doc_id: str, source_path: str) -> SpecStructure | None:
        path = asset_dir(self.settings, "normalized_documents") / f"{doc_id}.json"
        if not path.exists():
            return None
        doc = StandardizedDocument.model_validate_json(path.read_text(encoding="utf-8"))
        config = load_collections(self.settings.collections_path)
        plan = plan_document(config, source_path, RuntimeChoices())
        return spec_structure(doc, SpecOptions(toc_pages=plan.options.get("toc_pages")))


@contextmanager
def open_toolbox(settings: Settings) -> Iterator[Toolbox | None]:
    """A toolbox on the configured index; None when nothing has been indexed yet."""
    with open_retriever(settings) as retriever:
        yield Toolbox(settings, retriever) if retriever is not None else None


def fold(text: str) -> str:
    """Case- and width-insensitive form: NFKC (full-width to ASCII), casefold, single spaces."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).strip(" .:;?!")


# ------------------------------------------------------------------------------ glossary


@tool_arguments
def glossary(box: Toolbox, term: Term, limit: TopK = 5) -> list[GlossaryEntry]:
    """Exact term (or a trailing part of the query: "the access type RW1C" finds RW1C), then
    fuzzy, then passages defining it; the first stage with results wins."""
    entries = [c for c in box.chunks() if c.chunk_type == "glossary" and c.metadata.get("term")]
    asked = fold(term)
    exact = [c for c in entries if _ends_with_words(asked, fold(c.metadata["term"]))]
    if exact:
        # The longest matching term first: "Card Detect" before "Detect".
        exact.sort(key=lambda c: -len(c.metadata["term"]))
        return [_entry(c, "exact") for c in exact[:limit]]
    folded = {fold(c.metadata["term"]): c for c in entries}
    close = difflib.get_close_matches(fold(term), list(folded), n=limit, cutoff=FUZZY_CUTOFF)
    if close:
        return [_entry(folded[name], "fuzzy") for name in close]
    return _defined_in_text(box, term, limit)


def _ends_with_words(text: str, words: str) -> bool:
    """`the access type rw1c` ends with the words `rw1c` (not with `w1c`)."""
    return bool(words) and (text == words or text.endswith(" " + words))


def _entry(chunk: ChunkRow, match: Literal["exact", "fuzzy"]) -> GlossaryEntry:
    term = chunk.metadata["term"]
    definition = chunk.text.removeprefix(f"{term}:").strip()
    return GlossaryEntry(
        term=term, definition=definition, match=match, source=Source.from_chunk(chunk)
    )


def _defined_in_text(box: Toolbox, term: str, limit: int) -> list[GlossaryEntry]:
    pattern = re.compile(
        rf"(?<!\w){re.escape(term.strip())}(?!\w)[^.]{{0,40}}?\b{_DEFINES}\b", re.IGNORECASE
    )
    found = []
    for hit in box.retriever.search(f"{term} means", top_k=20).hits:
        for sentence in _SENTENCE_END.split(" ".join(hit.text.split())):
            if pattern.search(sentence):
                found.append(
                    GlossaryEntry(
                        term=term,
                        definition=sentence,
                        match="defined_in_text",
                        source=Source.from_hit(hit),
                    )
                )
                break
    return found[:limit]


# ---------------------------------------------------------------------------- table rows


@tool_arguments
def table_rows(
    box: Toolbox, keywords: Keywords, attribute: Term | None = None, top_k: TopK = 8
) -> list[TableRow]:
    """Rows of the best-matching table and table_row chunks (a row chunk over the same row of
    its whole-table chunk, as it carries the footnotes); with `attribute`, only rows that
    have that column (case- and width-insensitive). Rows sharing more keywords with their
    table's name and values come first ("bits 15:8" picks the 15:8 row over its neighbours,
    which the analyzer may not tell apart), search order breaking ties."""
    query = " ".join(keywords)
    filters = SearchFilters(chunk_types=["table", "table_row"])
    rows: list[TableRow] = []
    seen: set[tuple[str, str]] = set()
    for hit in box.retriever.search(query, top_k=top_k, filters=filters).hits:
        for cells in _hit_rows(hit, keywords):
            if attribute and fold(attribute) not in {fold(k) for k in cells}:
                continue
            key = (hit.doc_id, json.dumps(cells, sort_keys=True))
            if key in seen:
                continue
            seen.add(key)
            rows.append(_row(hit, cells))
    # A table's row chunks carry its footnotes and cleaned cells: the whole-table chunk's copy
    # of the same row ("20 us<sup>1</sup>", no notes) is dropped.
    split = {_row_key(r) for r in rows if r.source.chunk_type == "table_row"}
    rows = [r for r in rows if r.source.chunk_type == "table_row" or _row_key(r) not in split]
    words = {w for k in keywords for w in fold(k).split()}
    rows.sort(
        key=lambda r: -len(words & set(fold(f"{r.table} {' '.join(r.cells.values())}").split()))
    )
    return rows[:top_k]


def _row_key(row: TableRow) -> tuple[str, str, str, str]:
    """A row by its table and first cell, footnote marks and notes removed."""
    column, value = next(iter(row.cells.items()), ("", ""))
    return (row.source.doc_id, row.table, column, fold(_MARKS.sub("", value)))


def _row(hit: SearchHit, cells: dict[str, str]) -> TableRow:
    metadata = hit.metadata
    name = metadata.get("table_name") or (
        _ROW_PREFIX.match(hit.text).group("name") if _ROW_PREFIX.match(hit.text) else ""
    )
    return TableRow(
        table=name or hit.header_path,
        caption=metadata.get("table_caption"),
        footnotes=sorted({n for value in cells.values() for n in _NOTE.findall(value)}),
        page=hit.page_start,
        cells=cells,
        score=hit.score,
        source=Source.from_hit(hit),
    )


def _hit_rows(hit: SearchHit, keywords: list[str]) -> list[dict[str, str]]:
    """A table_row chunk is one row (`[Name] Key: value | Key: value`); a whole table gives
    the rows that share a word with the keywords, or every row when none does."""
    if hit.chunk_type == "table_row":
        cells = parse_row_text(hit.text)
        return [cells] if cells else []
    rows = parse_markdown_rows(hit.text)
    words = {w for k in keywords for w in fold(k).split()}
    matching = [r for r in rows if words & set(fold(" ".join(r.values())).split())]
    return matching or rows


def parse_row_text(text: str) -> dict[str, str]:
    """`[Table 3: X] Bits: 15:8 | Field: Timeout` -> {"Bits": "15:8", "Field": "Timeout"}."""
    body = _ROW_PREFIX.sub("", text.strip(), count=1)
    cells = {}
    for part in body.split(" | "):
        key, sep, value = part.partition(": ")
        if sep and key.strip():
            cells[key.strip()] = value.strip()
    return cells


def parse_markdown_rows(text: str) -> list[dict[str, str]]:
    """Body rows of the first markdown table in `text`, keyed by its header row."""
    lines = [line.strip() for line in text.split("\n")]
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and re.fullmatch(r"\|[\s:|-]*-[\s:|-]*", lines[i + 1]):
            header = _cells(line)
            rows = []
            for body in lines[i + 2 :]:
                if not body.startswith("|"):
                    break
                values = _cells(body)
                rows.append(dict(zip(header, values, strict=False)))
            return rows
    return []


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


# ------------------------------------------------------------------------- text, figures


@tool_arguments
def text(box: Toolbox, query: QueryText, top_k: TopK = 5) -> list[Passage]:
    return [
        Passage(
            text=hit.text,
            header_path=hit.header_path,
            score=hit.score,
            found_by=hit.found_by,
            source=Source.from_hit(hit),
        )
        for hit in box.retriever.search(query, top_k=top_k).hits
    ]


@tool_arguments
def figures(box: Toolbox, description: QueryText, top_k: TopK = 5) -> list[FigureResult]:
    filters = SearchFilters(chunk_types=["figure"])
    return [
        FigureResult(
            figure_id=hit.metadata.get("figure_id"),
            caption=hit.metadata.get("caption"),
            anchor_text=hit.metadata.get("anchor_text"),
            image_path=box.figure_image(hit),
            page=hit.page_start,
            score=hit.score,
            source=Source.from_hit(hit),
        )
        for hit in box.retriever.search(description, top_k=top_k, filters=filters).hits
    ]


# ------------------------------------------------------------------------------ sections


@tool_arguments
def section(
    box: Toolbox, path_or_number: FilterValue, doc: FilterValue | None = None
) -> list[SectionResult]:
    """Per document, the chunks under a section ("3.2", "/2 Register Map/", or a heading's
    title), subsections included, in reading order; `doc` narrows to one doc id or path."""
    matcher = _section_matcher(path_or_number.strip())
    by_doc: dict[str, list[tuple[ChunkRow, str]]] = {}
    for chunk in box.chunks():
        if doc and doc not in (chunk.doc_id, chunk.source_path):
            continue
        heading = matcher(chunk)
        if heading is not None:
            by_doc.setdefault(chunk.doc_id, []).append((chunk, heading))
    results = []
    for doc_id, matched in by_doc.items():
        matched.sort(key=lambda pair: pair[0].chunk_index)
        first = matched[0][0]
        structure = box.structure(doc_id, first.source_path) if first.template == "spec" else None
        xrefs = structure.xrefs if structure else {}
        results.append(
            SectionResult(
                doc_id=doc_id,
                source_path=first.source_path,
                section=matched[0][1],
                chunks=[
                    SectionChunk(
                        chunk_index=chunk.chunk_index,
                        chunk_type=chunk.chunk_type,
                        text=chunk.text,
                        references=[
                            _resolve(label, xrefs) for label in chunk.metadata.get("references", [])
                        ],
                        source=Source.from_chunk(chunk),
                    )
                    for chunk, _ in matched
                ],
            )
        )
    return results


def _resolve(label: str, xrefs: dict) -> CrossReference:
    ref = xrefs.get(label)
    if ref is None:
        return CrossReference(label=label)
    return CrossReference(
        label=label, kind=ref.kind, title=ref.title, page=ref.page, section=ref.section
    )


def _section_matcher(query: str):
    """chunk -> the heading of the chunk's own path that the query names, or None."""
    if query.startswith("/"):
        prefix = query if query.endswith("/") else query + "/"

        def by_path(chunk: ChunkRow) -> str | None:
            # The heading whose path is the prefix; a heading may hold a `/` of its own.
            path = "/"
            for heading in chunk.headings:
                path += f"{heading}/"
                if path == prefix:
                    return heading
                if len(path) >= len(prefix):
                    return None
            return None

        return by_path
    if _SECTION_NUMBER.match(query):
        number = query.rstrip(".")

        def by_number(chunk: ChunkRow) -> str | None:
            return next(
                (h for h in chunk.headings if re.match(rf"{re.escape(number)}\.?(?:\s|$)", h)),
                None,
            )

        return by_number
    wanted = fold(query)

    def by_title(chunk: ChunkRow) -> str | None:
        return next(
            (h for h in chunk.headings if fold(re.sub(r"^[\d.]+\s+", "", h)) == wanted), None
        )

    return by_title


__all__ = [
    "CrossReference",
    "FigureResult",
    "GlossaryEntry",
    "Passage",
    "SectionChunk",
    "SectionResult",
    "Source",
    "TableRow",
    "Toolbox",
    "figures",
    "glossary",
    "open_toolbox",
    "section",
    "table_rows",
    "text",
]
