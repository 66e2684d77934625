"""With no evaluation set, retrieval_evaluation skips (not fails) and its schedule does not start
it; ingesting the sample corpus puts the sample set where the evaluation reads sets."""

from __future__ import annotations

import json
import shutil

import pytest
from dagster import build_schedule_context

from rag_assets.cli import main
from rag_assets.defs.assets.evaluation import EVALUATION, FLOORS_CHECK
from rag_assets.defs.build import build_defs
from rag_assets.defs.dagster_private import AssetCheckExecutionRecordStatus
from rag_assets.instance import open_instance
from rag_assets.runner.evaluation import comparison_of, evaluate, skip_reason
from rag_assets.runner.sample import PLACED_NAME, SAMPLE_CORPUS, SAMPLE_SET, place_sample_evaluation
from rag_assets.settings import Settings


def _schedule_tick(settings: Settings, instance):
    defs = build_defs(settings)
    # Closed here: the context opens its own instance from the ref, which would otherwise stay
    # Dagster's current one after the test (a later test then loads definitions against it).
    with build_schedule_context(
        instance=instance, resources=defs.resources, repository_def=defs.get_repository_def()
    ) as context:
        return defs.get_schedule_def("evaluation_schedule").evaluate_tick(context)


@pytest.mark.slow
def test_no_evaluation_set_skips_the_asset_and_its_check_with_one_line(tmp_path, capsys):
    settings = Settings(data_dir=tmp_path / "data")
    instance = open_instance(settings)
    result = evaluate(settings, instance=instance)

    # The run succeeds without a materialization: Dagster shows the step's asset and check
    # skipped, not failed.
    assert result.success and comparison_of(result) is None
    assert not result.get_asset_materialization_events()
    reason = skip_reason(result)
    assert (
        reason
        == f"no evaluation questions under {settings.evaluation_dir} (see docs/evaluation.md)"
    )
    assert not [e for e in result.all_events if e.is_step_failure]
    assert instance.get_run_by_id(result.run_id).is_success
    logged = [
        record.user_message
        for record in instance.all_logs(result.run_id)
        if record.user_message.startswith("skipped: ")
    ]
    assert logged == [f"skipped: {reason}"] and "\n" not in logged[0]
    (record,) = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [next(iter(build_defs(settings).get_assets_def(EVALUATION).check_keys))]
    ).values()
    # Planned and never evaluated in a run that succeeded: Dagster resolves it as SKIPPED.
    assert record.key.name == FLOORS_CHECK
    assert record.status == AssetCheckExecutionRecordStatus.PLANNED
    assert record.run_id == result.run_id

    # The CLI says the same on one line.
    assert main(["evaluate", "--data-dir", str(settings.data_dir)]) == 1
    assert capsys.readouterr().err == f"rag-assets evaluate: skipped: {reason}\n"


@pytest.mark.slow
def test_the_schedule_skips_while_there_is_no_set_and_runs_once_there_is(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    instance = open_instance(settings)
    tick = _schedule_tick(settings, instance)
    assert not tick.run_requests
    assert tick.skip_message == (
        f"no evaluation questions under {settings.evaluation_dir} (see docs/evaluation.md)"
    )

    settings.evaluation_dir.mkdir(parents=True)
    shutil.copyfile(SAMPLE_SET, settings.evaluation_dir / "mine.jsonl")
    (request,) = _schedule_tick(settings, instance).run_requests
    assert request.job_name in (None, "evaluate_retrieval")


def test_the_sample_set_is_placed_for_the_sample_corpus_only_and_never_over_a_users(tmp_path):
    eval_dir = tmp_path / "eval"
    assert place_sample_evaluation(eval_dir, [tmp_path / "elsewhere"]) is None
    assert not eval_dir.exists()

    placed = place_sample_evaluation(eval_dir, [SAMPLE_CORPUS])
    assert placed == eval_dir / PLACED_NAME
    assert placed.read_bytes() == SAMPLE_SET.read_bytes()
    # One file of the corpus is the corpus too; a set already there is left alone.
    placed.write_text(json.dumps({"id": "mine", "question": "q?", "doc": "a.md"}) + "\n")
    assert place_sample_evaluation(eval_dir, [SAMPLE_CORPUS / "operator-guide.md"]) is None
    assert json.loads(placed.read_text())["id"] == "mine"

    other = tmp_path / "other-eval"
    other.mkdir()
    (other / "users.jsonl").write_text("")
    assert place_sample_evaluation(other, [SAMPLE_CORPUS]) is None
    assert [p.name for p in other.iterdir()] == ["users.jsonl"]


@pytest.mark.slow
def test_ingest_of_the_sample_corpus_puts_the_set_in_place(tmp_path, capsys):
    data_dir = tmp_path / "data"
    assert (
        main(["ingest", "--data-dir", str(data_dir), str(SAMPLE_CORPUS / "operator-guide.md")]) == 0
    )
    settings = Settings(data_dir=data_dir)
    placed = settings.evaluation_dir / PLACED_NAME
    assert placed.read_bytes() == SAMPLE_SET.read_bytes()
    assert f"the sample corpus's evaluation set is in place: {placed}" in capsys.readouterr().out
    # Now the schedule starts the evaluation.
    assert _schedule_tick(settings, open_instance(settings)).run_requests
