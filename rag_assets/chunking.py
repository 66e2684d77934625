"""A document to its chunk rows, and the checks on those rows: what the pipeline ships and what
the retrieval evaluation measures, by one path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.errors import DocumentError
from rag_assets.llm import LLMClient
from rag_assets.profile.model import DocumentProfile
from rag_assets.quality.chunks import (
    check_chunks_have_content,
    check_header_paths,
    check_ids_unique_and_deterministic,
    check_metadata_complete,
    check_pages_within_document,
)
from rag_assets.quality.coverage import check_coverage
from rag_assets.quality.outcome import CheckOutcome
from rag_assets.tables.models import TableMarkdown
from rag_assets.tables.structure import with_table_markdown
from rag_assets.templates.base import ChunkTemplate, link_neighbours
from rag_assets.templates.choice_cache import ChoiceCache
from rag_assets.templates.registry import build_template
from rag_assets.templates.sections import with_document_sections
from rag_assets.templates.select import TemplateChoice, choose_template
from rag_assets.templates.tokens import TokenCounter
from rag_assets.vocabulary import Vocabulary


@dataclass(frozen=True)
class ChunkedDocument:
    """A document's chunk rows and how they were made."""

    doc: StandardizedDocument  # with each table's chosen markdown in place
    rows: list[ChunkRow]
    choice: TemplateChoice
    template: ChunkTemplate
    structure: BaseModel | None  # the template's view of the document (articles, sections)

    @property
    def degraded(self) -> list[str]:
        """Optional steps of the choice and of the chunking that failed, and why."""
        return [*self.choice.degraded, *self.template.failures.notes()]


def chunk_document(
    doc: StandardizedDocument,
    requested_template: str,
    options: Mapping[str, Any],
    counter: TokenCounter,
    tables: Sequence[TableMarkdown] = (),
    llm: LLMClient | None = None,
    choice_cache: ChoiceCache | None = None,
) -> ChunkedDocument:
    """The template `requested_template` names (`auto`: the one the document's text calls for)
    cuts the document, its tables in their chosen markdown, into rows linked to their
    neighbours when the options ask for it.

    Raises ConfigurationError for an unknown template or invalid options.
    """
    if tables:
        doc = with_table_markdown(doc, list(tables))
    choice = choose_template(doc, requested_template, llm=llm, cache=choice_cache)
    template = build_template(choice.template, options, llm=llm)
    rows = template.chunk(doc, counter)
    if rows and template.options.neighbour_ids:
        rows = link_neighbours(rows)
    rows = with_document_sections(rows, template.options.section_titles)
    rows = with_profile_fields(rows, doc, template.vocabularies(doc))
    return ChunkedDocument(doc, rows, choice, template, template.document_structure(doc))


def require_chunks(chunked: ChunkedDocument) -> None:
    """Raise DocumentError when the template made no chunks: a document with nothing to search
    would otherwise land as done, unnoticed."""
    if not chunked.rows:
        raise DocumentError(
            f"{chunked.doc.source_path}: the {chunked.template.name} template made no chunks "
            f"from {len(chunked.doc.elements)} elements"
        )


def with_profile_fields(
    rows: list[ChunkRow], doc: StandardizedDocument, vocabularies: Sequence[Vocabulary] = ()
) -> list[ChunkRow]:
    """Each row's metadata holds the document's profile fields (`doc_organization`,
    `doc_kind`, `doc_year`, ...) and the vocabulary packs it was chunked with
    (`doc_vocabularies`): a search can filter on them and learn what the documents of a
    collection are, and which packs read its questions."""
    profile = doc.metadata.get("profile")
    fields = DocumentProfile.model_validate(profile).index_metadata() if profile else {}
    if vocabularies:
        fields["doc_vocabularies"] = [pack.source for pack in vocabularies]
    if not fields:
        return rows
    return [row.model_copy(update={"metadata": {**row.metadata, **fields}}) for row in rows]


@dataclass(frozen=True)
class ChunkCheck:
    name: str
    outcome: CheckOutcome
    blocking: bool  # a failure stops the rows going further; otherwise a warning


def check_chunks(
    records: list[dict], chunked: ChunkedDocument, coverage_floor: float
) -> list[ChunkCheck]:
    """Every check on a document's chunk rows (as stored: `records` read back from the table)."""
    doc, template = chunked.doc, chunked.template
    return [
        ChunkCheck("chunk_metadata_complete", check_metadata_complete(records, doc.doc_id), True),
        ChunkCheck(
            "chunk_ids_unique_deterministic", check_ids_unique_and_deterministic(records), True
        ),
        ChunkCheck(
            "header_paths_consistent",
            check_header_paths(
                records, doc, template.headings_from_text, template.options.header_path_separator
            ),
            True,
        ),
        ChunkCheck(
            "pages_within_document", check_pages_within_document(records, doc.page_count), True
        ),
        ChunkCheck(
            "chunks_have_content",
            check_chunks_have_content(records, doc, template.headings_from_text),
            True,
        ),
        # A warning, not a gate: templates drop some text on purpose (internal notes, headings).
        ChunkCheck(
            "chunks_cover_document", check_coverage(records, doc.markdown, coverage_floor), False
        ),
    ]
