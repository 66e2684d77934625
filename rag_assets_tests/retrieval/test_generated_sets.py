"""Question sets a collection writes for itself: from its documents' structure offline, from
the configured LLM (the OpenAI stub through the real client), and through the CLI."""

from __future__ import annotations

import json

import pytest

from rag_assets.chunking import chunk_document
from rag_assets.llm import LLMClient, LLMSettings
from rag_assets.retrieval.evaluation.generate import model_questions, structural_questions
from rag_assets.retrieval.evaluation.metrics import matches
from rag_assets.retrieval.evaluation.sets import Target, load_eval_set
from rag_assets.settings import Settings
from rag_assets.storage import read_chunks
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import doc_from_pages
from rag_assets_tests.support.openai_stub import Behaviour, serve_stub

SERVICE = "Drain the pump casing and replace the shaft seal every 4,000 operating hours."
PAGES = [
    [
        ("heading", "## Seal replacement"),
        ("paragraph", SERVICE + " Use the seal kit listed in the parts table."),
        ("paragraph", '"Duty point" means the flow and head at which the pump is meant to run '
         "for most of its operating hours."),
        ("paragraph", "**NPSH:** the net positive suction head the pump needs at its inlet to "
         "run without cavitation."),
    ],
    [
        ("heading", "## Parts"),
        ("table", "| Part | Number | Interval |\n|---|---|---|\n| Shaft seal | SK-114 | 4,000 h |"
         "\n| Bearing | BR-220 | 8,000 h |"),
    ],
]  # fmt: skip


def _doc():
    return doc_from_pages(PAGES, doc_id="pump-manual", source_path="pumps/manual.pdf")


def test_a_documents_structure_asks_of_its_sections_table_rows_and_defined_terms() -> None:
    questions = structural_questions([_doc()])
    by_kind = {(q.kind, q.question): q for q in questions}
    section = by_kind[("heading", "What does the document say about Seal replacement?")]
    assert (section.page, section.evidence) == (1, ["Drain the pump casing and replace the shaft"])
    assert by_kind[("definition", "What does Duty point mean?")].evidence == [
        "the flow and head at which the pump"
    ]
    assert by_kind[("definition", "What does NPSH mean?")].evidence == [
        "the net positive suction head the pump needs"
    ]
    row = by_kind[("table row", "What is the Number for Shaft seal?")]
    assert (row.page, row.evidence) == (2, ["Shaft seal", "SK-114"])
    assert structural_questions([_doc()]) == questions  # the same draw every time
    assert len(structural_questions([_doc()], per_document=2)) == 2
    # Every question's evidence lies in one chunk of its page, whatever the template.
    for template in ("fixed", "semantic"):
        rows = chunk_document(_doc(), template, {}, ApproxTokenCounter()).rows
        for question in questions:
            target = Target(doc=question.doc_id, page=question.page, evidence=question.evidence)
            assert any(matches(row, target) for row in rows), (template, question)


def test_the_model_writes_questions_whose_evidence_is_in_their_passage() -> None:
    long_passage = " ".join([SERVICE] * 3)
    doc = doc_from_pages([[("paragraph", long_passage)], [("paragraph", "word " * 30)]])
    with serve_stub() as stub:
        stub.enqueue(
            Behaviour(text=json.dumps({"question": "How often is the seal changed?",
                                       "evidence": "every 4,000 operating hours"})),
            Behaviour(text=json.dumps({"question": "What is said?", "evidence": "not there"})),
        )  # fmt: skip
        llm = LLMClient(LLMSettings(base_url=stub.base_url, model="chat-m", max_retries=0))
        questions, problems = model_questions([doc], llm)
    assert [(q.question, q.page, q.evidence, q.kind) for q in questions] == [
        ("How often is the seal changed?", 1, ["every 4,000 operating hours"], "LLM")
    ]
    assert problems == ["doc.pdf p.2: evidence not in the passage"]
    assert "Use your own words" in stub.requests[0].text


@pytest.mark.slow
def test_evaluate_generate_writes_a_set_the_evaluation_reads(tmp_path, capsys) -> None:
    from rag_assets.cli import main

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "pumps.md").write_text(
        "# Pump manual\n\n## Seal replacement\n\n"
        + SERVICE
        + "\n\n## Parts\n\n| Part | Number |\n|---|---|\n| Shaft seal | SK-114 |\n"
    )
    data = str(tmp_path / "data")
    assert main(["ingest", "--data-dir", data, str(tmp_path / "docs")]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--generate", "--no-llm", "--data-dir", data]) == 0
    said = capsys.readouterr().out
    assert "wrote 2 questions (1 from headings, 1 from table rows)" in said
    written = load_eval_set(tmp_path / "data" / "eval" / "generated-all.jsonl")
    assert {q.question for q in written.questions} == {
        "What does the document say about Seal replacement?",
        "What is the Number for Shaft seal?",
    }
    # A Markdown file has no pages: its questions name none, and each finds a stored chunk.
    settings = Settings.from_env(tmp_path / "data")
    for question in written.questions:
        (target,) = question.targets
        assert target.page is None
        assert any(matches(c, target) for c in read_chunks(settings, target.doc)), question
    assert main(["evaluate", "--generate", "--collection", "nope", "--data-dir", data]) == 2
