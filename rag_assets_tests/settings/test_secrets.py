"""No secret from any setting reaches logs, metadata, stored files or error messages."""

from __future__ import annotations

import base64
import json
import logging

import pytest

from rag_assets.errors import ConfigurationError
from rag_assets.llm import LLMClient, LLMSettings, LLMUnavailable
from rag_assets.redaction import redact_url, scrub, url_secrets
from rag_assets_tests.conftest import REPO_ROOT
from rag_assets_tests.support.openai_stub import Behaviour, serve_stub

URL_PASSWORD = "pw-Zq81xUrlSecret"
URL_USER = "svc-user-7731"
API_KEY = "sk-KeyVarSecret-55aa"
MILVUS_TOKEN = "root:MilvusTokenSecret-9"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:KEY@host:8000/v1", "http://***@host:8000/v1"),
        ("https://KEY@api.example.com/v1", "https://***@api.example.com/v1"),
        ("http://host/v1?api_key=KEY&model=m", "http://host/v1?api_key=***&model=m"),
        ("http://host/v1?token=KEY", "http://host/v1?token=***"),
        ("http://[::1]:19530", "http://[::1]:19530"),
        ("/data/milvus.db", "/data/milvus.db"),
        ("not a url with KEY@inside", "***"),
        (None, ""),
    ],
)
def test_urls_are_redacted(url, shown):
    assert redact_url(url) == shown
    assert "KEY" not in redact_url(url)


def test_url_secrets_are_scrubbed_from_text_even_url_encoded():
    url = "http://us%40er:p%2Fss@host/v1?sig=abc123"
    secrets = url_secrets(url)
    assert {"us@er", "p/ss", "abc123"} <= set(secrets)
    assert scrub("echo us@er p/ss p%2Fss abc123", secrets) == "echo *** *** *** ***"


def test_a_collections_file_may_not_hold_url_credentials():
    with pytest.raises(ConfigurationError, match="RAG_ASSETS_LLM_BASE_URL"):
        LLMSettings.from_env({"base_url": "http://u:KEY@host/v1", "model": "m"})


def _echoing(request) -> Behaviour:
    # A server that echoes every credential it was sent, as some do in error bodies.
    auth = request.headers.get("Authorization", "")
    decoded = ""
    if auth.startswith("Basic "):
        decoded = base64.b64decode(auth.removeprefix("Basic ")).decode()
    message = f"refused {auth} ({decoded}) for {request.path}"
    return Behaviour(status=400, raw_body=json.dumps({"error": {"message": message}}).encode())


def test_client_errors_and_logs_carry_no_credential(monkeypatch, caplog):
    monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", API_KEY)
    caplog.set_level(logging.DEBUG)
    with serve_stub() as stub:
        stub.respond = _echoing
        url = stub.base_url.replace("http://", f"http://{URL_USER}:{URL_PASSWORD}@")
        client = LLMClient(LLMSettings(base_url=url, model="m", max_retries=0))
        with pytest.raises(LLMUnavailable) as raised:
            client.chat_text([{"role": "user", "content": "hi"}])
        sent = stub.requests[0].headers["Authorization"]
    assert sent.startswith("Basic ")  # the URL's credentials were really sent, and echoed back
    for text in (str(raised.value), raised.value.reason, repr(client), caplog.text):
        for secret in (URL_PASSWORD, URL_USER, API_KEY):
            assert secret not in text, (secret, text)
    assert "HTTP 400" in raised.value.reason


def _dump_instance(instance) -> str:
    """Everything the Dagster instance holds about its runs: events, metadata, snapshots."""
    from dagster._serdes import serialize_value

    parts = []
    for run in instance.get_runs():
        parts.append(serialize_value(run))
        parts.append(serialize_value(instance.get_job_snapshot(run.job_snapshot_id)))
        parts.extend(serialize_value(entry) for entry in instance.all_logs(run.run_id))
    return "\n".join(parts)


@pytest.mark.slow
def test_no_setting_secret_reaches_logs_metadata_or_stored_files(tmp_path, monkeypatch, capfd):
    from rag_assets.cli import main
    from rag_assets.instance import open_instance
    from rag_assets.settings import Settings

    data = tmp_path / "data"
    with serve_stub() as stub:
        stub.respond = _echoing
        url = stub.base_url.replace("http://", f"http://{URL_USER}:{URL_PASSWORD}@")
        monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", url)
        monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "stub-model")
        monkeypatch.setenv("RAG_ASSETS_LLM_MAX_RETRIES", "0")
        monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", API_KEY)
        monkeypatch.setenv("RAG_ASSETS_MILVUS_TOKEN", MILVUS_TOKEN)
        monkeypatch.setenv("RAG_ASSETS_TEMPLATE", "auto")  # the template choice asks the LLM
        corpus = REPO_ROOT / "examples" / "corpus"
        code = main(
            [
                "ingest",
                "--verbose",
                "--data-dir",
                str(data),
                str(corpus / "host-controller-spec.pdf"),
                str(corpus / "operator-guide.md"),
            ]
        )
        calls = stub.calls
    captured = capfd.readouterr()
    assert code == 0, captured.out
    assert calls > 0  # the endpoint was used, with the credentials, and echoed them
    seen = {"stdout": captured.out, "stderr": captured.err}
    seen["instance"] = _dump_instance(open_instance(Settings.from_env(data)))
    for path in data.rglob("*"):
        if path.is_file():
            seen[str(path.relative_to(data))] = path.read_bytes().decode("utf-8", "replace")
    basic = base64.b64encode(f"{URL_USER}:{URL_PASSWORD}".encode()).decode()
    # Each leak with the line around it, so a failure shows which message carried the secret.
    leaks = [
        (where, text[max(0, at - 160) : at + 80])
        for where, text in seen.items()
        for secret in (URL_PASSWORD, URL_USER, API_KEY, MILVUS_TOKEN, basic)
        if (at := text.find(secret)) >= 0
    ]
    assert leaks == []
    # The echoed credentials did reach stored reasons, masked.
    assert any("(***:***)" in text for text in seen.values())


OTHER_SECRET = "other-secret-6c1f"


def test_a_collections_file_may_not_choose_which_variable_is_sent(monkeypatch):
    monkeypatch.setenv("OTHER_SECRET", OTHER_SECRET)
    for key in ("api_key_env", "send_key"):
        with pytest.raises(ConfigurationError, match=f"llm.{key}"):
            LLMSettings.from_env({"base_url": "http://127.0.0.1:9/v1", key: "OTHER_SECRET"})


def test_the_key_goes_only_to_an_endpoint_the_operator_set(monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", API_KEY)
    for name in ("RAG_ASSETS_LLM_BASE_URL", "RAG_ASSETS_LLM_ALLOWED_BASE_URLS"):
        monkeypatch.delenv(name, raising=False)
    with serve_stub() as stub:
        from_file = LLMSettings.from_env({"base_url": stub.base_url, "model": "m"})
        assert not from_file.send_key
        LLMClient(from_file).chat_text([{"role": "user", "content": "hi"}])
        assert API_KEY not in json.dumps(stub.requests[0].headers)

    # The operator's own endpoint, or one the operator allowed a file to choose, gets the key.
    with serve_stub() as stub:
        monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", stub.base_url)
        from_env = LLMSettings.from_env({"base_url": "http://127.0.0.1:9/v1", "model": "m"})
        assert from_env.base_url == stub.base_url and from_env.send_key
        LLMClient(from_env).chat_text([{"role": "user", "content": "hi"}])
        assert stub.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    monkeypatch.delenv("RAG_ASSETS_LLM_BASE_URL")
    with serve_stub() as stub:
        monkeypatch.setenv(
            "RAG_ASSETS_LLM_ALLOWED_BASE_URLS", f"http://elsewhere/v1,{stub.base_url}/"
        )
        allowed = LLMSettings.from_env({"base_url": stub.base_url, "model": "m"})
        assert allowed.send_key
    with pytest.raises(ConfigurationError, match="not among RAG_ASSETS_LLM_ALLOWED_BASE_URLS"):
        LLMSettings.from_env({"base_url": "http://127.0.0.1:9/v1", "model": "m"})
