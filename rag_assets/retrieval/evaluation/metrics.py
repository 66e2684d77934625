"""Relevance and metrics: which hits meet a question's targets, scores per slice.

Metrics count *targets* (what a question says is relevant), not chunks, so templates that cut a
target into more or fewer chunks are compared fairly: Recall@k is the share of a question's
targets matched by a hit in the top k; MRR@10 the reciprocal rank of the first relevant hit;
nDCG@10 binary, each target credited once, against one target per rank as the ideal.
Doc@1 asks only which document the top hit came from: one a target names (among look-alike
documents, the right filing or edition); for targets naming no document, a relevant top hit.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.retrieval.evaluation.sets import EvalQuestion, Target
from rag_assets.text.normalize import normalize_unspaced

CUTOFFS = (1, 5, 10)
MRR_CUTOFF = 10
NDCG_CUTOFF = 10
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10", "doc@1")


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
    if target.doc is not None and target.doc not in document_names(hit.doc_id, hit.source_path):
        return False
    if target.page is not None and not (
        hit.page_start is not None
        and hit.page_start <= target.page <= (hit.page_end or hit.page_start)
    ):
        return False
    text = _normalized(hit.text)
    return all(_normalized(part) in text for part in target.evidence)


def score_ranking(hits: Sequence[Retrievable], targets: Sequence[Target]) -> dict[str, float]:
    """Recall@1/5/10, MRR@10 and nDCG@10 of one ranked list against a question's targets; a
    hit grouping its page's hits (`same_page`) meets a target when any of them does."""
    matched = [
        {i for i, t in enumerate(targets) if any(matches(m, t) for m in _members(hit))}
        for hit in hits
    ]
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
    scores["doc@1"] = float(bool(hits) and any(_same_document(hits[0], t) for t in targets))
    return scores


def _members(hit: Retrievable) -> list[Retrievable]:
    return [hit, *getattr(hit, "same_page", ())]  # chunk rows and ungrouped hits have none


def _same_document(hit: Retrievable, target: Target) -> bool:
    if target.doc is None:
        return matches(hit, target)
    return target.doc in document_names(hit.doc_id, hit.source_path)


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
            for name in dict.fromkeys(document_names(chunk.doc_id, chunk.source_path)):
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


def document_names(doc_id: str, source_path: str) -> tuple[str, str, str]:
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
        for name, group in sorted(grouped.items(), key=lambda item: slice_order(item[0]))
    }


def slice_order(name: str) -> tuple[int, str]:
    kinds = ["all", "lang", "tag", "type", "template"]
    return kinds.index(name.split(":")[0]), name
