"""Rerank: off by default, local FlagEmbedding folders, and a /rerank endpoint on 127.0.0.1."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rag_assets.retrieval.rerank import (
    HttpReranker,
    LocalReranker,
    RerankError,
    load_reranker,
    rerank,
)
from rag_assets.settings import Settings
from rag_assets.settings.processes import RERANK_API_KEY_ENV
from rag_assets_tests.support.rerank_stub import (
    Behaviour,
    RerankStub,
    build_cross_encoder,
    build_llm_reranker,
    overlap_score,
    serve_rerank_stub,
)

KEY = "rk-test-never-show-me-0123456789"
QUERY = "what do bits 15:8 of the host control register hold"
PASSAGES = [
    "Table 32: Host Control Register - Offset: 0x04 - Bits: 15:8 - the interrupt vector.",
    "The weather in spring is mild.",
    "主机控制寄存器的第 15:8 位保存中断向量。",
    "bits 15:8 of the host control register hold the vector",
]


@pytest.fixture
def stub():
    with serve_rerank_stub() as server:
        yield server


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(RERANK_API_KEY_ENV, KEY)


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory) -> Path:
    return build_cross_encoder(tmp_path_factory.mktemp("rerankers") / "tiny-cross-encoder")


def http_reranker(stub: RerankStub, **overrides) -> HttpReranker:
    options = {"model": "bge-reranker-v2-m3", "timeout_s": 1, "backoff_s": 0.01, **overrides}
    return HttpReranker(stub.url, **options)


def test_off_unless_configured_and_settings_from_env(tmp_path, monkeypatch):
    reranker, note = load_reranker(Settings(data_dir=tmp_path))
    assert reranker is None
    assert "RAG_ASSETS_RERANK_MODEL" in note and "RAG_ASSETS_RERANK_URL" in note

    monkeypatch.setenv("RAG_ASSETS_RERANK_URL", "http://127.0.0.1:9/v1/rerank")
    monkeypatch.setenv("RAG_ASSETS_RERANK_MODEL", "jina-reranker-v2")
    monkeypatch.setenv("RAG_ASSETS_RERANK_TOP_N", "7")
    monkeypatch.setenv("RAG_ASSETS_RERANK_TIMEOUT_S", "2.5")
    settings = Settings.from_env(tmp_path)
    assert (settings.rerank_url, settings.rerank_model) == (
        "http://127.0.0.1:9/v1/rerank",
        "jina-reranker-v2",
    )
    assert (settings.rerank_top_n, settings.rerank_timeout_s) == (7, 2.5)
    # The key stays in the environment: never a setting, so never in a dump of them.
    assert KEY not in settings.model_dump_json()
    reranker, note = load_reranker(settings)
    assert isinstance(reranker, HttpReranker)
    assert note == "rerank by jina-reranker-v2 at http://127.0.0.1:9/v1/rerank on the top 7 hits"


def test_missing_model_gives_no_reranker_and_says_why(tmp_path):
    for setting in (str(tmp_path / "bge-reranker-v2-m3"), "rag-assets-tests/no-such-reranker"):
        reranker, note = load_reranker(Settings(data_dir=tmp_path, rerank_model=setting))
        assert reranker is None
        assert note.startswith("rerank did not run: ")
        assert "missing" in note and "never downloaded" in note and setting in note

    (tmp_path / "empty").mkdir()
    reranker, note = load_reranker(
        Settings(data_dir=tmp_path, rerank_model=str(tmp_path / "empty"))
    )
    assert reranker is None and "no config.json" in note

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"architectures": ["BertForSequenceClassification"]}')
    reranker, note = load_reranker(Settings(data_dir=tmp_path, rerank_model=str(broken)))
    assert reranker is None and "failed to load" in note


@pytest.mark.slow
def test_cross_encoder_folder_through_flag_reranker(tmp_path, cross_encoder_dir):
    settings = Settings(data_dir=tmp_path, rerank_model=str(cross_encoder_dir), rerank_top_n=5)
    reranker, note = load_reranker(settings)
    assert isinstance(reranker, LocalReranker)
    assert reranker.model_class == "FlagReranker" and reranker.name == "tiny-cross-encoder"
    assert "FlagReranker" in note and "top 5 hits" in note
    # Loaded once per process: a second lookup is the same object.
    assert load_reranker(settings)[0] is reranker

    scores = reranker.score(QUERY, PASSAGES)
    assert len(scores) == len(PASSAGES) and all(isinstance(s, float) for s in scores)
    assert len(set(scores)) == len(PASSAGES)  # random weights still tell the pairs apart
    assert reranker.score(QUERY, PASSAGES) == scores  # deterministic
    # Each pair is scored on its own: the order of the batch does not change a pair's score.
    assert reranker.score(QUERY, PASSAGES[::-1]) == pytest.approx(scores[::-1], abs=1e-5)
    assert reranker.score(QUERY, []) == []

    ranked = rerank(reranker, QUERY, PASSAGES)
    assert [i for i, _ in ranked] == sorted(range(len(scores)), key=lambda i: -scores[i])
    assert [s for _, s in ranked] == sorted(scores, reverse=True)


@pytest.mark.slow
def test_llm_reranker_folder_through_flag_llm_reranker(tmp_path):
    folder = build_llm_reranker(tmp_path / "tiny-llm-reranker")
    reranker, note = load_reranker(Settings(data_dir=tmp_path, rerank_model=str(folder)))
    assert isinstance(reranker, LocalReranker)
    assert reranker.model_class == "FlagLLMReranker"
    assert "LlamaForCausalLM is a decoder" in note
    scores = reranker.score(QUERY, PASSAGES)
    assert len(scores) == len(PASSAGES) and len(set(scores)) == len(PASSAGES)
    assert reranker.score(QUERY, PASSAGES) == scores


def test_http_request_shape_key_and_order(tmp_path, stub):
    settings = Settings(data_dir=tmp_path, rerank_url=stub.url, rerank_model="bge-reranker-v2-m3")
    reranker, note = load_reranker(settings)
    assert isinstance(reranker, HttpReranker)
    assert note == f"rerank by bge-reranker-v2-m3 at {stub.url} on the top 20 hits"

    scores = reranker.score(QUERY, PASSAGES)
    # The stub answers best first; the scores come back in the passages' order.
    assert scores == [overlap_score(QUERY, p) for p in PASSAGES]
    (request,) = stub.requests
    assert request.body == {
        "model": "bge-reranker-v2-m3",
        "query": QUERY,
        "documents": PASSAGES,
        "top_n": len(PASSAGES),
    }
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    # Passages 1 and 2 hold one query word each ("the", "15:8"): the tie keeps their order.
    assert scores[1] == scores[2]
    assert [i for i, _ in rerank(reranker, QUERY, PASSAGES)] == [3, 0, 1, 2]
    assert reranker.score(QUERY, []) == [] and len(stub.requests) == 2


def test_http_without_key_or_model_sends_neither(stub, monkeypatch):
    monkeypatch.delenv(RERANK_API_KEY_ENV)
    reranker = http_reranker(stub, model=None)
    assert reranker.name == stub.url
    reranker.score(QUERY, PASSAGES[:2])
    (request,) = stub.requests
    assert "Authorization" not in request.headers and "model" not in request.body


def test_http_retries_timeouts_and_5xx(stub):
    stub.enqueue(Behaviour(delay_s=1.5), Behaviour(status=503))
    scores = http_reranker(stub, timeout_s=0.5, max_retries=2).score(QUERY, PASSAGES)
    assert scores == [overlap_score(QUERY, p) for p in PASSAGES]
    assert len(stub.requests) == 3


def test_http_gives_up_with_a_reason_that_holds_no_key(stub, caplog):
    stub.enqueue(*[Behaviour(status=500, echo_headers=True)] * 3)
    with caplog.at_level(logging.DEBUG), pytest.raises(RerankError) as caught:
        http_reranker(stub, max_retries=2).score(QUERY, PASSAGES)
    assert len(stub.requests) == 3
    reason = caught.value.reason
    assert reason.startswith("HTTP 500") and "(2 retries)" in reason
    assert "Bearer ***" in reason  # the server echoed the header; the key was taken out
    assert KEY[:8] not in reason and KEY[:8] not in caplog.text
    assert KEY not in repr(http_reranker(stub))


def test_http_does_not_retry_a_refused_request(stub):
    stub.enqueue(Behaviour(status=400))
    with pytest.raises(RerankError, match="HTTP 400"):
        http_reranker(stub, max_retries=3).score(QUERY, PASSAGES)
    assert len(stub.requests) == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>busy</html>", "answer is not JSON"),
        (b'{"data": []}', "answer is not a rerank result: results"),
        (b'{"results": [{"index": 0, "relevance_score": 0.5}]}', "no score for 3 of 4"),
    ],
)
def test_http_answers_that_are_not_scores(stub, body, reason):
    stub.enqueue(Behaviour(raw_body=body))
    with pytest.raises(RerankError, match=reason):
        http_reranker(stub).score(QUERY, PASSAGES)


def test_http_unreachable_endpoint(tmp_path):
    reranker = HttpReranker("http://127.0.0.1:9/v1/rerank", max_retries=1, backoff_s=0.01)
    with pytest.raises(RerankError, match=r"cannot connect \(ConnectError\) \(1 retries\)"):
        reranker.score(QUERY, PASSAGES)


def test_userinfo_in_the_url_is_used_but_never_shown(stub, caplog):
    url = stub.url.replace("http://", "http://user:s3cret-pw@")
    reranker = HttpReranker(url, timeout_s=1, max_retries=0)
    assert reranker.name == stub.url
    reranker.score(QUERY, PASSAGES[:1])
    assert stub.requests[0].headers["Authorization"].startswith("Basic ")  # httpx sends it
    stub.enqueue(Behaviour(raw_body=b"s3cret-pw rejected", status=401))
    with caplog.at_level(logging.DEBUG), pytest.raises(RerankError) as caught:
        reranker.score(QUERY, PASSAGES[:1])
    assert "s3cret-pw" not in caught.value.reason and "s3cret-pw" not in caplog.text
