"""`rag-assets evaluate --pick-template`: the template with the best MRR@10 on a collection's
own questions becomes what `auto` chunks that collection with."""

from __future__ import annotations

import json

import pytest
import yaml

from rag_assets.errors import ConfigurationError
from rag_assets.retrieval.evaluation.comparison import Comparison, RunReport
from rag_assets.retrieval.evaluation.metrics import METRICS, SliceMetrics
from rag_assets.retrieval.evaluation.picks import MIN_QUESTIONS, best_template
from rag_assets.settings import Settings
from rag_assets.sources.template_picks import PICKS_FILE
from rag_assets.storage import read_chunks

TAG = "tag:collection:manuals"


def _run(template: str, mrr: float, questions: int = 12, mode: str = "hybrid") -> RunReport:
    name = template if mode == "hybrid" else f"{template}:{mode}"
    metrics = dict.fromkeys(METRICS, 0.5) | {"mrr@10": mrr}
    found = SliceMetrics(questions=questions, reachable=1.0, metrics=metrics)
    return RunReport(
        name=name, template=template, mode=mode, chunks=10, templates_used={},
        slices={"all": found, TAG: found},
    )  # fmt: skip


def _comparison(*runs: RunReport) -> Comparison:
    return Comparison(documents=2, questions=12, runs=list(runs))


def test_the_best_mrr_on_the_collections_questions_is_picked_and_a_tie_keeps_auto() -> None:
    pick = best_template(
        _comparison(_run("auto", 0.5), _run("spec", 0.7), _run("spec", 0.9, mode="bm25")),
        "manuals",
    )
    # A retriever alone is no way the product searches: its score is not compared.
    assert (pick.template, pick.mrr, pick.scores) == ("spec", 0.7, {"auto": 0.5, "spec": 0.7})
    assert (pick.questions, pick.question_set) == (12, TAG)
    tie = best_template(_comparison(_run("fixed", 0.7), _run("auto", 0.7)), "manuals")
    assert tie.template == "auto"


def test_a_pick_needs_the_collections_questions_and_enough_of_them() -> None:
    with pytest.raises(ConfigurationError, match="--generate --collection specs"):
        best_template(_comparison(_run("auto", 0.5)), "specs")
    few = _comparison(_run("auto", 0.5, questions=MIN_QUESTIONS - 1))
    with pytest.raises(ConfigurationError, match=f"only {MIN_QUESTIONS - 1} questions"):
        best_template(few, "manuals")


GUIDE = """# {name} guide

## Installation

Mount the {name} unit on a level base and anchor it with four M12 bolts.

## Start-up

Open the suction valve fully before starting the {name} unit; never run it dry.

## Maintenance

Grease the {name} bearings every 2,000 hours and check the coupling yearly.

## Parts

| Part | Number |
|---|---|
| {name} seal | {code}-114 |
| {name} bearing | {code}-220 |
| {name} coupling | {code}-330 |
"""


@pytest.mark.slow
def test_evaluate_picks_a_template_and_the_next_ingest_chunks_the_collection_with_it(
    tmp_path, capsys
) -> None:
    from rag_assets.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, code in (("pump", "PU"), ("fan", "FA"), ("valve", "VA")):
        (docs / f"{name}.md").write_text(GUIDE.format(name=name.title(), code=code))
    data = tmp_path / "data"
    data.mkdir()
    (data / "rag_collections.yaml").write_text(
        yaml.safe_dump({"collections": [{"name": "manuals", "match": ["*.md"]}]})
    )
    args = ["--data-dir", str(data)]
    assert main(["ingest", *args, str(docs)]) == 0
    settings = Settings.from_env(data)
    before = {c.template for p in settings.inbox_dir.rglob("*.md") for c in _chunks(settings, p)}
    assert main(["evaluate", "--generate", "--no-llm", "--collection", "manuals", *args]) == 0
    capsys.readouterr()
    # Two templates that are not `auto`: one of them is picked.
    compared = ["--templates", "fixed", "semantic"]
    assert main(["evaluate", "--pick-template", "--collection", "manuals", *compared, *args]) == 0
    said = capsys.readouterr().out
    picks = json.loads((data / PICKS_FILE).read_text())
    picked = picks["manuals"]["template"]
    scores = picks["manuals"]["scores"]
    assert set(scores) == {"fixed", "semantic"} and scores[picked] == max(scores.values())
    assert f"picked {picked}; the next ingest re-chunks" in said
    assert main(["ingest", *args, str(docs)]) == 0
    after = {c.template for p in settings.inbox_dir.rglob("*.md") for c in _chunks(settings, p)}
    assert after == {picked} and (picked == "fixed" or before != after)
    # Without the collection's questions, no pick is made.
    assert main(["evaluate", "--pick-template", "--collection", "other", *compared, *args]) == 2
    assert "no evaluation question is tagged 'collection:other'" in capsys.readouterr().err


def _chunks(settings: Settings, path):
    from rag_assets.sources.keys import partition_key_for

    relative = path.relative_to(settings.inbox_dir).as_posix()
    return read_chunks(settings, partition_key_for(relative))
