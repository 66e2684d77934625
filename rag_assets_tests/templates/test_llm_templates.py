"""The LLM structure pass of `qa_pairs` and LLM template selection, through the real client
against the OpenAI stub on 127.0.0.1: what the model's JSON becomes, and every way back to
the regex path with its reason recorded."""

from __future__ import annotations

import json
import re

import pytest

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.llm import LLMClient, LLMSettings
from rag_assets.parsers.base import ParsedDocument
from rag_assets.templates.choice_cache import CachedGuess, ChoiceCache, choice_key
from rag_assets.templates.qa.llm_structure import PROMPT, PROMPT_VERSION, TRUNCATED_NOTE
from rag_assets.templates.qa_pairs import (
    FALLBACK_NOTE,
    NOTHING_FOUND,
    QAPairsOptions,
    QAPairsTemplate,
)
from rag_assets.templates.registry import build_template
from rag_assets.templates.select import TemplateChoice, choose_template
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support import legco_paper as paper
from rag_assets_tests.support.builders import Item, assert_blocking_checks_pass, make_doc
from rag_assets_tests.support.openai_stub import Behaviour, OpenAIStub, serve_stub

APPROX = ApproxTokenCounter()


@pytest.fixture
def stub():
    with serve_stub() as server:
        yield server


def client_for(stub: OpenAIStub, **overrides) -> LLMClient:
    settings = {"base_url": stub.base_url, "model": "chat-m", "timeout_s": 5, **overrides}
    return LLMClient(LLMSettings(**settings))


def answering(stub: OpenAIStub, answer: dict) -> None:
    stub.default = Behaviour(text=json.dumps(answer, ensure_ascii=False))


def chunk(
    doc: StandardizedDocument, llm: LLMClient | None, mode: str = "fallback", **options
) -> list[ChunkRow]:
    settings = QAPairsOptions(max_tokens=512, overlap_tokens=0, llm_structure=mode, **options)
    rows = QAPairsTemplate(settings, llm=llm).chunk(doc, APPROX)
    assert_blocking_checks_pass(rows, doc, headings_from_text=True)
    return rows


def qa(question: str, answer: str, headings: list[str], pages: list[int], qid=None) -> dict:
    return {
        "type": "qa",
        "question_id": qid,
        "question": question,
        "answer": answer,
        "headings": headings,
        "pages": pages,
    }


def section(kind: str, start: str, headings: list[str], pages: list[int]) -> dict:
    return {"type": kind, "start": start, "headings": headings, "pages": pages}


# Questions the markers cannot read: "Question:" / "Reply:", once both on one line.
ENQUIRIES: list[Item] = [
    ("title", "# Residents' enquiries", None, 1),
    ("paragraph", "Notes of the meeting on 3 May.", None, 1),
    ("heading", "## Drainage", 2, 1),
    ("paragraph", "Question: When will the drainage works finish?", None, 1),
    ("paragraph", "Reply: The works will finish in 2027.", None, 1),
    ("page_footer", "E-1", None, 1),
    ("paragraph", "The second stage follows.", None, 2),
    ("heading", "## Costs", 2, 2),
    ("paragraph", "Question: Who pays for the works? Reply: The government pays.", None, 2),
]
TITLE = "Residents' enquiries"
ENQUIRIES_ANSWER = {
    "sections": [
        section("narrative", "Notes of the meeting on 3 May.", [TITLE], [1]),
        qa(
            "When will the drainage works finish?",
            "Reply: The works will finish in 2027.",
            [TITLE, "Drainage"],
            [1, 2],
        ),
        qa("Is the moon made of cheese?", "Yes.", [TITLE], [2]),  # not in the text
        # An id the line does not show is replaced by one by position.
        qa("Who pays for the works?", "Reply: The government pays.", [TITLE, "Costs"], [2], "C7"),
    ]
}


def test_llm_reads_questions_the_markers_cannot(stub):
    doc = make_doc(ENQUIRIES)
    answering(stub, ENQUIRIES_ANSWER)
    rows = chunk(doc, client_for(stub))

    assert [(r.metadata["section_type"], r.logical_unit, r.text) for r in rows] == [
        # The title right above the section heads it, as `semantic` would.
        ("narrative", None, f"{TITLE}\n\nNotes of the meeting on 3 May."),
        (
            "qa",
            "Q1",
            "Question: When will the drainage works finish?\n\n"
            "Reply: The works will finish in 2027.\n\nThe second stage follows.",
        ),
        ("qa", "Q2", "Question: Who pays for the works?\n\nReply: The government pays."),
    ]
    assert [(r.page_start, r.page_end, r.metadata.get("source_page_range")) for r in rows] == [
        (1, 1, [1, 1]),
        (1, 2, [1, 2]),
        (2, 2, [2, 2]),
    ]
    assert [r.headings for r in rows] == [[TITLE], [TITLE, "Drainage"], [TITLE, "Costs"]]
    assert [r.header_path for r in rows] == ["/", f"/{TITLE}/", f"/{TITLE}/"]
    assert [r.metadata["question_text"] for r in rows[1:]] == [
        "When will the drainage works finish?",
        "Who pays for the works?",
    ]
    assert [r.metadata["question_index"] for r in rows[1:]] == [0, 1]
    # Offsets are the IR's: the question of a pair split on one line starts the chunk.
    assert doc.markdown[rows[2].start_char : rows[2].end_char] == ENQUIRIES[-1][1]
    assert {
        (m["structure_source"], m["llm_dropped_questions"], m["llm_truncated"])
        for m in (r.metadata for r in rows)
    } == {("llm", 1, False)}
    assert not any("llm_fallback_reason" in r.metadata for r in rows)
    assert [r.chunk_id for r in rows] == [
        chunk_id_for(doc.doc_id, "qa_pairs", r.chunk_index, r.text) for r in rows
    ]

    # One request: the model configured, the schema asked for in words (no response_format),
    # the document with its page markers and without its page furniture.
    [request] = stub.requests
    assert request.model == "chat-m" and "response_format" not in request.body
    system, user = request.body["messages"]
    assert system["role"] == "system" and system["content"].startswith("Answer with one JSON")
    assert '"sections"' in system["content"] and '"speaking_notes"' in system["content"]
    assert user["role"] == "user" and user["content"].startswith(PROMPT)
    shown = user["content"][len(PROMPT) :]
    assert shown.startswith("[page 1]\n# Residents' enquiries\n\n")
    assert "[page 2]\nThe second stage follows." in shown and "E-1" not in shown
    assert QAPairsTemplate.version.endswith(f"+prompt{PROMPT_VERSION}")


def test_what_the_model_did_not_see_is_narrative(stub):
    appendix = [f"Paragraph {n} of the appendix, " + "x" * 60 for n in range(20)]
    items: list[Item] = [
        ("paragraph", text, None, 2 if n < 12 else 3) for n, text in enumerate(appendix)
    ]
    items.insert(12, ("heading", "## Appendix B", 2, 3))
    doc = make_doc([*ENQUIRIES, *items])
    answering(stub, ENQUIRIES_ANSWER)
    rows = chunk(doc, client_for(stub), llm_max_chars=1000)

    shown = stub.requests[0].body["messages"][1]["content"][len(PROMPT) :]
    assert len(shown) <= 1000 + len(TRUNCATED_NOTE) + 1 and shown.endswith(TRUNCATED_NOTE)
    assert {r.metadata["llm_truncated"] for r in rows} == {True}
    # The last section runs to the end of what the model saw (paragraph 7, cut inside)...
    assert [r.metadata["section_type"] for r in rows[:3]] == ["narrative", "qa", "qa"]
    assert rows[2].text.endswith("\n\n".join(appendix[:8]))
    # ...and nothing is lost: what it never saw follows as narrative, under its headings.
    assert [(r.metadata["section_type"], r.headings, r.text, r.page_start) for r in rows[3:]] == [
        ("narrative", [], "\n\n".join(appendix[8:12]), 2),
        ("narrative", ["Appendix B"], "\n\n".join(["Appendix B", *appendix[12:]]), 3),
    ]


# --- the LegCo paper: the LLM's reading against the markers' -----------------------------------


def _words(question: str) -> str:
    """A question without its marker (問 A1：, Q1), as the prompt asks the model to give it."""
    return re.split(r"[：︰:]\s*|^Q\d+\s+", question, maxsplit=1)[-1]


def legco_answer() -> dict:
    notes = [text for _, text in paper.SPEAKING_NOTES]
    drainage, rehousing = ["備用問答", "(A) 排水系統"], ["備用問答", "(B) 安置安排"]
    return {
        "sections": [
            *(section("speaking_notes", notes[i], ["發言要點"], [1]) for i in (0, 1, 4)),
            section(
                "narrative",
                paper.NARRATIVE_HEADING,
                ["發言要點", paper.NARRATIVE_HEADING],
                [1],
            ),
            qa(_words(paper.A1_QUESTION), paper.A1_ANSWER, drainage, [2], "A1"),
            qa(_words(paper.A2_QUESTION), paper.A2_ANSWER, drainage, [2], "A2"),
            qa(_words(paper.A3_QUESTION), paper.A3_ANSWER, drainage, [2, 3], "A3"),
            qa(_words(paper.B1_QUESTION), paper.B1_ANSWER, rehousing, [3], "B1"),
            *(qa(q, answer[0], ["Others"], [4]) for q, answer in paper.OTHERS),
            *(
                qa(_words(q), a, ["Supplementary Questions"], [4], q.split()[0])
                for q, a in paper.ENGLISH
            ),
        ]
    }


@pytest.fixture(scope="module")
def legco(tmp_path_factory: pytest.TempPathFactory) -> StandardizedDocument:
    from rag_assets.normalize.adapt import to_ir
    from rag_assets.parsers.pymupdf import PyMuPDFParser

    path = tmp_path_factory.mktemp("legco") / "paper.pdf"
    paper.build_legco_paper(path)
    parsed: ParsedDocument = PyMuPDFParser(ocr=False).parse(path)
    return to_ir(parsed, doc_id="legco-paper", source_sha256="0" * 64)


def _shape(row: ChunkRow) -> tuple:
    m = row.metadata
    return (
        row.text,
        row.headings,
        row.header_path,
        row.chunk_type,
        (row.page_start, row.page_end, row.start_char, row.end_char),
        m["section_type"],
        m.get("question_text"),
        m.get("source_page_range"),
    )


def test_always_reads_the_legco_paper_as_the_markers_do(stub, legco):
    answering(stub, legco_answer())
    client = client_for(stub)
    regex = chunk(legco, client, "off")
    assert stub.calls == 0  # "off": a client given is not used
    llm = chunk(legco, client, "always")

    assert stub.calls == 1
    assert [_shape(r) for r in llm] == [_shape(r) for r in regex]
    assert [r.logical_unit for r in llm] == [None, None, None, "1"] + [
        *("A1", "A2", "A3", "B1"),
        *("Q5", "Q6", "Q7", "Q8"),  # no id written: one by position
        *("Q1", "Q2", "Q3"),
    ]
    assert {r.metadata["structure_source"] for r in llm} == {"llm"}
    assert {r.metadata["structure_source"] for r in regex} == {"regex"}
    assert {r.metadata["llm_dropped_questions"] for r in llm} == {0}
    # Pages reach the model as markers, furniture does not.
    shown = stub.requests[0].body["messages"][1]["content"]
    assert all(f"[page {n}]" in shown for n in (1, 2, 3, 4))
    assert paper.MEETING_DATE not in shown and "E-2" not in shown

    # "fallback": the markers find the paper's questions, so the model is not asked.
    assert {r.metadata["structure_source"] for r in chunk(legco, client)} == {"regex"}
    assert stub.calls == 1


# --- back to the regex path --------------------------------------------------------------------

# One marked pair: fewer than two, so "fallback" asks the model.
ONE_PAIR: list[Item] = [
    ("heading", "## 備用問答", 2, 1),
    ("paragraph", "問 A1：何時完成？", None, 1),
    ("paragraph", "答 A1：明年完成。", None, 1),
    ("paragraph", "Question: Who pays? Reply: The government.", None, 2),
]


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (Behaviour(text="the sections are: one"), "invalid JSON: Expecting value at char 0"),
        (
            Behaviour(status=500),
            "LLM unavailable: HTTP 500 after 0 retries: Error code: 500 - stub status 500",
        ),
        (Behaviour(text=""), "empty answer"),
        (
            Behaviour(text='{"sections": [{"type": "poem", "start": "x"}]}'),
            "JSON does not match LLMStructure: sections.0.type: Input should be 'qa', "
            "'narrative', 'speaking_notes', 'table' or 'toc'",
        ),
        (
            Behaviour(text='{"sections": [{"type": "qa", "answer": "x"}]}'),
            "JSON does not match LLMStructure: sections.0: Value error, "
            "a qa section needs its question",
        ),
        (
            Behaviour(text=json.dumps({"sections": [qa("Invented?", "No.", [], [1])]})),
            f"{NOTHING_FOUND} (1 questions not in the text)",
        ),
    ],
    ids=["invalid-json", "http-500", "empty", "wrong-type", "no-question", "nothing-found"],
)
def test_failures_fall_back_to_the_markers_and_say_why(stub, behaviour, reason):
    doc = make_doc(ONE_PAIR)
    stub.default = behaviour
    rows = chunk(doc, client_for(stub, max_retries=0))

    assert stub.calls == 1
    regex = chunk(doc, None)
    assert [(r.chunk_id, r.text) for r in rows] == [(r.chunk_id, r.text) for r in regex]
    assert rows[0].logical_unit == "A1"
    assert {(r.metadata["structure_source"], r.metadata["llm_fallback_reason"]) for r in rows} == {
        ("regex", reason)
    }


def test_budget_and_missing_client(stub):
    doc = make_doc(ONE_PAIR)
    rows = chunk(doc, client_for(stub, max_calls=0), "always")
    assert stub.calls == 0
    assert {r.metadata["llm_fallback_reason"] for r in rows} == {
        "LLM call refused: budget of 0 calls used"
    }
    # Without a client the template is the regex template: no LLM, no reason to give.
    for mode in ("off", "fallback", "always"):
        assert {
            tuple(sorted(k for k in r.metadata if k.startswith(("structure", "llm"))))
            for r in chunk(doc, None, mode)
        } == {("structure_source",)}


def test_semantic_fallback_says_why_the_llm_was_not_used(stub):
    doc = make_doc(ENQUIRIES)
    stub.default = Behaviour(text="{")
    rows = chunk(doc, client_for(stub))
    semantic = SemanticTemplate(QAPairsOptions(max_tokens=512, overlap_tokens=0)).chunk(doc, APPROX)

    assert [r.text for r in rows] == [r.text for r in semantic]
    assert [r.metadata for r in rows] == [
        {
            **r.metadata,
            "template_fallback": FALLBACK_NOTE,
            "llm_fallback_reason": "invalid JSON: Expecting property name enclosed in "
            "double quotes at char 1",
        }
        for r in semantic
    ]


def test_build_template_hands_the_client_to_templates_that_use_one(stub):
    client = client_for(stub)
    template = build_template("qa_pairs", {"llm_structure": "always"}, llm=client)
    assert isinstance(template, QAPairsTemplate) and template.llm is client
    assert template.options.llm_structure == "always"
    assert isinstance(build_template("semantic", None, llm=client), SemanticTemplate)
    assert build_template("qa_pairs", None).llm is None
    assert QAPairsTemplate(QAPairsOptions()).llm is None


# --- template selection -----------------------------------------------------------------------

CLAUSES: list[Item] = [
    ("paragraph", "第一条 总则", None, 1),
    ("paragraph", "第二条 适用", None, 1),
    ("paragraph", "第三条 原则", None, 1),
]
NO_PATTERN = "auto: no Q&A, clause or spec pattern found"
CLAUSE_MARKERS = "auto: 3 clause markers (第X条, Article N)"


def guess(template: str, confidence: float, reason: str = "Question: and Reply: lines") -> str:
    return json.dumps({"template": template, "confidence": confidence, "reason": reason})


def test_llm_choice_accepted_at_or_above_the_threshold(stub):
    stub.default = Behaviour(text=guess("qa_pairs", 0.9, "Question: and\nReply: lines"))
    choice = choose_template(make_doc(ENQUIRIES), "auto", llm=client_for(stub))

    assert choice == TemplateChoice(
        "qa_pairs", f"llm: Question: and Reply: lines (qa_pairs at 0.9; {NO_PATTERN})"
    )
    [request] = stub.requests
    assert request.model == "chat-m" and "response_format" not in request.body
    system, user = request.body["messages"]
    assert system["content"].startswith("Answer with one JSON")
    assert '"confidence"' in system["content"]
    prompt = user["content"]
    assert "- qa_pairs: " in prompt and "- clauses: " in prompt and "- fixed: " in prompt
    assert f"Title: {TITLE}\nHeadings:\n{TITLE}\nDrainage\nCosts\n" in prompt
    assert prompt.endswith(make_doc(ENQUIRIES).markdown + "\n")

    stub.default = Behaviour(text=guess("semantic", 0.5))
    doc = make_doc(CLAUSES)
    assert choose_template(doc, "auto", llm=client_for(stub), min_confidence=0.5).template == (
        "semantic"
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (guess("semantic", 0.4), f"{CLAUSE_MARKERS} (LLM said semantic at 0.4, below 0.7)"),
        (
            guess("poem", 0.95),
            f"{CLAUSE_MARKERS} (LLM said poem at 0.95, not a registered template)",
        ),
        ("no JSON here", f"{CLAUSE_MARKERS} (LLM failed: invalid JSON: Expecting value at char 0)"),
        (
            guess("semantic", 1.5),
            f"{CLAUSE_MARKERS} (LLM failed: JSON does not match TemplateGuess: ",
        ),
    ],
    ids=["below-threshold", "unregistered", "invalid-json", "out-of-range"],
)
def test_llm_choice_rejected_keeps_the_markers_choice(stub, answer, reason):
    stub.default = Behaviour(text=answer)
    choice = choose_template(make_doc(CLAUSES), "auto", llm=client_for(stub))

    assert choice.template == "clauses" and choice.reason.startswith(reason)
    assert stub.calls == 1


def test_without_auto_or_a_client_no_llm_is_asked(stub):
    client = client_for(stub)
    doc = make_doc(CLAUSES)
    assert choose_template(doc, "fixed", llm=client) == TemplateChoice("fixed", "configured")
    assert choose_template(doc, "auto") == TemplateChoice("clauses", CLAUSE_MARKERS)
    assert stub.calls == 0


def test_the_llm_choice_is_cached_by_document_model_and_asked_again_when_one_changes(
    stub, tmp_path
):
    cache = ChoiceCache(tmp_path / "templates")
    stub.default = Behaviour(text=guess("qa_pairs", 0.9))
    doc = make_doc(ENQUIRIES)
    first = choose_template(doc, "auto", llm=client_for(stub), cache=cache)
    assert (first.template, first.cached, stub.calls) == ("qa_pairs", False, 1)

    # The same document again, from another client (another run): the stored guess, no call.
    again = choose_template(doc, "auto", llm=client_for(stub), cache=cache)
    assert again == TemplateChoice(first.template, first.reason, cached=True)
    assert stub.calls == 1
    # The guess is stored, not the verdict: a stricter threshold re-judges it without a call.
    strict = choose_template(doc, "auto", llm=client_for(stub), min_confidence=0.95, cache=cache)
    assert (strict.template, strict.cached, stub.calls) == ("semantic", True, 1)

    edited = make_doc([*ENQUIRIES, ("paragraph", "Question: Who inspects the drains?", None, 2)])
    assert not choose_template(edited, "auto", llm=client_for(stub), cache=cache).cached
    assert stub.calls == 2
    other_model = client_for(stub, model="chat-n")
    assert not choose_template(doc, "auto", llm=other_model, cache=cache).cached
    assert stub.calls == 3 and stub.requests[-1].model == "chat-n"


def test_a_guess_already_on_disk_is_read_under_its_file_name(tmp_path):
    # As the cache has written it: the key is the SHA-256 of the document hash, the model, the
    # selector version and the templates offered, one a line.
    key = "09fcbdc4d0c6f5f0b9322d308659d03e45b81836ebd051e60f8860bf07bf2bb7"
    entry = tmp_path / "templates" / "09" / f"{key}.json"
    entry.parent.mkdir(parents=True)
    entry.write_text(
        """{
 "document_sha256": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
 "model": "chat-m",
 "selector_version": "select-v1",
 "templates": [
  "qa_pairs",
  "semantic"
 ],
 "template": "qa_pairs",
 "confidence": 0.9,
 "reason": "questions and replies",
 "doc_id": "enquiries"
}""",
        encoding="utf-8",
    )
    assert choice_key("d" * 64, "chat-m", "select-v1", ["qa_pairs", "semantic"]) == key
    assert list(ChoiceCache(tmp_path / "templates").entries()) == [
        (
            entry,
            CachedGuess(
                document_sha256="d" * 64,
                model="chat-m",
                selector_version="select-v1",
                templates=["qa_pairs", "semantic"],
                template="qa_pairs",
                confidence=0.9,
                reason="questions and replies",
                doc_id="enquiries",
            ),
        )
    ]


def test_a_failed_or_invalid_answer_is_not_cached(stub, tmp_path):
    cache = ChoiceCache(tmp_path / "templates")
    doc = make_doc(CLAUSES)
    stub.enqueue(Behaviour(text="no JSON here"), Behaviour(status=400))
    for _ in range(2):
        choice = choose_template(doc, "auto", llm=client_for(stub), cache=cache)
        assert choice.template == "clauses" and "LLM failed" in choice.reason
    assert not list((tmp_path / "templates").rglob("*.json"))

    stub.default = Behaviour(text=guess("semantic", 0.8))
    assert choose_template(doc, "auto", llm=client_for(stub), cache=cache).template == "semantic"
    assert choose_template(doc, "auto", llm=client_for(stub), cache=cache).cached
    assert stub.calls == 3
