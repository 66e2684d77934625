"""The index's rows: what is written (from a document's chunks and embeddings), what a search
returns, and what a replacement wrote."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.embedding.rows import EmbeddingRow, sparse_weights
from rag_assets.index.schema import NO_PAGE, SCALAR_FIELDS, TEXT_MAX_BYTES
from rag_assets.language import detect_language

# A kept row's metadata: how many later chunks repeat it, and the first of their ids (Milvus
# caps a JSON field at 64 KB, and a page of identical sections can repeat thousands of times).
DUPLICATE_COUNT = "duplicate_count"
DUPLICATE_IDS = "duplicate_chunk_ids"
DUPLICATE_IDS_KEPT = 100


class IndexRow(BaseModel):
    chunk_id: str
    doc_id: str
    text: str
    # What the dense vector and BM25 see: title + breadcrumb + text; empty means `text`.
    context_text: str = ""
    language: str = ""  # empty: detected from context_text
    dense: list[float]
    sparse_learned: dict[int, float] | None = None
    metadata: dict = Field(default_factory=dict)
    chunk_type: str = "text"
    header_path: str = "/"
    source_path: str = ""
    template: str = ""
    page_start: int | None = None
    page_end: int | None = None
    chunk_index: int = 0

    @field_validator("dense", mode="before")
    @classmethod
    def _unit_list(cls, value: Any) -> Any:
        return unit_vector(value)

    @field_validator("text", "context_text")
    @classmethod
    def _fits_varchar(cls, value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > TEXT_MAX_BYTES:
            raise ValueError(
                f"chunk text is {size} bytes; the index holds {TEXT_MAX_BYTES} at most"
            )
        return value

    @model_validator(mode="after")
    def _fill_context(self) -> IndexRow:
        if not self.context_text:
            self.context_text = self.text
        if not self.language:
            self.language = detect_language(self.context_text)
        return self

    @classmethod
    def from_chunk(
        cls, chunk: ChunkRow, dense: Any, sparse: dict[int, float] | None = None
    ) -> IndexRow:
        """An index row for a chunk; provenance the schema has no column for goes to metadata."""
        provenance = chunk.model_dump(
            include={"source_sha256", "headings", "logical_unit", "start_char", "end_char"}
        )
        return cls(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            text=chunk.text,
            context_text=chunk.context_text,
            dense=dense,
            sparse_learned=sparse,
            metadata={**chunk.metadata, **provenance},
            chunk_type=chunk.chunk_type,
            header_path=chunk.header_path,
            source_path=chunk.source_path,
            template=chunk.template,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
            chunk_index=chunk.chunk_index,
        )


def unit_vector(vector: Any) -> list[float]:
    """The vector scaled to length 1 (a zero vector as it is): its inner products are cosines."""
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return (array / norm if norm > 0 else array).tolist()


def index_rows(chunks: list[ChunkRow], vectors: list[EmbeddingRow]) -> list[IndexRow]:
    """One row per distinct chunk of a document: a chunk whose embedded text repeats an earlier
    one of the same document is not indexed again; the kept row counts it and lists its id.
    Thousands of identical vectors crowd out every other document's rows in an approximate
    index and add nothing a search could return."""
    by_id = {v.chunk_id: v for v in vectors}
    missing = [c.chunk_id for c in chunks if c.chunk_id not in by_id]
    if missing:
        raise ValueError(f"{len(missing)} chunks have no embedding (first: {missing[0]})")
    kept: dict[tuple[str, str], IndexRow] = {}
    rows: list[IndexRow] = []
    for chunk in chunks:
        same = kept.get((chunk.doc_id, chunk.context_text or chunk.text))
        if same is not None:
            same.metadata[DUPLICATE_COUNT] = same.metadata.get(DUPLICATE_COUNT, 0) + 1
            if len(ids := same.metadata.setdefault(DUPLICATE_IDS, [])) < DUPLICATE_IDS_KEPT:
                ids.append(chunk.chunk_id)
            continue
        vector = by_id[chunk.chunk_id]
        row = IndexRow.from_chunk(chunk, vector.dense, sparse_weights(vector) or None)
        kept[(chunk.doc_id, chunk.context_text or chunk.text)] = row
        rows.append(row)
    return rows


class SearchHit(BaseModel):
    chunk_id: str
    doc_id: str
    source_path: str
    header_path: str
    page_start: int | None
    page_end: int | None
    score: float  # the retriever's own: cosine (dense), BM25, or inner product (sparse)
    text: str
    chunk_type: str
    template: str
    chunk_index: int
    metadata: dict
    language: str

    @classmethod
    def from_stored(cls, hit: Any) -> SearchHit:
        """A hit of a Milvus search that asked for `SCALAR_FIELDS`."""
        return cls(score=float(hit["distance"]), **stored_fields(hit["entity"]))


def stored_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row's `SCALAR_FIELDS`, pages as the chunk had them (None for `NO_PAGE`)."""
    fields = {k: row[k] for k in SCALAR_FIELDS}
    for page in ("page_start", "page_end"):
        if fields.get(page) == NO_PAGE:
            fields[page] = None
    return fields


class RankedId(NamedTuple):
    chunk_id: str
    score: float  # as in SearchHit
    fields: dict[str, Any]  # only the output fields asked for


class ReplaceResult(BaseModel):
    collection: str
    doc_id: str
    upserted: int
    deleted: int  # stale rows of an earlier generation
    row_count: int  # the document's rows after the replacement
    seconds: float


class IndexReport(BaseModel):
    """The vector_index partition's record: where the document's rows are and how many."""

    doc_id: str
    collection: str
    uri: str
    model: str
    dimension: int
    rows: int
    upserted: int
    deleted_stale: int
