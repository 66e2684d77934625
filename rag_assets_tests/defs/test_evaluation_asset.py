"""retrieval_evaluation on a real Dagster instance, the bundled model and Milvus Lite; the CLI."""

import json
from types import SimpleNamespace

import pytest
from dagster import AssetKey, RunConfig, materialize

from rag_assets.cli import main
from rag_assets.defs.assets.evaluation import (
    RetrievalEvaluationConfig,
    floors_check,
    retrieval_evaluation,
)
from rag_assets.defs.build import build_defs
from rag_assets.index.store import MilvusIndex
from rag_assets.instance import open_instance
from rag_assets.retrieval.evaluation.comparison import Comparison
from rag_assets.runner.evaluation import comparison_of, evaluate
from rag_assets.runner.ingest import ingest
from rag_assets.runner.progress import RunProgress
from rag_assets.settings import Settings
from rag_assets.text.progress import CHUNKS_EMBEDDED, TEMPLATES_EVALUATED, ProgressLine

PUMP_GUIDE = """\
# Pump Guide

## Maintenance

Replace the impeller seal every 4000 operating hours.

## Safety

Always isolate the pump before opening the casing.
"""
POLICY_ZH = """\
# 远程办公办法

## 第一章 申请

员工每周远程办公不得超过三天。

## 第二章 补贴

网络补贴每月一百元。
"""
QUESTIONS = [
    {"id": "seal", "question": "How often is the impeller seal replaced?", "tags": ["section"],
     "doc": "pump-guide.md", "evidence": "every 4000 operating hours"},
    {"id": "safety", "question": "What must be done before opening the casing?",
     "doc": "pump-guide.md", "evidence": "isolate the pump"},
    {"id": "days", "question": "每周可以远程办公几天？", "language": "zh",
     "evidence": "不得超过三天"},
    {"id": "gone", "question": "Not ingested", "doc": "missing.pdf"},
]  # fmt: skip


def metadata_of(instance, asset: str) -> dict:
    record = instance.get_latest_materialization_event(AssetKey(asset))
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("evaluation")
    (root / "pump-guide.md").write_text(PUMP_GUIDE)
    (root / "policy-zh.md").write_text(POLICY_ZH, encoding="utf-8")
    eval_dir = root / "eval"
    eval_dir.mkdir()
    (eval_dir / "tiny.jsonl").write_text(
        "\n".join(json.dumps(q, ensure_ascii=False) for q in QUESTIONS), encoding="utf-8"
    )
    settings = Settings(data_dir=root / "data", eval_dir=eval_dir)
    outcomes = ingest(settings, [root / "pump-guide.md", root / "policy-zh.md"])
    assert all(o.success for o in outcomes), [o.summary() for o in outcomes]
    return SimpleNamespace(settings=settings, instance=open_instance(settings), root=root)


@pytest.mark.slow
def test_materialize_scores_templates_per_slice_and_checks_floors(corpus):
    floors = {"semantic/recall@10": 1.0, "fixed/mrr@10": 1.01, "spec/mrr@10": 0.1}
    result = materialize(
        [retrieval_evaluation],
        instance=corpus.instance,
        resources=build_defs(corpus.settings).resources,
        run_config=RunConfig(
            ops={
                "retrieval_evaluation": RetrievalEvaluationConfig(
                    templates=["fixed", "semantic"], floors=floors
                )
            }
        ),
    )
    assert result.success
    comparison = result.output_for_node("retrieval_evaluation", "retrieval_evaluation")
    assert isinstance(comparison, Comparison)
    assert [r.name for r in comparison.runs] == [
        "fixed",
        "semantic",
        "semantic:bm25",
        "semantic:dense",
    ]
    assert (comparison.documents, comparison.questions, comparison.skipped) == (2, 3, ["gone"])
    semantic = comparison.runs[1]
    assert semantic.templates_used == {"semantic": 2}
    assert set(semantic.slices) == {
        "all",
        "lang:en",
        "lang:zh",
        "tag:section",
        "type:text",
        "template:semantic",
    }
    # Two short documents: every chunk is within the top 10.
    assert semantic.slices["all"].metrics["recall@10"] == 1.0

    metadata = metadata_of(corpus.instance, "retrieval_evaluation")
    for key in ("fixed/mrr@10", "semantic/recall@1", "semantic:bm25/lang:zh/mrr@10"):
        assert isinstance(metadata[key], float) and 0.0 <= metadata[key] <= 1.0
    assert metadata["semantic/recall@10"] == 1.0
    assert "| all | 3 | semantic:dense |" in metadata["table"]
    assert metadata["questions"] == 3 and metadata["skipped_questions"] == ["gone"]
    stored = corpus.settings.data_dir / "assets" / "retrieval_evaluation.json"
    assert Comparison.model_validate_json(stored.read_text()) == comparison

    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "metrics_above_floors" and not check.passed
    assert "fixed/mrr@10" in check.description and "spec/mrr@10 not measured" in check.description
    assert "semantic/recall@10" not in check.description

    # Evaluation writes its own collections, never the product's.
    with MilvusIndex(corpus.settings.resolved_milvus_uri, collection_prefix="eval_fixed") as index:
        assert index.list_collections()
    with MilvusIndex(corpus.settings.resolved_milvus_uri) as index:
        (product,) = index.list_collections()
        assert product.startswith("rag_chunks__")


@pytest.mark.slow
def test_cli_prints_the_table(corpus, capsys):
    data = str(corpus.settings.data_dir)
    eval_dir = str(corpus.root / "eval")
    args = ["evaluate", "--data-dir", data, "--eval-dir", eval_dir, "--templates", "semantic"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "| slice | n | run | R@1 | R@5 | R@10 | MRR@10 | nDCG@10 | Doc@1 | reachable |" in out
    assert "| lang:zh | 1 | semantic:bm25 |" in out
    assert "3 questions over 2 documents, 1 skipped" in out
    (run,) = corpus.instance.get_runs(limit=1)  # recorded in the instance the UI reads
    assert run.job_name == "evaluate_retrieval" and run.is_success

    empty = corpus.root / "no-sets"
    empty.mkdir()
    args = ["evaluate", "--data-dir", data, "--eval-dir", str(empty)]
    assert main(args) == 1
    assert "no evaluation questions under" in capsys.readouterr().err

    (empty / "bad.jsonl").write_text('{"id": "q1", "question": "no relevance given"}\n')
    assert main(["evaluate", "--data-dir", data, "--eval-dir", str(empty)]) == 1
    assert "bad.jsonl:1" in capsys.readouterr().err
    args = ["evaluate", "--data-dir", data, "--eval-dir", eval_dir, "--templates", "nosuch"]
    assert main(args) == 1
    assert "unknown template 'nosuch'" in capsys.readouterr().err


class Recorded(RunProgress):
    def __init__(self) -> None:
        self.steps: list[ProgressLine] = []

    def measured(self, step: ProgressLine) -> None:
        self.steps.append(step)


@pytest.mark.slow
def test_an_evaluation_tells_its_progress_as_it_goes(corpus):
    recorded = Recorded()
    result = evaluate(
        corpus.settings,
        templates=["fixed", "semantic"],
        instance=corpus.instance,
        progress=recorded,
    )
    assert comparison_of(result) is not None
    templates = [s for s in recorded.steps if s.measure == TEMPLATES_EVALUATED]
    assert templates == [(TEMPLATES_EVALUATED, 1, 2), (TEMPLATES_EVALUATED, 2, 2)]
    embedded = [s for s in recorded.steps if s.measure == CHUNKS_EMBEDDED]
    assert len(embedded) == 2 and all(s.done == s.total > 0 for s in embedded)  # one per template


def test_floors_check_passes_at_the_floor_and_fails_below_or_unmeasured():
    metrics = {"auto/mrr@10": 0.5, "auto/recall@1": 0.4}
    assert floors_check(metrics, {"auto/mrr@10": 0.5}).passed
    assert floors_check(metrics, {}).passed
    below = floors_check(metrics, {"auto/mrr@10": 0.5, "auto/recall@1": 0.45})
    assert not below.passed and below.description == "below the floor: auto/recall@1 0.400 < 0.45"
    assert not floors_check(metrics, {"fixed/mrr@10": 0.0}).passed


def test_the_asset_is_unpartitioned_in_its_own_group_downstream_of_the_documents_and_index(
    tmp_path,
):
    graph = build_defs(Settings(data_dir=tmp_path)).resolve_asset_graph()
    node = graph.get(AssetKey("retrieval_evaluation"))
    assert node.partitions_def is None and node.group_name == "evaluation"
    assert {k.to_user_string() for k in node.parent_keys} == {
        "normalized_documents",
        "table_markdown",
        "vector_index",
        "embedding_settings",
        "index_settings",
    }
