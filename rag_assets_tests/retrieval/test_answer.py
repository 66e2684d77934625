"""Grounded answers on the ingested sample corpus, against the local OpenAI-compatible stub:
cited answers, rejected citations, function-calling tool choice and its rule fallback, the
not-found gate (no model call), follow-ups, the no-model path, and the key kept out of outputs."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag_assets.cli import main
from rag_assets.llm.client import LLMClient
from rag_assets.llm.settings import LLMSettings
from rag_assets.retrieval.answer import NOT_FOUND, answer
from rag_assets.retrieval.followup import Turn, rewrite_by_rule
from rag_assets.retrieval.grounding import MODEL_NOT_FOUND, check_answer
from rag_assets.retrieval.router import route_by_rules
from rag_assets.retrieval.tools.toolbox import Toolbox, open_toolbox
from rag_assets.settings import Settings
from rag_assets_tests.support.builders import make_doc
from rag_assets_tests.support.openai_stub import Behaviour, OpenAIStub, StubRequest, serve_stub
from rag_assets_tests.support.sample_corpus import index_spec_document, ingested_sample

KEY = "sk-answer-test-0123456789"
CAPABILITIES = "What is the reset value of the Capabilities Register?"
_SOURCE = re.compile(r"^\[(\d+)\] \([^\n]*\)\n(.*)$", re.MULTILINE)
BLOCK_GAP = "What is the reset value of the Block Gap Control Register?"
# A spec whose prose and register table disagree (the sample's agree).
DISAGREEING = make_doc(
    [
        ("heading", "5 Block Gap Control", 1, 7),
        (
            "paragraph",
            "After power-on the Block Gap Control Register resets to 0x00000010 and a pending "
            "stop request is cleared.",
            None,
            7,
        ),
        ("caption", "Table 8: Block Gap Registers", None, 7),
        (
            "table",
            "| Offset | Register | Access | Reset Value |\n|---|---|---|---|\n"
            "| 0x40 | Block Gap Control Register | RW | 0x00000001 |\n"
            "| 0x44 | Block Gap Status Register | RO | 0x00000000 |",
            None,
            7,
        ),
    ],
    doc_id="block-gap-doc",
    source_path="block-gap/spec.pdf",
)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = ingested_sample(tmp_path_factory)
    index_spec_document(settings, DISAGREEING)
    return settings


@pytest.fixture(scope="module")
def box(settings: Settings) -> Iterator[Toolbox]:
    with open_toolbox(settings) as opened:
        assert opened is not None
        yield opened


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", KEY)
    with serve_stub() as served:
        yield served


def client_for(stub: OpenAIStub) -> LLMClient:
    return LLMClient(LLMSettings(base_url=stub.base_url, model="stub-model", max_retries=0))


def marker_of(request: StubRequest, needle: str) -> int:
    """The marker of the first prompt source whose text holds `needle`."""
    return next(int(m) for m, body in _SOURCE.findall(request.text) if needle in body)


def source_holding(request: StubRequest, needle: str) -> int:
    """The marker of the prompt source whose text, any line of it, holds `needle`."""
    before = request.text[: request.text.index(needle)]
    return int(re.findall(r"^\[(\d+)\] \(", before, re.MULTILINE)[-1])


def quoting(needle: str, sentence: str, rewrite: str = "") -> Callable[[StubRequest], Behaviour]:
    """A model that answers `sentence` citing the source holding `needle`, calls no tool, and
    rewrites a follow-up (a request without sources) as `rewrite`."""

    def respond(request: StubRequest) -> Behaviour:
        if request.tool_names:
            return Behaviour(text="")
        if not _SOURCE.search(request.text):
            return Behaviour(text=rewrite)
        return Behaviour(text=f"{sentence} [{marker_of(request, needle)}].")

    return respond


@pytest.mark.slow
def test_a_cited_answer_maps_markers_to_sources(box: Toolbox, stub: OpenAIStub) -> None:
    stub.respond = quoting("0x0169680A", "The Capabilities Register resets to 0x0169680A")
    result = answer(CAPABILITIES, box, client_for(stub))
    assert result.status == "answered"
    (citation,) = result.citations
    assert f"[{citation.marker}]" in result.answer
    assert "Reset Value: 0x0169680A" in citation.snippet  # the row's cells, verbatim
    assert citation.page_start == 2 and citation.section == "2 Register Map"
    assert result.tools_used[0].name == "table_rows"
    # The route request offered the tools; the model called none, so the rules chose.
    assert stub.requests[0].tool_names == ["glossary", "table_rows", "text", "figures", "section"]
    assert result.tools_used[0].chosen_by == "rules" and "called no tool" in result.route_reason
    assert result.model_calls == 2
    assert "ONLY the numbered sources" in stub.requests[1].text


@pytest.mark.slow
@pytest.mark.parametrize(
    ("second", "status"),
    [
        ("The Capabilities Register resets to 0x0169680A [1].", "answered"),
        ("The Capabilities Register resets to 0x0169680A [99].", "passages"),
    ],
)
def test_an_answer_citing_nothing_retrieved_is_rejected(
    box: Toolbox, stub: OpenAIStub, second: str, status: str
) -> None:
    bad = "The Capabilities Register resets to 0x0169680A [99]."
    stub.enqueue(Behaviour(text=""), Behaviour(text=bad), Behaviour(text=second))
    result = answer(CAPABILITIES, box, client_for(stub))
    assert result.status == status
    assert "markers [99] point at no source" in result.notes[0]
    assert "Your answer was rejected" in stub.requests[2].text  # the retry says why
    assert stub.calls == 3  # route, answer, one retry: no more
    if status == "passages":
        assert result.answer.startswith("The model gave no answer that passed the checks")
        assert "0x0169680A" in result.answer and len(result.citations) > 1


@pytest.mark.slow
@pytest.mark.parametrize("acknowledged", [False, True])
def test_where_table_and_text_disagree_the_answer_gives_the_tables_value(
    box: Toolbox, stub: OpenAIStub, acknowledged: bool
) -> None:
    def respond(request: StubRequest) -> Behaviour:
        if request.tool_names:
            return Behaviour(text="")
        text = source_holding(request, "resets to 0x00000010")
        row = source_holding(request, "Reset Value: 0x00000001")
        if acknowledged:
            return Behaviour(
                text=f"The Block Gap Control Register resets to 0x00000001 [{row}]; the text "
                f"differs and says 0x00000010 [{text}]."
            )
        return Behaviour(text=f"The Block Gap Control Register resets to 0x00000010 [{text}].")

    stub.respond = respond
    result = answer(BLOCK_GAP, box, client_for(stub))
    assert result.status == "answered" and result.model_calls == 2  # the note needs no call
    snippets = {c.marker: c.snippet for c in result.citations}
    (row,) = [m for m, s in snippets.items() if "Reset Value: 0x00000001" in s]
    (text,) = [m for m, s in snippets.items() if "resets to 0x00000010" in s]
    if acknowledged:
        assert "Note:" not in result.answer and result.notes == []
    else:
        assert result.answer.endswith(
            "Note: the sources disagree on the Reset Value of the Block Gap Control Register: "
            f"Table 8: Block Gap Registers gives 0x00000001 [{row}], the text gives 0x00000010 "
            f"[{text}]; the table's value applies."
        )
        assert result.notes == [
            "table and text disagree on the Reset Value of the Block Gap Control Register: "
            "note appended"
        ]


@pytest.mark.slow
def test_the_model_picks_tools_by_function_calling(box: Toolbox, stub: OpenAIStub) -> None:
    # The rules send this to `text`; the model asks for the glossary instead.
    question = "Tell me about pausing between two data blocks."
    assert route_by_rules(question).calls[0].name == "text"
    stub.enqueue(Behaviour(text=None, tool_calls=(("glossary", {"term": "Block Gap"}),)))
    stub.respond = None
    stub.default = Behaviour(text="A Block Gap is the interval between two data blocks [1].")
    result = answer(question, box, client_for(stub))
    used = {t.name: t for t in result.tools_used}
    assert used["glossary"].chosen_by == "llm" and used["glossary"].results == 1
    assert result.route_reason == "function calling"
    assert result.status == "answered" and result.citations[0].snippet.startswith("Block Gap:")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (Behaviour(status=400), "function calling: HTTP 400"),  # an endpoint without tools
        (
            Behaviour(text=None, tool_calls=(("glossary", {"wrong": 1}),)),
            "is not a valid tool call",
        ),
    ],
)
def test_the_rules_choose_when_function_calling_fails(
    box: Toolbox, stub: OpenAIStub, failure: Behaviour, reason: str
) -> None:
    stub.enqueue(failure)
    stub.default = Behaviour(text="The Capabilities Register resets to 0x0169680A [1].")
    result = answer(CAPABILITIES, box, client_for(stub))
    assert result.tools_used[0].name == "table_rows" and result.tools_used[0].chosen_by == "rules"
    assert reason in result.route_reason
    assert result.status == "answered"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "why"),
    [
        ("What is the warranty period of the ASHC?", "below the threshold"),
        ("Which HDMI resolutions does the controller support?", "mentions HDMI"),
    ],
)
def test_not_found_calls_no_model(box: Toolbox, stub: OpenAIStub, question: str, why: str) -> None:
    result = answer(question, box, client_for(stub))
    assert result.status == "not_found" and result.answer.startswith(NOT_FOUND)
    assert stub.calls == 0 and result.model_calls == 0
    assert why in result.notes[0]
    assert 0 < len(result.citations) <= 3  # the nearest passages, cited


@pytest.mark.slow
def test_the_model_may_still_find_nothing(box: Toolbox, stub: OpenAIStub) -> None:
    stub.enqueue(Behaviour(text=""), Behaviour(text=MODEL_NOT_FOUND))
    result = answer(CAPABILITIES, box, client_for(stub))
    assert result.status == "not_found" and result.answer.startswith(NOT_FOUND)


@pytest.mark.slow
def test_without_a_model_passages_and_tool_results_are_cited(box: Toolbox) -> None:
    result = answer("What is a Block Gap?", box)
    assert result.status == "no_model" and "No language model is configured" in result.answer
    assert result.tools_used[0].name == "glossary"
    assert result.citations[0].snippet.startswith("Block Gap: The interval between")
    assert "[1] " in result.answer and result.model_calls == 0


@pytest.mark.slow
def test_a_follow_up_is_rewritten_before_retrieval(box: Toolbox, stub: OpenAIStub) -> None:
    first = "What is the offset of the Host Control Register?"
    history = [Turn(question=first, standalone_question=first, answer="0x04 [1].")]
    by_rule = answer("and its reset value?", box, history=history)
    assert by_rule.standalone_question == "What is the reset value of the Host Control Register?"
    assert any("0x00000E00" in c.snippet for c in by_rule.citations)
    stub.enqueue(Behaviour(text="What is the reset value of the Host Control Register?"))
    stub.default = Behaviour(text="")
    by_model = answer("and its reset value?", box, client_for(stub), history=history)
    assert "0x04 [1]." in stub.requests[0].text  # the rewrite saw the conversation
    assert by_model.standalone_question == by_rule.standalone_question


@pytest.mark.slow
def test_cli_answer_session_and_no_key_in_outputs(
    settings: Settings,
    stub: OpenAIStub,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", stub.base_url)
    monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "stub-model")
    stub.respond = quoting(
        "0x00000E00",
        "The Host Control Register resets to 0x00000E00",
        rewrite="What is the reset value of the Host Control Register?",
    )
    session = tmp_path / "session.json"
    data = ["--data-dir", str(settings.data_dir), "--session", str(session)]
    assert main(["answer", *data, "What is the offset of the Host Control Register?"]) == 0
    assert main(["answer", *data, "--json", "and its reset value?"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out[out.index("{\n") :])
    assert result["standalone_question"] == "What is the reset value of the Host Control Register?"
    assert result["status"] == "answered" and "0x00000E00" in result["citations"][0]["snippet"]
    assert len(json.loads(session.read_text())) == 2
    assert stub.calls == 5  # route and answer twice, and the follow-up's rewrite
    headers = [{k.lower(): v for k, v in r.headers.items()} for r in stub.requests]
    assert all(h["authorization"] == f"Bearer {KEY}" for h in headers)  # sent...
    assert KEY not in out and KEY not in session.read_text()  # ...and never shown


def test_check_answer_names_each_problem() -> None:
    sources = {1: "Offset: 0x2C | Register: Software Reset Register", 2: "A reset takes 10 ms."}
    assert check_answer("The register is at 0x2C [1]. A reset takes 10 ms. [2]", sources) == []
    assert check_answer("It is at 0x2C [1]. It takes 10 ms.", sources) == [
        "no citation marker in 'It takes 10 ms.'"
    ]
    assert check_answer("It is at 0x2C [3].", sources) == ["markers [3] point at no source"]
    assert check_answer("It takes 12 ms [2].", sources) == ["12 is not in source [2]"]


@pytest.mark.parametrize(
    ("question", "tool", "argument"),
    [
        ("What is a Block Gap?", "glossary", "Block Gap"),
        ("What does the access type RW1C mean?", "glossary", "the access type RW1C"),
        ("What is RW1C?", "glossary", "RW1C"),
        ("什么是远程办公？", "glossary", "远程办公"),
        ("What is the offset of the Software Reset Register?", "table_rows", None),
        ("What is the dinner allowance in London?", "table_rows", None),
        ("Which figure shows the debounce timing?", "figures", None),
        ("How do I enable debug logging?", "text", None),
    ],
)
def test_rule_router(question: str, tool: str, argument: str | None) -> None:
    (call,) = route_by_rules(question).calls
    assert call.name == tool
    if argument is not None:
        assert call.arguments["term"] == argument


def test_rewrite_by_rule_without_a_subject_keeps_the_previous_question() -> None:
    assert rewrite_by_rule("and its size?", "how big is it") == "how big is it and its size?"
