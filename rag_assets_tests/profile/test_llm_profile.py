"""A document's profile asked of the configured LLM (the OpenAI stub on 127.0.0.1, through the
real client): what the answer fills, the cache, and every way back to the rules' profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_assets.llm import LLMClient, LLMSettings
from rag_assets.normalize.adapt import with_llm_profile, with_profile
from rag_assets.profile.llm import ProfileCache, ask_profile
from rag_assets.profile.model import DocumentProfile, ProfileField
from rag_assets_tests.support.builders import doc_from_pages
from rag_assets_tests.support.openai_stub import Behaviour, OpenAIStub, serve_stub

# A press release the rules read little of: no form, no copyright line, no dated title.
RELEASE = [
    [
        ("title", "# Quarterly results"),
        ("paragraph", "Lyme Harbour Ferries reports record crossings for the quarter."),
        ("paragraph", "LYME, June 30, 2024 -- Crossings rose 12 percent on the year."),
    ],
    [("paragraph", "The board will meet on 4 August to approve the dividend.")],
]
ANSWER = {
    "title": "Quarterly results",
    "organization": "Lyme Harbour Ferries",
    "kind": "press release",
    "form": None,
    "period": "quarter ended June 30, 2024",
    "year": 2024,
}


@pytest.fixture
def stub():
    with serve_stub() as server:
        yield server


def _client(stub: OpenAIStub) -> LLMClient:
    return LLMClient(LLMSettings(base_url=stub.base_url, model="chat-m", max_retries=0))


def _release():
    return with_profile(doc_from_pages(RELEASE, source_path="inbox/ferries-q2.pdf"))


def test_the_models_answer_fills_the_profile_and_is_asked_once(stub, tmp_path: Path) -> None:
    doc = _release()
    rules = DocumentProfile.model_validate(doc.metadata["profile"])
    assert rules.organization is None and rules.kind is None  # what the rules could not read
    stub.default = Behaviour(text=json.dumps(ANSWER))
    cache = ProfileCache(tmp_path / "profiles")

    asked = ask_profile(doc, rules, _client(stub), cache)
    profile = asked.profile
    assert asked.by == "LLM"
    assert profile.organization == ProfileField(value="Lyme Harbour Ferries", source="LLM")
    assert profile.kind == ProfileField(value="press release", source="LLM")
    assert profile.period == ProfileField(value="quarter ended June 30, 2024", source="LLM")
    assert profile.year == 2024
    assert profile.language == rules.language  # the detector's, not asked
    assert profile.identity() == (
        "Quarterly results · Lyme Harbour Ferries · press release · quarter ended June 30, 2024"
    )
    # The model saw the first pages and the file's name.
    (request,) = stub.requests
    assert "record crossings" in request.text and "ferries-q2.pdf" in request.text

    again = ask_profile(doc, rules, _client(stub), cache)
    assert (again.profile, again.by, stub.calls) == (profile, "LLM (cached)", 1)


def test_an_answer_already_on_disk_is_read_under_its_file_name_and_asks_nothing(
    stub, tmp_path: Path
) -> None:
    # As the cache has written it: the key is the SHA-256 of the first pages' text hash, the
    # model and the prompt version, one a line.
    entry = (
        tmp_path
        / "profiles"
        / "c5"
        / "c52e6a3c3c55c536054170aa29b4af270dddd0a470a3e2a9b06c5949edc64cf4.json"
    )
    entry.parent.mkdir(parents=True)
    entry.write_text(
        """{
 "text_sha256": "58050433bc8ac7a77728ec56ce11bc5cead37b596a6611a47ab26856a00f9ba8",
 "model": "chat-m",
 "prompt_version": "1",
 "answer": {
  "title": null,
  "organization": "Lyme Harbour Ferries",
  "kind": "press release",
  "form": null,
  "period": null,
  "year": 2024
 },
 "doc_id": "ferries-q2"
}""",
        encoding="utf-8",
    )
    doc = _release()
    rules = DocumentProfile.model_validate(doc.metadata["profile"])
    asked = ask_profile(doc, rules, _client(stub), ProfileCache(tmp_path / "profiles"))
    assert (asked.by, stub.calls) == ("LLM (cached)", 0)
    assert asked.profile.organization == ProfileField(value="Lyme Harbour Ferries", source="LLM")
    assert asked.profile.kind == ProfileField(value="press release", source="LLM")


def test_a_field_the_model_leaves_empty_keeps_the_rules_value(stub) -> None:
    doc = _release()
    rules = DocumentProfile.model_validate(doc.metadata["profile"])
    stub.default = Behaviour(text=json.dumps({"kind": "press release", "form": "8-K"}))
    profile = ask_profile(doc, rules, _client(stub)).profile
    assert profile.title == rules.title and profile.title is not None
    assert profile.form == ProfileField(value="Form 8-K", source="LLM")  # the rules' spelling
    assert profile.organization is None
    assert (profile.period, profile.year) == (rules.period, rules.year) and rules.year == 2024


@pytest.mark.parametrize(
    ("behaviour", "why"),
    [
        (Behaviour(status=500), "rules: the LLM failed"),
        (Behaviour(text="It is a press release."), "rules: the LLM failed"),
        (Behaviour(text=json.dumps({"year": 20240})), "rules: the LLM failed"),
    ],
    ids=["server error", "not JSON", "year out of range"],
)
def test_a_failed_call_or_an_invalid_answer_keeps_the_rules_profile(
    stub, tmp_path: Path, behaviour: Behaviour, why: str
) -> None:
    doc = _release()
    stub.default = behaviour
    cache = ProfileCache(tmp_path / "profiles")
    asked, by = with_llm_profile(doc, _client(stub), cache)
    assert by.startswith(why)
    assert asked.metadata["profile"] == doc.metadata["profile"]
    assert "degraded" not in asked.metadata  # the rules' profile is the documented fallback
    assert list(cache.entries()) == []  # nothing kept: the next materialization asks again


def test_an_exception_in_the_llm_step_degrades_the_document_and_keeps_the_rules_profile(
    stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag_assets.normalize import adapt

    def broken(*args, **kwargs):
        raise KeyError("choices")

    monkeypatch.setattr(adapt, "ask_profile", broken)
    doc = _release()
    asked, by = with_llm_profile(doc, _client(stub))
    assert by == "rules: the LLM step failed"
    assert asked.metadata["profile"] == doc.metadata["profile"]
    assert any("profile by LLM" in note for note in asked.metadata["degraded"])


def test_with_an_llm_configured_the_asset_asks_it_and_shows_where_the_profile_came_from(
    stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pymupdf

    from rag_assets_tests.support.builders import materialize_file

    path = tmp_path / "ferries-q2.pdf"
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        for number, line in enumerate(
            ["Quarterly results", "Lyme Harbour Ferries reports record crossings."]
        ):
            page.insert_text((72, 100 + 30 * number), line, fontsize=11)
        pdf.save(path)
    monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", stub.base_url)
    monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "chat-m")
    stub.default = Behaviour(text=json.dumps(ANSWER))
    result, _ = materialize_file(path, tmp_path / "data")
    (materialization,) = result.asset_materializations_for_node("normalized_documents")
    metadata = materialization.metadata
    assert metadata["profile_by"].value == "LLM"
    assert metadata["profile"].value["organization"] == {
        "value": "Lyme Harbour Ferries",
        "source": "LLM",
    }
    assert len(list(ProfileCache(tmp_path / "data" / "cache" / "profiles").entries())) == 1
