"""Templates side by side: the corpus chunked, embedded and indexed per template, the
questions searched and scored per run, the table of every slice."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from rag_assets.chunking import chunk_document
from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.embedding.models import Embedder, EmbeddingBatch
from rag_assets.embedding.rows import embed_rows
from rag_assets.index.rows import IndexRow, index_rows
from rag_assets.index.store import MilvusIndex
from rag_assets.retrieval.evaluation.metrics import (
    METRICS,
    ChunkLookup,
    QuestionOutcome,
    Retrievable,
    SliceMetrics,
    aggregate,
    document_names,
    question_slices,
    score_ranking,
    slice_order,
)
from rag_assets.retrieval.evaluation.sets import EvalQuestion
from rag_assets.retrieval.search import Retriever, SearchFilters
from rag_assets.settings.fusion import FusionSettings
from rag_assets.settings.groups import DEFAULT_EMBEDDED_PART, EmbeddedPart
from rag_assets.templates.tokens import TokenCounter
from rag_assets.text.progress import TEMPLATES_EVALUATED, progress_line

TOP_K = 10

Mode = Literal["hybrid", "bm25", "dense"]


@dataclass(frozen=True)
class RunSpec:
    """One row of the table: a template's chunks searched one way (`pages`: None groups hits
    by page as the fusion settings say, as the search does; False: a hit per chunk)."""

    template: str
    mode: Mode = "hybrid"
    pages: bool | None = None
    # Fusion settings this run turns another way than the product's (`section_titles=False`),
    # searched on the same chunks.
    fusion: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        name = self.template if self.mode == "hybrid" else f"{self.template}:{self.mode}"
        name = f"{name}:chunks" if self.pages is False else name
        return "".join([name, *(f"[{field}={value}]" for field, value in self.fusion)])


def run_specs(
    templates: Sequence[str],
    single_retriever_template: str | None,
    chunks_template: str | None = None,
    fusion_variants: Sequence[tuple[tuple[str, Any], ...]] = (),
) -> list[RunSpec]:
    """Hybrid search for every template, plus BM25 alone and dense alone for one of them, a
    hit per chunk (pages not grouped) for one, and every template searched with each of
    `fusion_variants`' settings."""
    runs = [RunSpec(t) for t in templates]
    if single_retriever_template:
        runs += [RunSpec(single_retriever_template, m) for m in ("bm25", "dense")]
    if chunks_template:
        runs.append(RunSpec(chunks_template, pages=False))
    runs += [RunSpec(t, fusion=variant) for variant in fusion_variants for t in templates]
    return runs


class RunReport(BaseModel):
    name: str
    template: str
    mode: str
    chunks: int
    templates_used: dict[str, int]  # documents per template (`auto` picks one per document)
    slices: dict[str, SliceMetrics]
    # `id (rank of the first target, or not in the top 10): question -> first hit`, rank > 1
    misses: list[str] = Field(default_factory=list)


class Comparison(BaseModel):
    documents: int
    questions: int
    skipped: list[str] = Field(default_factory=list)  # ids whose document is not in the corpus
    runs: list[RunReport]

    def flat_metrics(self) -> dict[str, float]:
        """`semantic/mrr@10`, `semantic/lang:zh/mrr@10`, ...: one float per run, slice, metric."""
        flat: dict[str, float] = {}
        for run in self.runs:
            for name, found in run.slices.items():
                prefix = run.name if name == "all" else f"{run.name}/{name}"
                for metric, value in found.metrics.items():
                    flat[f"{prefix}/{metric}"] = round(value, 4)
        return flat

    def markdown_table(self) -> str:
        """Slices down, runs side by side within each slice."""
        lines = [
            "| slice | n | run | R@1 | R@5 | R@10 | MRR@10 | nDCG@10 | Doc@1 | reachable |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        slice_names = list(dict.fromkeys(s for run in self.runs for s in run.slices))
        for slice_name in sorted(slice_names, key=slice_order):
            for run in self.runs:
                found = run.slices.get(slice_name)
                if found is None:
                    continue
                values = " | ".join(f"{found.metrics[m]:.3f}" for m in METRICS)
                lines.append(
                    f"| {slice_name} | {found.questions} | {run.name} | {values} "
                    f"| {found.reachable:.2f} |"
                )
        return "\n".join(lines)


def in_corpus(question: EvalQuestion, names: set[str]) -> bool:
    """False when a target names a document that is not in the corpus."""
    return all(t.doc is None or t.doc in names for t in question.targets)


def chunk_documents(
    documents: Sequence[StandardizedDocument],
    template: str,
    counter: TokenCounter,
    options: dict[str, Any],
    document_options: Mapping[str, dict[str, Any]] | None = None,
) -> tuple[list[ChunkRow], dict[str, int]]:
    """Every document's chunks as the pipeline makes them with `template` (`auto`: the one the
    text rules pick per document), a document's own options (as its collection's) over
    `options`."""
    chunks: list[ChunkRow] = []
    used: Counter[str] = Counter()
    for doc in documents:
        own = (document_options or {}).get(doc.doc_id, {})
        chunked = chunk_document(doc, template, {**options, **own}, counter)
        used[chunked.choice.template] += 1
        chunks.extend(chunked.rows)
    return chunks, dict(sorted(used.items()))


def index_chunks(
    index: MilvusIndex,
    embedder: Embedder,
    chunks: Sequence[ChunkRow],
    report: Callable[[str], None] = lambda _: None,
    embedded: EmbeddedPart = DEFAULT_EMBEDDED_PART,
) -> str:
    """Embed the chunks as chunk_embeddings does (reporting as it does) and make them their
    documents' rows."""
    vectors, _ = embed_rows(embedder, chunks, report, part=embedded)
    collection = index.ensure_collection(embedder.name, embedder.dimension, embedder.has_sparse)
    by_doc: dict[str, list[IndexRow]] = defaultdict(list)
    for row in index_rows(list(chunks), vectors):
        by_doc[row.doc_id].append(row)
    for doc_id, rows in by_doc.items():
        index.replace_document(collection, doc_id, rows)
    return collection


def mode_fusion(fusion: FusionSettings, mode: Mode) -> FusionSettings:
    """The product's fusion settings, or one retriever alone whatever the query's language
    (without the ranking by the question's identifiers, which reorders their candidates).

    Outside the model's languages one weight covers dense and learned sparse alike, so there
    `dense` also runs a model's sparse head (MiniLM has none).
    """
    if mode == "bm25":
        only = {
            "bm25_weight": 1.0,
            "dense_weight": 0.0,
            "foreign_model_weight": 0.0,
            "foreign_model_fill": False,
        }
    elif mode == "dense":
        only = {"bm25_weight": 0.0, "dense_weight": 1.0, "foreign_model_weight": 1.0}
    else:
        return fusion
    return fusion.model_copy(update={**only, "sparse_weight": 0.0, "identifier_weight": 0.0})


class EncodedQueries:
    """The embedder for the Retriever, with every question encoded once, in one batch; a text
    the search asks for besides (a question with its statement's names added) is encoded the
    first time it is asked for, and kept."""

    def __init__(self, embedder: Embedder, questions: Sequence[str]) -> None:
        self.name = embedder.name
        self.has_sparse = embedder.has_sparse
        self.languages = embedder.languages
        self._embedder = embedder
        self._encoded: dict[str, tuple[np.ndarray, dict[int, float] | None]] = {}
        self._encode(list(dict.fromkeys(questions)))

    def encode_queries(self, texts: list[str]) -> EmbeddingBatch:
        self._encode([text for text in dict.fromkeys(texts) if text not in self._encoded])
        rows = [self._encoded[text] for text in texts]
        sparse = [row[1] for row in rows]
        return EmbeddingBatch(
            dense=np.stack([row[0] for row in rows]),
            sparse=sparse if self.has_sparse and all(s is not None for s in sparse) else None,
        )

    def _encode(self, texts: list[str]) -> None:
        if not texts:
            return
        batch = self._embedder.encode_queries(texts)
        for i, text in enumerate(texts):
            self._encoded[text] = (batch.dense[i], batch.sparse[i] if batch.sparse else None)


def compare_templates(
    documents: Sequence[StandardizedDocument],
    questions: Sequence[EvalQuestion],
    runs: Sequence[RunSpec],
    embedder: Embedder,
    counter: TokenCounter,
    open_index: Callable[[str], AbstractContextManager[MilvusIndex]],
    options: dict[str, Any] | None = None,
    fusion: FusionSettings | None = None,
    top_k: int = TOP_K,
    log: Callable[[str], None] = lambda _: None,
    embedded: EmbeddedPart = DEFAULT_EMBEDDED_PART,
    document_options: Mapping[str, dict[str, Any]] | None = None,
) -> Comparison:
    """Chunk, embed and index the documents once per template, then score every run;
    `document_options` (by doc id) are some documents' own options, as a collection's.

    `open_index(prefix)` opens the index under that collection prefix (`eval_<template>`), as
    the pipeline's store opener does, so evaluation never touches the product's own collection.
    """
    names = {n for d in documents for n in document_names(d.doc_id, d.source_path)}
    asked = [q for q in questions if in_corpus(q, names)]
    skipped = [q.id for q in questions if not in_corpus(q, names)]
    # Rows of documents evaluated before but gone from the corpus stay in the collections;
    # the filter keeps them out of the results.
    corpus = SearchFilters(doc_ids=sorted({d.doc_id for d in documents}))
    queries = EncodedQueries(embedder, [q.question for q in asked])
    reports: list[RunReport] = []
    templates = list(dict.fromkeys(r.template for r in runs))
    for done, template in enumerate(templates, start=1):
        started = time.perf_counter()
        chunks, used = chunk_documents(
            documents, template, counter, options or {}, document_options
        )
        lookup = ChunkLookup(chunks)
        slices = {q.id: question_slices(q, lookup) for q in asked}
        with open_index(f"eval_{template}") as index:
            collection = index_chunks(index, embedder, chunks, log, embedded)
            log(
                f"{template}: {len(chunks)} chunks of {len(documents)} documents indexed "
                f"in {time.perf_counter() - started:.1f} s"
            )
            for run in (r for r in runs if r.template == template):
                retriever = Retriever(
                    index,
                    collection,
                    queries,
                    fusion=mode_fusion(fusion or FusionSettings(), run.mode).model_copy(
                        update=dict(run.fusion)
                    ),
                )
                outcomes = []
                misses = []
                for question in asked:
                    hits = retriever.search(
                        question.question, top_k, corpus, group_pages=run.pages
                    ).hits
                    scores = score_ranking(hits, question.targets)
                    outcomes.append(QuestionOutcome(question, *slices[question.id], scores))
                    if scores["mrr@10"] < 1:
                        first = _where(hits[0]) if hits else "nothing"
                        found = (
                            f"rank {round(1 / scores['mrr@10'])}"
                            if scores["mrr@10"]
                            else "not in the top 10"
                        )
                        misses.append(f"{question.id} ({found}): {question.question} -> {first}")
                reports.append(
                    RunReport(
                        name=run.name,
                        template=template,
                        mode=run.mode,
                        chunks=len(chunks),
                        templates_used=used,
                        slices=aggregate(outcomes),
                        misses=misses,
                    )
                )
        log(progress_line(TEMPLATES_EVALUATED, done, len(templates)))
    return Comparison(documents=len(documents), questions=len(asked), skipped=skipped, runs=reports)


def _where(hit: Retrievable) -> str:
    pages = f" p.{hit.page_start}" if hit.page_start else ""
    return f"{Path(hit.source_path).name}{pages}: {' '.join(hit.text.split())[:80]}"
