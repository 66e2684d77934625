"""Retrieval evaluation without Dagster: set formats, relevance, metrics against hand-computed
values, the runs compared."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest

from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.errors import ConfigurationError
from rag_assets.retrieval.evaluation.comparison import (
    EncodedQueries,
    RunSpec,
    mode_fusion,
    run_specs,
)
from rag_assets.retrieval.evaluation.metrics import (
    METRICS,
    QuestionOutcome,
    aggregate,
    matches,
    score_ranking,
)
from rag_assets.retrieval.evaluation.sets import (
    EvalQuestion,
    Target,
    load_eval_sets,
    passage_document,
)
from rag_assets.retrieval.fusion import fusion_weights
from rag_assets.settings.fusion import FusionSettings


@dataclass
class Hit:
    doc_id: str = "doc-a"
    text: str = ""
    source_path: str = "specs/a.pdf"
    page_start: int | None = None
    page_end: int | None = None


def ranked(*texts: str) -> list[Hit]:
    return [Hit(text=t) for t in texts]


def test_one_target_at_rank_three():
    scores = score_ranking(ranked("x", "y", "the answer", "z"), [Target(evidence="answer")])
    assert scores == {
        "recall@1": 0.0,
        "recall@5": 1.0,
        "recall@10": 1.0,
        "mrr@10": pytest.approx(1 / 3),
        "ndcg@10": pytest.approx(0.5),  # 1 / log2(3 + 1)
        "doc@1": 0.0,  # no target names a document: the top hit itself must be relevant
    }


def test_the_right_document_at_rank_one_counts_apart_from_the_page():
    wrong_page = [Hit(doc_id="10k-2022", page_start=3, page_end=3, text="x")]
    look_alike = [Hit(doc_id="10k-2021", page_start=7, page_end=7, text="x")]
    target = [Target(doc="10k-2022", page=7)]
    assert score_ranking(wrong_page, target)["doc@1"] == 1.0
    assert score_ranking(wrong_page, target)["recall@1"] == 0.0
    assert score_ranking(look_alike, target)["doc@1"] == 0.0


def test_two_targets_each_credited_once():
    # A at ranks 2 and 3 (the second adds nothing), B at rank 4.
    hits = ranked("x", "alpha", "alpha again", "beta", "y")
    scores = score_ranking(hits, [Target(evidence="alpha"), Target(evidence="beta")])
    assert scores["recall@1"] == 0.0
    assert scores["recall@5"] == 1.0
    assert scores["mrr@10"] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert scores["ndcg@10"] == pytest.approx(dcg / ideal)  # 0.6509
    assert scores["ndcg@10"] == pytest.approx(0.6509, abs=1e-4)


def test_half_the_targets_found():
    hits = ranked("alpha", *["x"] * 9, "beta")  # beta only at rank 11
    scores = score_ranking(hits, [Target(evidence="alpha"), Target(evidence="beta")])
    assert scores["recall@1"] == 0.5 and scores["recall@10"] == 0.5
    assert scores["mrr@10"] == 1.0
    assert scores["ndcg@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_nothing_in_the_top_ten_scores_zero():
    scores = score_ranking(ranked(*["x"] * 10, "answer"), [Target(evidence="answer")])
    assert set(scores.values()) == {0.0}
    assert set(score_ranking([], [Target(evidence="answer")]).values()) == {0.0}


def test_evidence_ignores_whitespace_and_case():
    target = Target(evidence="Bits 15:8 of the Host Control Register")
    assert matches(Hit(text="bits 15:8 of the\nHost  Control Register hold"), target)
    assert not matches(Hit(text="bits 15:8 of the Clock Control Register"), target)
    # CJK text extracted with spaces between characters, and full-width forms.
    assert matches(Hit(text="每月 100 元"), Target(evidence="每月100元"))
    assert matches(Hit(text="Ｂｉｔｓ 2:1"), Target(evidence="bits 2:1"))


def test_every_evidence_part_must_be_in_one_chunk():
    target = Target(evidence=["DMA Select", "0b00"])
    assert matches(Hit(text="| 7:6 | DMA Select | RW | 0b00 |"), target)
    assert matches(Hit(text="Bits: 7:6 - Field: DMA Select - Reset: 0b00"), target)
    assert not matches(Hit(text="| 7:6 | DMA Select | RW |"), target)


def test_doc_by_id_path_or_file_name_and_page_within_the_chunk():
    hit = Hit(doc_id="corpus--a.pdf-1234", source_path="corpus/a.pdf", page_start=3, page_end=5)
    for doc in ("corpus--a.pdf-1234", "corpus/a.pdf", "a.pdf"):
        assert matches(hit, Target(doc=doc))
    assert not matches(hit, Target(doc="b.pdf"))
    assert matches(hit, Target(doc="a.pdf", page=4))
    assert not matches(hit, Target(doc="a.pdf", page=6))
    assert not matches(Hit(source_path="a.md"), Target(doc="a.md", page=1))  # no pages
    assert not matches(hit, Target(doc="a.pdf", page=4, evidence="missing"))


def test_a_target_needs_something_to_match():
    with pytest.raises(ValueError):
        Target()
    with pytest.raises(ValueError):
        Target(page=3)


def test_slices_average_their_questions():
    def outcome(slices: list[str], mrr: float, reachable: bool = True) -> QuestionOutcome:
        question = EvalQuestion(id="q", question="?", targets=[Target(doc="a")])
        scores = {m: mrr for m in METRICS}
        return QuestionOutcome(question, slices, reachable, scores)

    result = aggregate(
        [
            outcome(["all", "lang:en"], 1.0),
            outcome(["all", "lang:zh", "tag:table"], 0.5),
            outcome(["all", "lang:zh"], 0.0, reachable=False),
        ]
    )
    assert list(result) == ["all", "lang:en", "lang:zh", "tag:table"]
    assert result["all"].questions == 3 and result["all"].metrics["mrr@10"] == 0.5
    assert result["lang:zh"].metrics["mrr@10"] == 0.25
    assert result["lang:zh"].reachable == 0.5


def test_project_jsonl(tmp_path):
    lines = [
        {"id": "q1", "question": "What is TCV?", "tags": ["table"], "doc": "a.pdf", "page": 2},
        {"question": "每周最多几天？", "evidence": ["三天"]},
        {"id": "q3", "question": "Both?", "relevant": [{"doc": "a.pdf"}, {"evidence": "x"}]},
    ]
    (tmp_path / "set.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    (eval_set,) = load_eval_sets(tmp_path)
    q1, q2, q3 = eval_set.questions
    assert (q1.language, q1.tags, q1.targets) == ("en", ["table"], [Target(doc="a.pdf", page=2)])
    assert (q2.id, q2.language, q2.targets) == ("set-2", "zh", [Target(evidence=["三天"])])
    assert len(q3.targets) == 2 and eval_set.passages == []


def test_project_jsonl_without_relevance_names_the_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"id": "q1", "question": "?"}\n')
    (eval_set,) = load_eval_sets(tmp_path)
    assert eval_set.questions == []
    assert eval_set.problems == [
        f"{tmp_path}/bad.jsonl:1: targets.0: a relevance target needs a doc, a page or an evidence "
        "string; left out"
    ]


def test_a_bad_question_line_is_one_problem_and_the_rest_of_the_set_is_read(tmp_path):
    import tracemalloc

    good = {"question": "When is the seal replaced?", "doc": "a.pdf"}
    lines = [
        json.dumps({**good, "question": "seal " * 5_600_000}),  # 28 MB on one line
        json.dumps({**good, "question": "seal " * 1_000}),  # over the query bound
        "{not json",
        json.dumps({**good, "question": "seal\x1b[2J?"}),
        json.dumps(good),
    ]
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(lines) + "\n")
    tracemalloc.start()
    try:
        (eval_set,) = load_eval_sets(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20  # a few lines at the bound: the 28 MB line is never held whole
    assert [q.id for q in eval_set.questions] == ["set-5"]
    assert eval_set.problems == [
        f"{path}:1: the line is over 64,000 characters (a question may hold 4,000); left out",
        f"{path}:2: question: String should have at most 4000 characters; left out",
        f"{path}:3: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)); left out",
        f"{path}:4: question holds a control character; left out",
    ]


def test_squad_paragraphs_become_passages(tmp_path):
    data = {
        "data": [
            {
                "title": "Pumps",
                "paragraphs": [
                    {
                        "context": "Replace the seal every 4000 hours.",
                        "qas": [
                            {"id": "a", "question": "When is the seal replaced?"},
                            {"id": "b", "question": "Unanswerable?", "is_impossible": True},
                        ],
                    },
                    {"context": "其他段落。", "qas": [{"id": "c", "question": "什么？"}]},
                ],
            }
        ]
    }
    (tmp_path / "cmrc_dev.json").write_text(json.dumps(data, ensure_ascii=False))
    (eval_set,) = load_eval_sets(tmp_path)
    assert [q.id for q in eval_set.questions] == ["a", "c"]
    first, second = eval_set.passages
    assert eval_set.questions[0].targets == [Target(doc=first.doc_id)]
    assert eval_set.questions[1].language == "zh"
    doc = passage_document(first)
    assert (doc.doc_id, doc.title, doc.source_path) == (first.doc_id, "Pumps", first.doc_id)
    assert [e.type for e in doc.elements] == ["heading", "paragraph"]
    assert doc.markdown[doc.elements[1].start_char :].startswith("Replace the seal")


def test_beir_folder_maps_corpus_rows_to_documents_or_passages(tmp_path):
    folder = tmp_path / "mini-beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "reset time?", "metadata": {"tags": ["section"]}}\n'
        '{"_id": "q2", "text": "seal?"}\n{"_id": "q3", "text": "no qrels"}\n'
    )
    (folder / "corpus.jsonl").write_text(
        '{"_id": "c1", "text": "", "metadata": {"doc": "spec.pdf", "page": 4}}\n'
        '{"_id": "c2", "title": "Pumps", "text": "Replace the seal."}\n'
        '{"_id": "c3", "text": "", "evidence": "10 ms"}\n'
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\tc1\t1\nq1\tc3\t1\nq2\tc2\t1\nq2\tc1\t0\n"
    )
    (eval_set,) = load_eval_sets(tmp_path)
    q1, q2 = eval_set.questions
    assert q1.tags == ["section"]
    assert q1.targets == [Target(doc="spec.pdf", page=4), Target(evidence="10 ms")]
    (passage,) = eval_set.passages
    assert passage.doc_id == "mini-beir-c2" and q2.targets == [Target(doc="mini-beir-c2")]


def test_single_retriever_runs_weigh_one_retriever_whatever_the_language():
    fusion = FusionSettings(bm25_weight=0.5, foreign_model_weight=0.0)
    for language in ("en", "zh"):
        bm25 = fusion_weights(mode_fusion(fusion, "bm25"), language, ("en",), True)
        assert bm25 == {"bm25": 1.0}
        dense = fusion_weights(mode_fusion(fusion, "dense"), language, ("en",), False)
        assert dense == {"dense": 1.0}
    # A learned sparse head is dropped where the model covers the query's language.
    assert fusion_weights(mode_fusion(fusion, "dense"), "en", ("en",), True) == {"dense": 1.0}
    # One retriever alone: no ranking of the question's identifiers reorders its candidates.
    assert {mode_fusion(fusion, m).identifier_weight for m in ("bm25", "dense")} == {0.0}
    assert mode_fusion(fusion, "hybrid") is fusion
    assert run_specs(["fixed", "auto"], "semantic") == [
        RunSpec("fixed"),
        RunSpec("auto"),
        RunSpec("semantic", "bm25"),
        RunSpec("semantic", "dense"),
    ]
    assert [r.name for r in run_specs(["fixed"], "fixed")] == ["fixed", "fixed:bm25", "fixed:dense"]


@pytest.mark.slow
def test_questions_are_encoded_once_and_handed_out_by_text():
    embedder = load_embedder(EmbeddingSpec())
    questions = ["How long does a reset take?", "每周最多几天？", "How long does a reset take?"]
    encoded = EncodedQueries(embedder, questions)
    assert (encoded.name, encoded.languages) == (embedder.name, embedder.languages)
    batch = encoded.encode_queries(["每周最多几天？"])
    direct = embedder.encode_queries(["每周最多几天？"])
    assert batch.dense.shape == (1, embedder.dimension)
    assert np.allclose(batch.dense, direct.dense, atol=1e-5)
    # A text the search asks for besides (a question with its statement's names) is encoded
    # when first asked for, in the order asked.
    extra = "How long does a reset take?\nreset timing"
    batch = encoded.encode_queries([extra, "每周最多几天？"])
    direct = embedder.encode_queries([extra, "每周最多几天？"])
    assert np.allclose(batch.dense, direct.dense, atol=1e-5)


def test_evaluation_sets_do_not_follow_links_out_of_their_folder(tmp_path):
    from rag_assets.retrieval.evaluation.sets import load_eval_sets

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text('{"question": "canary-outside", "doc": "d"}\n')
    (outside / "beir").mkdir()
    (outside / "beir" / "queries.jsonl").write_text('{"_id": "1", "text": "canary"}\n')
    folder = tmp_path / "eval"
    folder.mkdir()
    (folder / "own.jsonl").write_text('{"question": "inside", "doc": "d"}\n')
    assert [s.name for s in load_eval_sets(folder)] == ["own"]
    for link, target in (("linked.jsonl", "secret.jsonl"), ("beir", "beir")):
        (folder / link).symlink_to(outside / target)
        with pytest.raises(ConfigurationError, match="leading outside"):
            load_eval_sets(folder)
        (folder / link).unlink()
    beir = folder / "mine"
    beir.mkdir()
    (beir / "queries.jsonl").symlink_to(outside / "beir" / "queries.jsonl")
    with pytest.raises(ConfigurationError, match="leading outside"):
        load_eval_sets(folder)
