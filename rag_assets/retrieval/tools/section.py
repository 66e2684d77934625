"""`section`: a section's chunks in reading order, cross-references resolved through the
document's xref map."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.retrieval.inputs import FilterValue, tool_arguments
from rag_assets.retrieval.tools.tool import Found, Tool
from rag_assets.retrieval.tools.toolbox import Source, Toolbox, fold
from rag_assets.text.numbering import SECTION_NUMBER_END, section_number_pattern

# A query that is nothing but a section number ("3.2", "4."): parts of any length.
_SECTION_NUMBER = re.compile(rf"^{section_number_pattern(bounded=False)}\.?$")


class SectionArgs(BaseModel):
    path_or_number: FilterValue = Field(description='a section number ("3.2") or a heading title')


class SectionOptions(SectionArgs):
    doc: FilterValue | None = Field(None, description="only this doc id or source path")


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
        opens_with_number = re.compile(rf"{re.escape(query.rstrip('.'))}{SECTION_NUMBER_END}")

        def by_number(chunk: ChunkRow) -> str | None:
            return next((h for h in chunk.headings if opens_with_number.match(h)), None)

        return by_number
    wanted = fold(query)

    def by_title(chunk: ChunkRow) -> str | None:
        return next(
            (h for h in chunk.headings if fold(re.sub(r"^[\d.]+\s+", "", h)) == wanted), None
        )

    return by_title


def _show(result: SectionResult) -> str:
    lines = [f"# {result.source_path} § {result.section}"]
    for chunk in result.chunks:
        lines += [f"--- #{chunk.chunk_index} {chunk.chunk_type} ({chunk.source.citation})"]
        lines += [chunk.text]
        lines += [
            f"    -> {r.label}: {r.title}, p. {r.page}" if r.kind else f"    -> {r.label}: ?"
            for r in chunk.references
        ]
    return "\n".join(lines)


def _nothing(options: SectionOptions) -> str:
    where = f" of {options.doc}" if options.doc else ""
    return f"no section {options.path_or_number!r} in the indexed documents{where}"


TOOL = Tool(
    name="section",
    description="Read one section of a document, in order.",
    summary="a section's chunks in order (3.2, /2 Register Map/ or a title)",
    arguments=SectionArgs,
    options=SectionOptions,
    function=section,
    show=_show,
    found=lambda s: [Found(text=c.text, kind="section", source=c.source) for c in s.chunks],
    nothing=_nothing,
)
