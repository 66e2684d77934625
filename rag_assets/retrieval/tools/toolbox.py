"""What every typed tool works on: the `Toolbox` (the retriever on the index plus the stored
chunks, read lazily) and the `Source` each result carries, so an answer can cite what a tool
found."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pydantic import BaseModel

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.figures import figure_image
from rag_assets.index.rows import SearchHit
from rag_assets.retrieval.search import (
    RetrievedHit,
    Retriever,
    SearchFilters,
    citation,
    open_retriever,
)
from rag_assets.settings import Settings
from rag_assets.sources.collections import RuntimeChoices, load_collections, plan_document
from rag_assets.templates.spec import SpecOptions, SpecStructure, spec_structure


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


@dataclass
class Toolbox:
    """The index and the stored chunks, as the assets wrote them under one data folder."""

    settings: Settings
    retriever: Retriever
    _chunks: list[ChunkRow] | None = None
    _structures: dict[str, SpecStructure | None] = field(default_factory=dict)

    def chunks(self) -> list[ChunkRow]:
        if self._chunks is None:
            # Imported here: storage brings pyarrow, which the CLI's parser (built from the
            # tools) must not cost a replayed ingest.
            from rag_assets.storage import read_chunks

            self._chunks = read_chunks(self.settings)
        return self._chunks

    def hits(
        self, query: str, top_k: int, filters: SearchFilters | None = None
    ) -> list[RetrievedHit]:
        """The retriever's hits one a chunk, never grouped by page: a tool's results are
        passages, rows or figures, each cited on its own."""
        return self.retriever.search(query, top_k, filters, group_pages=False).hits

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
        # As above: storage brings pyarrow.
        from rag_assets.storage import asset_dir

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
