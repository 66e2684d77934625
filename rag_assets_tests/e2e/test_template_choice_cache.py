"""`auto`'s LLM template choice and the LLM profile inside the asset graph: each asked once per
document content, read from `<data dir>/cache/templates` and `<data dir>/cache/profiles` when
the document is materialized again."""

import json

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

from rag_assets.profile.llm import PROMPT
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets_tests.support.openai_stub import Behaviour, serve_stub

pytestmark = pytest.mark.slow

PROFILE_QUESTION = PROMPT.splitlines()[0]
GUIDE = "# Shift handover\n\nQuestion: Who signs the log?\n\nThe shift lead signs it.\n"


def _asked(stub) -> tuple[int, int]:
    """(profile requests, template choice requests) the stub has answered."""
    profiles = sum(PROFILE_QUESTION in r.text for r in stub.requests)
    return profiles, stub.calls - profiles


def _chunks_metadata(instance: DagsterInstance, key: str) -> dict:
    (record,) = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("document_chunks"), asset_partitions=[key]), limit=1
    ).records
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def test_a_rematerialized_document_asks_no_llm_and_a_changed_one_asks_again(tmp_path, monkeypatch):
    guide = tmp_path / "handover.md"
    guide.write_text(GUIDE)
    settings = Settings(data_dir=tmp_path / "data", template="auto")
    answer = {"template": "semantic", "confidence": 0.92, "reason": "a short guide"}
    with serve_stub() as stub:
        stub.default = Behaviour(text=json.dumps(answer))
        monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "stub-chat")

        (first,) = ingest(settings, [guide], instance=DagsterInstance.ephemeral())
        assert first.success, first.summary()
        assert _asked(stub) == (1, 1)

        # A fresh instance over the same data folder materializes every step again.
        again = DagsterInstance.ephemeral()
        (second,) = ingest(settings, [guide], instance=again)
        assert second.success and second.ran, second.summary()
        assert _asked(stub) == (1, 1)
        metadata = _chunks_metadata(again, second.doc_id)
        assert metadata["template_choice_cached"] is True and metadata["llm_calls"] == 0
        assert metadata["template_reason"].startswith("llm: a short guide (semantic at 0.92")

        guide.write_text(GUIDE + "\nQuestion: Who keeps the keys?\n\nThe duty engineer.\n")
        (third,) = ingest(settings, [guide], instance=again)
        assert third.success, third.summary()
        assert _asked(stub) == (2, 2)
        metadata = _chunks_metadata(again, third.doc_id)
        assert metadata["template_choice_cached"] is False and metadata["llm_calls"] == 1
