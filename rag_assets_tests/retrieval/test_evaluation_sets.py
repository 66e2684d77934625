"""The shipped evaluation sets: every question's evidence is in some chunk of its document."""

from collections import Counter
from pathlib import Path

import pytest

from rag_assets.embedding.models import EmbeddingSpec, resolve_model
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file
from rag_assets.retrieval.evaluation.comparison import chunk_documents
from rag_assets.retrieval.evaluation.metrics import ChunkLookup, question_slices
from rag_assets.retrieval.evaluation.sets import EvalSet, load_eval_set
from rag_assets.templates.tokens import TokenizerCounter
from rag_assets_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

SETS = REPO_ROOT / "examples" / "eval"
FIXTURE_DOCUMENTS = [
    "legal/gdpr_eurlex_pdf_extracted.txt",
    "legal/劳动合同法(2012-12-28).md",
    "pdf/redp5110_sampled.pdf",
    "pdf/2305.03393v1-pg9.pdf",
    "pdf/WARN-Report-for-7-1-2015-to-03-25-2016.pdf",
    "pdf/issue-336-example_zh_anhui_land_use_standard.pdf",
    "pdf/normal_4pages.pdf",
    "html/wiki_duck.html",
    "md/docling_deployment.md",
    "qa/docling_faq.md",
    "qa/ms_vsdocs_zhtw_unit-test-basics.md",
    "docx/word_tables.docx",
    "docx/unit_test_headers_numbered.docx",
]


def assert_every_question_reachable(eval_set: EvalSet, paths: list[Path]) -> None:
    counter = TokenizerCounter.from_model_dir(resolve_model(EmbeddingSpec()).path)
    router = ParserRouter()
    documents = [parse_file(path, router).document for path in paths]
    names = {d.source_path for d in documents}
    assert {t.doc for q in eval_set.questions for t in q.targets if t.doc} <= names
    for template in ("fixed", "semantic", "auto"):
        chunks, _ = chunk_documents(documents, template, counter, {})
        lookup = ChunkLookup(chunks)
        unreachable = [q.id for q in eval_set.questions if not question_slices(q, lookup)[1]]
        assert unreachable == [], f"{template}: no chunk holds the evidence of {unreachable}"


def test_sample_set_covers_the_slices_and_its_evidence_is_in_the_corpus():
    eval_set = load_eval_set(SETS / "sample" / "questions.jsonl")
    assert len(eval_set.questions) >= 40
    assert len({q.id for q in eval_set.questions}) == len(eval_set.questions)
    tags = Counter(t for q in eval_set.questions for t in q.tags)
    assert {"table", "section", "zh", "cross-lingual", "paraphrase"} <= set(tags)
    assert Counter(q.language for q in eval_set.questions)["zh"] >= 10
    corpus = sorted((REPO_ROOT / "examples" / "corpus").iterdir())
    assert_every_question_reachable(eval_set, corpus)


def test_fixture_set_evidence_is_in_the_shared_documents(shared_fixtures):
    eval_set = load_eval_set(SETS / "fixtures" / "shared_fixtures.jsonl")
    assert_every_question_reachable(eval_set, [shared_fixtures / p for p in FIXTURE_DOCUMENTS])


def test_each_paraphrased_fixture_question_has_a_literal_twin_with_its_target(shared_fixtures):
    fixtures = load_eval_set(SETS / "fixtures" / "shared_fixtures.jsonl").questions
    twins = load_eval_set(SETS / "fixtures" / "literal_twins.jsonl")
    paraphrased = {q.id: q for q in fixtures if "paraphrase" in q.tags}
    assert {q.id.removesuffix("-literal") for q in twins.questions} == set(paraphrased)
    for twin in twins.questions:
        assert twin.tags == ["literal"]
        assert twin.targets == paraphrased[twin.id.removesuffix("-literal")].targets
    assert_every_question_reachable(twins, [shared_fixtures / p for p in FIXTURE_DOCUMENTS])
