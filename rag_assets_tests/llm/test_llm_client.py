"""The LLM client against a real HTTP server on 127.0.0.1, through the real openai SDK."""

from __future__ import annotations

import base64
import logging
import socket
import threading

import pytest
from pydantic import BaseModel

from rag_assets.errors import ConfigurationError
from rag_assets.llm import (
    BudgetExceeded,
    LLMAnswerError,
    LLMClient,
    LLMSettings,
    LLMUnavailable,
)
from rag_assets_tests.support.openai_stub import Behaviour, OpenAIStub, serve_stub

KEY = "sk-test-never-show-me-0123456789"


@pytest.fixture
def stub():
    with serve_stub() as server:
        yield server


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", KEY)


def client_for(stub: OpenAIStub, **overrides) -> LLMClient:
    settings = {"base_url": stub.base_url, "model": "chat-m", "timeout_s": 2, **overrides}
    return LLMClient(LLMSettings(**settings))


class Verdict(BaseModel):
    label: str
    score: float


def test_settings_from_env_default_vision_model_and_no_key(monkeypatch):
    for name in ("RAG_ASSETS_LLM_BASE_URL", "RAG_ASSETS_LLM_MODEL", "RAG_ASSETS_VISION_MODEL"):
        monkeypatch.delenv(name, raising=False)
    off = LLMSettings.from_env()
    assert not off.enabled and not off.vision_enabled
    with pytest.raises(ConfigurationError):
        LLMClient(off)

    monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "qwen")
    monkeypatch.setenv("RAG_ASSETS_LLM_MAX_CALLS", "7")
    settings = LLMSettings.from_env()
    assert settings.enabled and settings.vision_model == "qwen" and settings.max_calls == 7
    monkeypatch.setenv("RAG_ASSETS_VISION_MODEL", "qwen-vl")
    settings = LLMSettings.from_env()
    assert settings.vision_model == "qwen-vl"
    # The key is read when a client is made, never held by the settings.
    assert KEY not in repr(settings) and KEY not in settings.model_dump_json()
    assert KEY not in repr(LLMClient(settings))


def test_chat_and_vision_requests_reach_the_server(stub):
    stub.enqueue(Behaviour(text="hello"), Behaviour(text="a table"))
    client = client_for(stub, vision_model="vision-m")

    reply = client.chat_text([{"role": "user", "content": "hi"}])
    png = b"\x89PNG\r\n\x1a\nnot-really"
    vision = client.vision_text("read the table", png)

    assert reply.text == "hello" and reply.model == "chat-m" and reply.prompt_tokens == 100
    assert vision.model == "vision-m" and vision.latency_s >= 0
    chat, seen = stub.requests
    assert chat.path == "/v1/chat/completions" and chat.model == "chat-m"
    assert chat.headers["authorization"] == f"Bearer {KEY}"
    assert seen.model == "vision-m"
    assert seen.image_urls() == ["data:image/png;base64," + base64.b64encode(png).decode()]
    assert client.usage.calls == 2 and client.usage.completion_tokens == 1 + 2


def test_server_errors_are_retried_by_the_sdk(stub):
    stub.enqueue(Behaviour(status=500), Behaviour(status=503), Behaviour(text="ok"))
    client = client_for(stub, max_retries=2)

    assert client.chat_text([{"role": "user", "content": "x"}]).text == "ok"
    assert stub.calls == 3
    assert client.usage.calls == 1 and client.usage.failures == 0


def test_errors_become_unavailable_with_a_reason(stub):
    client = client_for(stub, max_retries=1)
    stub.default = Behaviour(status=500)
    with pytest.raises(LLMUnavailable, match=r"HTTP 500 after 1 retries"):
        client.chat_text([{"role": "user", "content": "x"}])
    assert stub.calls == 2

    stub.default = Behaviour(status=404)  # not retried
    with pytest.raises(LLMUnavailable, match=r"^HTTP 404: "):
        client.chat_text([{"role": "user", "content": "x"}])
    assert stub.calls == 3

    stub.default = Behaviour(raw_body=b"{not json")
    with pytest.raises(LLMUnavailable, match="not JSON"):
        client.chat_text([{"role": "user", "content": "x"}])
    assert client.usage.failures == 3


def test_connection_refused():
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = LLMSettings(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0)
    with pytest.raises(LLMUnavailable, match=rf"cannot connect to 127.0.0.1:{port} \(0 retries\)"):
        LLMClient(settings).chat_text([{"role": "user", "content": "x"}])


def test_timeout(stub):
    stub.default = Behaviour(delay_s=2)
    client = client_for(stub, timeout_s=0.2, max_retries=0)
    with pytest.raises(LLMUnavailable, match=r"timed out after 0.2 s \(0 retries\)"):
        client.chat_text([{"role": "user", "content": "x"}])
    assert stub.calls == 1


def test_chat_json(stub):
    client = client_for(stub)
    stub.enqueue(
        Behaviour(text='```json\n{"label": "table", "score": 0.9}\n```'),
        Behaviour(text="Sure! label=table"),
        Behaviour(text=""),
        Behaviour(text='{"label": "table"}'),
    )
    messages = [{"role": "user", "content": "classify"}]

    assert client.chat_json(messages, Verdict) == Verdict(label="table", score=0.9)
    assert '"score"' in stub.requests[0].body["messages"][0]["content"]  # schema sent
    with pytest.raises(LLMAnswerError, match="invalid JSON"):
        client.chat_json(messages, Verdict)
    with pytest.raises(LLMAnswerError, match="empty answer"):
        client.chat_json(messages, Verdict)
    with pytest.raises(LLMAnswerError, match="does not match Verdict: score"):
        client.chat_json(messages, Verdict)
    assert client.usage.answer_errors == 3


def test_budget_refuses_before_sending(stub):
    client = client_for(stub, max_calls=2)
    for _ in range(2):
        client.chat_text([{"role": "user", "content": "x"}])
    with pytest.raises(BudgetExceeded, match="budget of 2 calls used"):
        client.chat_text([{"role": "user", "content": "x"}])
    assert stub.calls == 2
    assert client.usage.calls == 2 and client.usage.budget_refusals == 1


def test_concurrency_cap(stub):
    stub.default = Behaviour(text="ok", delay_s=0.2)
    client = client_for(stub, max_concurrency=2)
    threads = [
        threading.Thread(target=client.chat_text, args=([{"role": "user", "content": "x"}],))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stub.calls == 6 and stub.max_in_flight == 2


def test_key_not_sent_elsewhere_or_logged(stub, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    # A server that echoes the request's key in its error body.
    stub.enqueue(
        Behaviour(status=400, raw_body=f'{{"error": {{"message": "bad key {KEY}"}}}}'.encode()),
        Behaviour(status=500),
        Behaviour(text="ok"),
    )
    client = client_for(stub, max_retries=0)
    reasons = []
    for _ in range(2):
        with pytest.raises(LLMUnavailable) as error:
            client.chat_text([{"role": "user", "content": "x"}])
        reasons.append(str(error.value))
    assert reasons[0] == "HTTP 400: Error code: 400 - bad key ***"
    assert all(KEY not in reason for reason in reasons)
    client.chat_text([{"role": "user", "content": "x"}])
    assert caplog.records and all(KEY not in r.getMessage() for r in caplog.records)

    # Our variable unset: OPENAI_API_KEY must not be sent to a third-party base_url.
    monkeypatch.delenv("RAG_ASSETS_LLM_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-elsewhere")
    client_for(stub).chat_text([{"role": "user", "content": "x"}])
    assert stub.requests[-1].headers["authorization"] == "Bearer EMPTY"
