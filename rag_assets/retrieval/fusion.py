"""Fusing per-retriever rankings: weighted reciprocal rank fusion, weights by query language.

RRF over ranks rather than scores, because BM25, cosine and learned-sparse scores live on
unrelated scales. A retriever's weight multiplies its 1/(k + rank) terms; the fused score is
divided by the best score possible (rank 1 in every retriever that ran), so it reads in [0, 1].
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from rag_assets.retrieval.language import UNDETERMINED

RETRIEVERS = ("dense", "bm25", "sparse")
ENV_PREFIX = "RAG_ASSETS_FUSION_"


class FusionSettings(BaseModel):
    """Fusion weights; env RAG_ASSETS_FUSION_<FIELD> (e.g. RAG_ASSETS_FUSION_BM25_WEIGHT)."""

    model_config = ConfigDict(frozen=True)

    rrf_k: int = Field(60, ge=1)
    candidates: int = Field(20, ge=20)  # per retriever, before fusion
    dense_weight: float = Field(1.0, ge=0)
    bm25_weight: float = Field(1.0, ge=0)
    sparse_weight: float = Field(1.0, ge=0)  # BGE-M3's learned sparse vectors
    # Replaces dense_weight and sparse_weight when the query's language is not one the model
    # covers: on held-out Chinese questions against the English MiniLM, top-1 was .20 at
    # equal weights, .40 at 0.1 and .60 at 0 (BM25 alone).
    foreign_model_weight: float = Field(0.0, ge=0)

    @classmethod
    def from_env(cls) -> FusionSettings:
        values = {}
        for name in cls.model_fields:
            raw = os.environ.get(f"{ENV_PREFIX}{name.upper()}", "").strip()
            if raw:
                values[name] = raw
        return cls(**values)


def covers(model_languages: Sequence[str], language: str) -> bool:
    """Whether a model declared for these languages handles text in `language`."""
    return language == UNDETERMINED or "*" in model_languages or language in model_languages


def fusion_weights(
    fusion: FusionSettings, query_language: str, model_languages: Sequence[str], has_sparse: bool
) -> dict[str, float]:
    """The weight of each retriever that will run for this query (a weight of 0 does not run)."""
    model = fusion.dense_weight, fusion.sparse_weight
    if not covers(model_languages, query_language):
        model = fusion.foreign_model_weight, fusion.foreign_model_weight
    weights = {"dense": model[0], "bm25": fusion.bm25_weight}
    if has_sparse:
        weights["sparse"] = model[1]
    return {name: w for name, w in weights.items() if w > 0}


def weighted_rrf(
    rankings: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int
) -> list[tuple[str, float, dict[str, int]]]:
    """(id, normalized score, retriever -> 1-based rank) by descending score, ties by id.

    `rankings` holds each retriever's ids, best first; retrievers without a weight are ignored.
    """
    best = sum(weights[name] for name in rankings if name in weights) / (k + 1)
    scores: dict[str, float] = {}
    found_by: dict[str, dict[str, int]] = {}
    for name, ids in rankings.items():
        weight = weights.get(name, 0.0)
        if weight <= 0:
            continue
        for rank, item in enumerate(ids, 1):
            if name in found_by.setdefault(item, {}):
                continue  # a retriever lists an id once; keep its best rank
            found_by[item][name] = rank
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    ordered = sorted(scores, key=lambda item: (-scores[item], item))
    return [(item, min(scores[item] / best, 1.0), found_by[item]) for item in ordered]
