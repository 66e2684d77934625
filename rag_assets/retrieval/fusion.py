"""Fusing per-retriever rankings: weighted reciprocal rank fusion, weights by query language.

RRF over ranks rather than scores, because BM25, cosine and learned-sparse scores live on
unrelated scales. A retriever's weight multiplies its 1/(k + rank) terms; the fused score is
divided by the best score possible (rank 1 in every weighted retriever), so it reads in [0, 1].

A query outside the model's languages gives the model's retrievers no weight (BM25 decides),
but they still fill: their hits that BM25 did not find follow BM25's, in the model's order.
A Chinese question whose answer shares no word with it (a penalty clause that names the
obligation only by its number) then still reaches the top 10, and the model never changes
BM25's order (a question naming an identifier adds a lexical ranking of its own: identifiers.py).

Two equally weighted retrievers tie exactly whenever they swap two hits (ranks 1 and 2 in one,
2 and 1 in the other), which on real questions is common: the part of a section that answers
and the part that only names the same function. Such ties go to the hit the retrievers' own
scores favour, each retriever's scores scaled to [0, 1] over its list (relative score fusion),
rather than to whichever chunk id sorts first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_assets.language import UNDETERMINED
from rag_assets.settings.fusion import FusionSettings

RETRIEVERS = ("dense", "bm25", "sparse")


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


def fill_retrievers(
    fusion: FusionSettings, query_language: str, model_languages: Sequence[str], has_sparse: bool
) -> tuple[str, ...]:
    """The model's retrievers that run without weight for this query, only to fill after BM25."""
    if (
        covers(model_languages, query_language)
        or fusion.foreign_model_weight > 0
        or not fusion.foreign_model_fill
        or fusion.bm25_weight <= 0
    ):
        return ()
    model = [("dense", fusion.dense_weight)]
    if has_sparse:
        model.append(("sparse", fusion.sparse_weight))
    return tuple(name for name, weight in model if weight > 0)


def relative_scores(
    scores: Mapping[str, Mapping[str, float]], weights: Mapping[str, float]
) -> dict[str, float]:
    """Per id, the weighted sum of its retrievers' scores, each min-max scaled over that
    retriever's list (1 for its best, 0 for its last; every score higher-is-better)."""
    fused: dict[str, float] = {}
    for name, listed in scores.items():
        weight = weights.get(name, 0.0)
        if weight <= 0 or not listed:
            continue
        low, high = min(listed.values()), max(listed.values())
        for item, score in listed.items():
            scaled = (score - low) / (high - low) if high > low else 1.0
            fused[item] = fused.get(item, 0.0) + weight * scaled
    return fused


def weighted_rrf(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float],
    k: int,
    fill: Sequence[str] = (),
    scores: Mapping[str, Mapping[str, float]] | None = None,
) -> list[tuple[str, float, dict[str, int]]]:
    """(id, normalized score, retriever -> 1-based rank) by descending score.

    `rankings` holds each retriever's ids, best first; retrievers without a weight are ignored,
    except those named in `fill`: their ids that no weighted retriever found follow the fused
    ones, by their unweighted RRF, with score 0. `scores` (retriever -> id -> its score) breaks
    exact ties by `relative_scores`; ties left after that go by id.
    """
    relative = relative_scores(scores or {}, weights)
    best = sum(weights[name] for name in rankings if name in weights) / (k + 1)
    fused_rrf: dict[str, float] = {}
    found_by: dict[str, dict[str, int]] = {}
    for name, ids in rankings.items():
        weight = weights.get(name, 0.0)
        if weight <= 0:
            continue
        for rank, item in enumerate(ids, 1):
            if name in found_by.setdefault(item, {}):
                continue  # a retriever lists an id once; keep its best rank
            found_by[item][name] = rank
            fused_rrf[item] = fused_rrf.get(item, 0.0) + weight / (k + rank)
    ordered = sorted(
        fused_rrf, key=lambda item: (-round(fused_rrf[item], 12), -relative.get(item, 0.0), item)
    )
    fused = [(item, min(fused_rrf[item] / best, 1.0), found_by[item]) for item in ordered]
    extra: dict[str, float] = {}
    extra_found: dict[str, dict[str, int]] = {}
    for name in fill:
        for rank, item in enumerate(rankings.get(name, ()), 1):
            if item in fused_rrf or name in extra_found.setdefault(item, {}):
                continue
            extra_found[item][name] = rank
            extra[item] = extra.get(item, 0.0) + 1 / (k + rank)
    tail = sorted(extra, key=lambda item: (-extra[item], item))
    return fused + [(item, 0.0, extra_found[item]) for item in tail]


def weigh_chunk_types(
    fused: list[tuple[str, float, dict[str, int]]],
    chunk_types: Mapping[str, str | None],
    weights: Mapping[str, float],
) -> list[tuple[str, float, dict[str, int]]]:
    """`fused` with each hit's score times its chunk type's weight (1 when none is given),
    re-sorted; the order of equal scores is kept."""
    if not weights:
        return fused
    weighed = [
        (item, score * weights.get(chunk_types.get(item) or "", 1.0), ranks)
        for item, score, ranks in fused
    ]
    return sorted(weighed, key=lambda hit: -hit[1])
