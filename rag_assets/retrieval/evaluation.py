"""Retrieval evaluation: question sets, relevance, metrics per slice, templates side by side.

Three set formats are read from a folder:

- the project's JSONL (`*.jsonl`, one question a line): `id`, `question`, `language`, `tags`,
  and relevance as `doc` (doc id or source file name), `page` and/or `evidence` (a string the
  chunk's text must contain, whitespace aside, or a list of such strings); a chunk is relevant
  when it meets every field given. `relevant: [{doc, page, evidence}, ...]` lists several targets instead.
- BEIR (a folder with `queries.jsonl`, `qrels/*.tsv` and `corpus.jsonl`): a corpus row with
  `doc` / `page` / `evidence` (top level or under `metadata`) maps onto an ingested document;
  any other row is a passage indexed as a document of its own.
- SQuAD / CMRC 2018 JSON (`data[].paragraphs[].qas[]`): passage retrieval, each paragraph a
  document of its own and the one relevant to its questions.

Metrics count *targets* (what a question says is relevant), not chunks, so templates that cut a
target into more or fewer chunks are compared fairly: Recall@k is the share of a question's
targets matched by a hit in the top k; MRR@10 the reciprocal rank of the first relevant hit;
nDCG@10 binary, each target credited once, against one target per rank as the ideal.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, field_validator, model_validator

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.embedding.models import Embedder, EmbeddingBatch
from rag_assets.errors import ConfigurationError
from rag_assets.index.rows import IndexRow
from rag_assets.index.store import MilvusIndex
from rag_assets.language import detect_language
from rag_assets.normalize.markdown import assemble_markdown
from rag_assets.retrieval.search import Retriever, SearchFilters
from rag_assets.settings.fusion import FusionSettings
from rag_assets.templates.tokens import TokenCounter
from rag_assets.text.normalize import normalize_unspaced

CUTOFFS = (1, 5, 10)
MRR_CUTOFF = 10
NDCG_CUTOFF = 10
TOP_K = 10
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")


# ----------------------------------------------------------------------------- sets


class Target(BaseModel):
    """One thing a question asks for; a chunk matches it when it meets every field given."""

    doc: str | None = None  # doc id, source path or file name
    page: int | None = None
    # Text the chunk must contain; a list when the parts may be laid out apart (table cells).
    evidence: list[str] = Field(default_factory=list)

    @field_validator("evidence", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value or []

    @model_validator(mode="after")
    def _something(self) -> Target:
        if self.doc is None and self.page is None and not self.evidence:
            raise ValueError("a relevance target needs a doc, a page or an evidence string")
        if self.page is not None and self.doc is None:
            raise ValueError("a page means nothing without its doc")
        return self


class EvalQuestion(BaseModel):
    id: str
    question: str
    language: str = ""  # detected from the text when empty
    tags: list[str] = Field(default_factory=list)
    targets: list[Target]
    set_name: str = ""

    @model_validator(mode="after")
    def _defaults(self) -> EvalQuestion:
        if not self.targets:
            raise ValueError(f"question {self.id!r} has no relevance target")
        if not self.language:
            self.language = detect_language(self.question)
        return self


class Passage(BaseModel):
    """A set's own passage, indexed as a document of its own."""

    doc_id: str
    title: str = ""
    text: str


class EvalSet(BaseModel):
    name: str
    questions: list[EvalQuestion]
    passages: list[Passage] = Field(default_factory=list)


def load_eval_sets(folder: Path) -> list[EvalSet]:
    """Every set in `folder`: `*.jsonl` files, SQuAD/CMRC `*.json` files, BEIR sub-folders."""
    if not folder.is_dir():
        raise ConfigurationError(f"no evaluation folder {folder}")
    sets: list[EvalSet] = []
    for path in sorted(folder.iterdir()):
        _within(folder, path)
        if path.is_dir() and (path / "queries.jsonl").is_file():
            sets.append(load_beir_set(path))
        elif path.suffix == ".jsonl":
            sets.append(load_jsonl_set(path))
        elif path.suffix == ".json":
            sets.append(load_squad_set(path))
    return sets


def load_eval_set(path: Path) -> EvalSet:
    """One set by path, whatever its format."""
    if path.is_dir():
        return load_beir_set(path)
    return load_jsonl_set(path) if path.suffix == ".jsonl" else load_squad_set(path)


def _jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, json.loads(line)


def load_jsonl_set(path: Path) -> EvalSet:
    questions = []
    for number, record in _jsonl(path):
        targets = record.get("relevant") or [
            {k: record[k] for k in ("doc", "page", "evidence") if record.get(k) is not None}
        ]
        try:
            questions.append(
                EvalQuestion(
                    id=str(record.get("id", f"{path.stem}-{number}")),
                    question=record["question"],
                    language=record.get("language", ""),
                    tags=list(record.get("tags", [])),
                    targets=targets,
                    set_name=path.stem,
                )
            )
        except (KeyError, ValueError) as error:
            raise ConfigurationError(f"{path}:{number}: {error}") from error
    return EvalSet(name=path.stem, questions=questions)


def load_squad_set(path: Path) -> EvalSet:
    """SQuAD / CMRC 2018: each paragraph is a passage, relevant to the questions asked of it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    passages: dict[str, Passage] = {}
    questions: list[EvalQuestion] = []
    for article in data.get("data", []):
        title = str(article.get("title", ""))
        for paragraph in article.get("paragraphs", []):
            text = paragraph["context"]
            # The text's hash: a paragraph repeated across articles is one passage.
            doc_id = f"{path.stem}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
            passages.setdefault(doc_id, Passage(doc_id=doc_id, title=title, text=text))
            for qa in paragraph.get("qas", []):
                if qa.get("is_impossible"):
                    continue
                questions.append(
                    EvalQuestion(
                        id=str(qa["id"]),
                        question=qa["question"],
                        targets=[Target(doc=doc_id)],
                        set_name=path.stem,
                    )
                )
    return EvalSet(name=path.stem, questions=questions, passages=list(passages.values()))


def _within(root: Path, path: Path) -> Path:
    """`path`, refused when it (through a symbolic link) leads outside `root`: evaluation sets,
    like the inbox, never read what lies outside their folder."""
    if not path.resolve().is_relative_to(root.resolve()):
        raise ConfigurationError(f"{path}: a symbolic link leading outside {root}; not read")
    return path


def load_beir_set(folder: Path) -> EvalSet:
    for part in (folder / "corpus.jsonl", folder / "queries.jsonl", *folder.glob("qrels/*")):
        _within(folder, part)
    corpus_targets: dict[str, Target] = {}
    passages: list[Passage] = []
    corpus = folder / "corpus.jsonl"
    if corpus.is_file():
        for _, row in _jsonl(corpus):
            fields = {**row.get("metadata", {}), **row}
            mapped = {k: fields[k] for k in ("doc", "page", "evidence") if fields.get(k)}
            corpus_id = str(row["_id"])
            if mapped:
                corpus_targets[corpus_id] = Target(**mapped)
            else:
                doc_id = f"{folder.name}-{corpus_id}"
                passages.append(
                    Passage(doc_id=doc_id, title=row.get("title", ""), text=row["text"])
                )
                corpus_targets[corpus_id] = Target(doc=doc_id)
    relevant: dict[str, list[Target]] = defaultdict(list)
    for qrels in sorted((folder / "qrels").glob("*.tsv")):
        with qrels.open(encoding="utf-8", newline="") as handle:
            for row in csv.reader(handle, delimiter="\t"):
                if len(row) < 3 or row[0] == "query-id" or float(row[2]) <= 0:
                    continue
                if row[1] not in corpus_targets:
                    raise ConfigurationError(f"{qrels}: corpus id {row[1]!r} is not in {corpus}")
                relevant[row[0]].append(corpus_targets[row[1]])
    questions = [
        EvalQuestion(
            id=str(query["_id"]),
            question=query["text"],
            language=query.get("metadata", {}).get("language", ""),
            tags=list(query.get("metadata", {}).get("tags", [])),
            targets=relevant[str(query["_id"])],
            set_name=folder.name,
        )
        for _, query in _jsonl(folder / "queries.jsonl")
        if relevant.get(str(query["_id"]))
    ]
    return EvalSet(name=folder.name, questions=questions, passages=passages)


def passage_document(passage: Passage) -> StandardizedDocument:
    """A passage as IR: its title as a heading (when it has one) over one paragraph."""
    elements = [DocumentElement(type="paragraph", text=passage.text)]
    if passage.title:
        elements.insert(0, DocumentElement(type="heading", level=1, text=passage.title))
    markdown, placed = assemble_markdown(elements)
    return StandardizedDocument(
        doc_id=passage.doc_id,
        source_path=passage.doc_id,
        source_sha256=hashlib.sha256(passage.text.encode()).hexdigest(),
        parser="passage",
        parser_version="1",
        language=detect_language(passage.text),
        title=passage.title or None,
        markdown=markdown,
        elements=placed,
    )


# ------------------------------------------------------------------------ relevance


class Retrievable(Protocol):
    """What relevance looks at: search hits and chunk rows both have it."""

    doc_id: str
    source_path: str
    page_start: int | None
    page_end: int | None
    text: str


# Every question scans the corpus' chunks for the ones relevant to it.
_normalized = functools.lru_cache(maxsize=2**16)(normalize_unspaced)


def matches(hit: Retrievable, target: Target) -> bool:
    if target.doc is not None and target.doc not in _names(hit.doc_id, hit.source_path):
        return False
    if target.page is not None and not (
        hit.page_start is not None
        and hit.page_start <= target.page <= (hit.page_end or hit.page_start)
    ):
        return False
    text = _normalized(hit.text)
    return all(_normalized(part) in text for part in target.evidence)


# -------------------------------------------------------------------------- metrics


def score_ranking(hits: Sequence[Retrievable], targets: Sequence[Target]) -> dict[str, float]:
    """Recall@1/5/10, MRR@10 and nDCG@10 of one ranked list against a question's targets."""
    matched = [{i for i, t in enumerate(targets) if matches(hit, t)} for hit in hits]
    scores: dict[str, float] = {}
    for k in CUTOFFS:
        found = set().union(*matched[:k])
        scores[f"recall@{k}"] = len(found) / len(targets)
    first = next((rank for rank, m in enumerate(matched[:MRR_CUTOFF], 1) if m), None)
    scores[f"mrr@{MRR_CUTOFF}"] = 1 / first if first else 0.0
    credited: set[int] = set()
    dcg = 0.0
    for rank, m in enumerate(matched[:NDCG_CUTOFF], 1):
        fresh = sorted(m - credited)
        if fresh:
            credited.add(fresh[0])
            dcg += 1 / math.log2(rank + 1)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(targets), NDCG_CUTOFF) + 1))
    scores[f"ndcg@{NDCG_CUTOFF}"] = dcg / ideal
    return scores


class SliceMetrics(BaseModel):
    questions: int
    reachable: float  # share of questions some indexed chunk is relevant to
    metrics: dict[str, float]  # METRICS -> mean over the slice's questions


@dataclass
class QuestionOutcome:
    question: EvalQuestion
    slices: list[str]
    reachable: bool
    scores: dict[str, float]


class ChunkLookup:
    """A corpus' chunks in document order, reachable by any name of their document."""

    def __init__(self, chunks: Sequence[ChunkRow]) -> None:
        self.chunks = list(chunks)
        self._by_name: dict[str, list[int]] = defaultdict(list)
        for position, chunk in enumerate(self.chunks):
            for name in dict.fromkeys(_names(chunk.doc_id, chunk.source_path)):
                self._by_name[name].append(position)

    def first_relevant(self, targets: Sequence[Target]) -> ChunkRow | None:
        found = [
            next((p for p in self._candidates(target) if matches(self.chunks[p], target)), None)
            for target in targets
        ]
        positions = [p for p in found if p is not None]
        return self.chunks[min(positions)] if positions else None

    def _candidates(self, target: Target) -> Sequence[int]:
        return self._by_name.get(target.doc, []) if target.doc else range(len(self.chunks))


def _names(doc_id: str, source_path: str) -> tuple[str, str, str]:
    return doc_id, source_path, Path(source_path).name


def question_slices(question: EvalQuestion, lookup: ChunkLookup) -> tuple[list[str], bool]:
    """The slices a question falls in: language, tags, and the type and template of the first
    chunk (in document order) relevant to it; `type:none` when no chunk is."""
    relevant = lookup.first_relevant(question.targets)
    slices = ["all", f"lang:{question.language}", *(f"tag:{t}" for t in question.tags)]
    if relevant is None:
        return [*slices, "type:none"], False
    return [*slices, f"type:{relevant.chunk_type}", f"template:{relevant.template}"], True


def aggregate(outcomes: Sequence[QuestionOutcome]) -> dict[str, SliceMetrics]:
    grouped: dict[str, list[QuestionOutcome]] = defaultdict(list)
    for outcome in outcomes:
        for name in outcome.slices:
            grouped[name].append(outcome)
    return {
        name: SliceMetrics(
            questions=len(group),
            reachable=sum(o.reachable for o in group) / len(group),
            metrics={m: sum(o.scores[m] for o in group) / len(group) for m in METRICS},
        )
        for name, group in sorted(grouped.items(), key=lambda item: _slice_order(item[0]))
    }


def _slice_order(name: str) -> tuple[int, str]:
    kinds = ["all", "lang", "tag", "type", "template"]
    return kinds.index(name.split(":")[0]), name


# ----------------------------------------------------------------------- comparison

Mode = Literal["hybrid", "bm25", "dense"]


@dataclass(frozen=True)
class RunSpec:
    """One row of the table: a template's chunks searched one way."""

    template: str
    mode: Mode = "hybrid"

    @property
    def name(self) -> str:
        return self.template if self.mode == "hybrid" else f"{self.template}:{self.mode}"


def run_specs(templates: Sequence[str], single_retriever_template: str | None) -> list[RunSpec]:
    """Hybrid search for every template, plus BM25 alone and dense alone for one of them."""
    runs = [RunSpec(t) for t in templates]
    if single_retriever_template:
        runs += [RunSpec(single_retriever_template, m) for m in ("bm25", "dense")]
    return runs


class RunReport(BaseModel):
    name: str
    template: str
    mode: str
    chunks: int
    templates_used: dict[str, int]  # documents per template (`auto` picks one per document)
    slices: dict[str, SliceMetrics]
    misses: list[str] = Field(default_factory=list)  # `id: question -> first hit` at rank > 1


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
            "| slice | n | run | R@1 | R@5 | R@10 | MRR@10 | nDCG@10 | reachable |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|",
        ]
        slice_names = list(dict.fromkeys(s for run in self.runs for s in run.slices))
        for slice_name in sorted(slice_names, key=_slice_order):
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
) -> tuple[list[ChunkRow], dict[str, int]]:
    """Every document's chunks with `template` (`auto`: the one the text rules pick per document)."""
    from rag_assets.templates.registry import build_template
    from rag_assets.templates.select import choose_template

    chunks: list[ChunkRow] = []
    used: Counter[str] = Counter()
    for doc in documents:
        name = choose_template(doc, template).template
        used[name] += 1
        chunks.extend(build_template(name, options).chunk(doc, counter))
    return chunks, dict(sorted(used.items()))


def index_chunks(index: MilvusIndex, embedder: Embedder, chunks: Sequence[ChunkRow]) -> str:
    """Embed the chunks as chunk_embeddings does and make them their documents' rows."""
    from rag_assets.embedding.rows import embedding_rows
    from rag_assets.index.rows import index_rows

    batch = embedder.encode_documents([c.context_text or c.text for c in chunks])
    vectors = embedding_rows([c.chunk_id for c in chunks], batch.dense, batch.sparse)
    collection = index.ensure_collection(embedder.name, embedder.dimension, embedder.has_sparse)
    by_doc: dict[str, list[IndexRow]] = defaultdict(list)
    for row in index_rows(list(chunks), vectors):
        by_doc[row.doc_id].append(row)
    for doc_id, rows in by_doc.items():
        index.replace_document(collection, doc_id, rows)
    return collection


def mode_fusion(fusion: FusionSettings, mode: Mode) -> FusionSettings:
    """The product's fusion settings, or one retriever alone whatever the query's language.

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
    return fusion.model_copy(update={**only, "sparse_weight": 0.0})


class EncodedQueries:
    """The embedder for the Retriever, with every question encoded once, in one batch."""

    def __init__(self, embedder: Embedder, questions: Sequence[str]) -> None:
        self.name = embedder.name
        self.has_sparse = embedder.has_sparse
        self.languages = embedder.languages
        texts = list(dict.fromkeys(questions))
        batch = embedder.encode_queries(texts)
        self._rows = {text: i for i, text in enumerate(texts)}
        self._batch = batch

    def encode_queries(self, texts: list[str]) -> EmbeddingBatch:
        rows = [self._rows[text] for text in texts]
        sparse = self._batch.sparse
        return EmbeddingBatch(
            dense=self._batch.dense[rows], sparse=[sparse[i] for i in rows] if sparse else None
        )


def compare_templates(
    documents: Sequence[StandardizedDocument],
    questions: Sequence[EvalQuestion],
    runs: Sequence[RunSpec],
    embedder: Embedder,
    counter: TokenCounter,
    open_index: Callable[[str], MilvusIndex],
    options: dict[str, Any] | None = None,
    fusion: FusionSettings | None = None,
    top_k: int = TOP_K,
    log: Callable[[str], None] = lambda _: None,
) -> Comparison:
    """Chunk, embed and index the documents once per template, then score every run.

    `open_index(prefix)` opens a MilvusIndex under that collection prefix (`eval_<template>`),
    so evaluation never touches the product's own collection.
    """
    names = {n for d in documents for n in _names(d.doc_id, d.source_path)}
    asked = [q for q in questions if in_corpus(q, names)]
    skipped = [q.id for q in questions if not in_corpus(q, names)]
    # Rows of documents evaluated before but gone from the corpus stay in the collections;
    # the filter keeps them out of the results.
    corpus = SearchFilters(doc_ids=sorted({d.doc_id for d in documents}))
    queries = EncodedQueries(embedder, [q.question for q in asked])
    reports: list[RunReport] = []
    for template in dict.fromkeys(r.template for r in runs):
        started = time.perf_counter()
        chunks, used = chunk_documents(documents, template, counter, options or {})
        lookup = ChunkLookup(chunks)
        slices = {q.id: question_slices(q, lookup) for q in asked}
        with open_index(f"eval_{template}") as index:
            collection = index_chunks(index, embedder, chunks)
            log(
                f"{template}: {len(chunks)} chunks of {len(documents)} documents indexed "
                f"in {time.perf_counter() - started:.1f} s"
            )
            for run in (r for r in runs if r.template == template):
                retriever = Retriever(
                    index,
                    collection,
                    queries,
                    fusion=mode_fusion(fusion or FusionSettings(), run.mode),
                )
                outcomes = []
                misses = []
                for question in asked:
                    hits = retriever.search(question.question, top_k, corpus).hits
                    scores = score_ranking(hits, question.targets)
                    outcomes.append(QuestionOutcome(question, *slices[question.id], scores))
                    if scores["mrr@10"] < 1:
                        first = _where(hits[0]) if hits else "nothing"
                        misses.append(f"{question.id}: {question.question} -> {first}")
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
    return Comparison(documents=len(documents), questions=len(asked), skipped=skipped, runs=reports)


def _where(hit: Retrievable) -> str:
    pages = f" p.{hit.page_start}" if hit.page_start else ""
    return f"{Path(hit.source_path).name}{pages}: {' '.join(hit.text.split())[:80]}"
