"""The script-based language detector and the fusion arithmetic, without Milvus or a model."""

from __future__ import annotations

import pytest

from rag_assets.language import detect_language
from rag_assets.retrieval.fusion import (
    covers,
    fill_retrievers,
    fusion_weights,
    relative_scores,
    weighted_rrf,
)
from rag_assets.settings.fusion import FusionSettings


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("What do bits 15:8 of the Host Control Register hold?", "en"),
        ("机器学习是人工智能的一个重要分支。", "zh"),
        ("問 A1：政府何時公布？", "zh"),  # traditional characters, a Latin question id
        ("使用 DMA 传输时，必须先配置 Host Control Register。", "zh"),  # English terms quoted
        ("第三条 本办法自公布之日起施行。", "zh"),
        ("これは日本語の文です", "ja"),  # kanji with kana
        ("한국어 문장입니다", "ko"),
        ("Привет, мир", "ru"),
        ("The word 人工智能 in a long English sentence about many other things", "en"),
        ("0x04 15:8 -- 42", "en"),  # the `x` of a hex literal is a Latin letter
        ("15:8 -- 42", "und"),
        ("", "und"),
    ],
)
def test_detect_language(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_covers() -> None:
    assert covers(("en",), "en") and not covers(("en",), "zh")
    assert covers(("*",), "zh") and covers(("zh", "en"), "zh")
    assert covers(("en",), "und")  # no letters: nothing to say against the model


def test_weights_by_query_language() -> None:
    fusion = FusionSettings()
    assert fusion_weights(fusion, "en", ("en",), has_sparse=False) == {"dense": 1.0, "bm25": 1.0}
    assert fusion_weights(fusion, "zh", ("en",), has_sparse=False) == {"bm25": 1.0}
    assert fusion_weights(fusion, "zh", ("*",), has_sparse=True) == {
        "dense": 1.0,
        "bm25": 1.0,
        "sparse": 1.0,
    }
    damped = FusionSettings(foreign_model_weight=0.1, bm25_weight=2.0)
    assert fusion_weights(damped, "zh", ("en",), has_sparse=True) == {
        "dense": 0.1,
        "bm25": 2.0,
        "sparse": 0.1,
    }
    assert fusion_weights(FusionSettings(bm25_weight=0), "en", ("en",), False) == {"dense": 1.0}


def test_fusion_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_ASSETS_FUSION_FOREIGN_MODEL_WEIGHT", "0.25")
    monkeypatch.setenv("RAG_ASSETS_FUSION_CANDIDATES", "50")
    fusion = FusionSettings.from_env()
    assert (fusion.foreign_model_weight, fusion.candidates, fusion.rrf_k) == (0.25, 50, 60)
    monkeypatch.setenv("RAG_ASSETS_FUSION_CANDIDATES", "10")
    with pytest.raises(ValueError, match="greater than or equal to 20"):
        FusionSettings.from_env()


def test_weighted_rrf() -> None:
    fused = weighted_rrf(
        {"dense": ["a", "b", "c"], "bm25": ["b", "d"], "sparse": ["a"]},
        {"dense": 1.0, "bm25": 2.0},  # sparse has no weight: ignored
        k=60,
    )
    ids = [item for item, _, _ in fused]
    assert ids == ["b", "d", "a", "c"]  # bm25's first counts double
    scores = {item: score for item, score, _ in fused}
    assert scores["b"] == pytest.approx((1 / 62 + 2 / 61) / (3 / 61))
    assert {item: ranks for item, _, ranks in fused}["b"] == {"dense": 2, "bm25": 1}
    assert {item: ranks for item, _, ranks in fused}["a"] == {"dense": 1}
    best = weighted_rrf({"dense": ["x"], "bm25": ["x"]}, {"dense": 1.0, "bm25": 1.0}, 60)
    assert best == [("x", 1.0, {"dense": 1, "bm25": 1})]
    assert weighted_rrf({"dense": []}, {"dense": 1.0}, 60) == []


def test_exact_rrf_ties_go_to_the_hit_the_scores_favour() -> None:
    # "a" and "b" swap ranks between two equal retrievers: the same RRF score. BM25 barely
    # prefers "b" (9.9 against 10) while dense puts "a" far ahead of "b" (.80 against .50).
    rankings = {"dense": ["a", "b", "c"], "bm25": ["b", "a", "c"]}
    weights = {"dense": 1.0, "bm25": 1.0}
    scores = {"dense": {"a": 0.8, "b": 0.5, "c": 0.4}, "bm25": {"b": 10.0, "a": 9.9, "c": 2.0}}
    fused = weighted_rrf(rankings, weights, 60, scores=scores)
    assert [item for item, _, _ in fused] == ["a", "b", "c"]
    assert fused[0][1] == fused[1][1]  # the fused score itself stays the RRF one
    flipped = {"dense": {"a": 0.51, "b": 0.5, "c": 0.4}, "bm25": {"b": 10.0, "a": 2.1, "c": 2.0}}
    assert [i for i, _, _ in weighted_rrf(rankings, weights, 60, scores=flipped)][:2] == ["b", "a"]
    # A retriever without weight has no say in the tie.
    only_dense = weighted_rrf(
        rankings,
        {"dense": 1.0, "bm25": 1.0, "sparse": 0.0},
        60,
        scores={**flipped, "sparse": {"a": 1.0, "b": 0.0}},
    )
    assert [item for item, _, _ in only_dense][:2] == ["b", "a"]
    # Scores not given: ties by id, as before.
    assert [
        i for i, _, _ in weighted_rrf({"dense": ["b", "a"], "bm25": ["a", "b"]}, weights, 60)
    ] == [
        "a",
        "b",
    ]
    assert relative_scores({"bm25": {"x": 3.0, "y": 1.0}, "dense": {"x": 0.2}}, weights) == {
        "x": 2.0,
        "y": 0.0,
    }


def test_model_fills_after_bm25_outside_its_languages() -> None:
    fusion = FusionSettings()
    assert fill_retrievers(fusion, "zh", ("en",), has_sparse=True) == ("dense", "sparse")
    assert fill_retrievers(fusion, "en", ("en",), has_sparse=False) == ()  # weighted instead
    assert fill_retrievers(FusionSettings(foreign_model_weight=0.1), "zh", ("en",), False) == ()
    assert fill_retrievers(FusionSettings(foreign_model_fill=False), "zh", ("en",), False) == ()
    assert fill_retrievers(FusionSettings(bm25_weight=0), "zh", ("en",), False) == ()


def test_fill_keeps_the_weighted_order_and_appends() -> None:
    fused = weighted_rrf(
        {"bm25": ["b", "d"], "dense": ["a", "d", "c", "b"]}, {"bm25": 1.0}, k=60, fill=["dense"]
    )
    # BM25's hits first in BM25's order (dense's opinion of them changes nothing), then
    # what only dense found, in dense's order, with score 0 and its rank.
    assert [item for item, _, _ in fused] == ["b", "d", "a", "c"]
    assert [score for _, score, _ in fused][2:] == [0.0, 0.0]
    assert fused[0][2] == {"bm25": 1} and fused[3][2] == {"dense": 3}
    assert weighted_rrf({"bm25": [], "dense": ["a"]}, {"bm25": 1.0}, 60, ["dense"]) == [
        ("a", 0.0, {"dense": 1})
    ]
