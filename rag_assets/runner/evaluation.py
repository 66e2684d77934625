"""An evaluation run from the CLI: the code location's evaluation job, in this process."""

from __future__ import annotations

import uuid

from dagster import ExecuteInProcessResult

from rag_assets.defs.assets.evaluation import EVALUATION
from rag_assets.defs.build import build_defs
from rag_assets.defs.jobs import EVALUATION_JOB
from rag_assets.instance import open_instance
from rag_assets.retrieval.evaluation.comparison import Comparison
from rag_assets.runner.progress import RunProgress, watch_run
from rag_assets.settings import Settings


def evaluate(
    settings: Settings,
    templates: list[str] | None = None,
    instance=None,
    log_level: str = "WARNING",
    progress: RunProgress | None = None,
) -> ExecuteInProcessResult:
    """Materialize retrieval_evaluation on the instance under the data dir (the CLI's path);
    `progress` hears the run's progress lines (templates evaluated, chunks embedded)."""
    job = build_defs(settings).resolve_job_def(EVALUATION_JOB)
    config = {"templates": templates} if templates else {}
    instance = instance or open_instance(settings)
    run_id = str(uuid.uuid4())  # known before the run starts, to listen to it
    watch_run(instance, run_id, progress or RunProgress())
    return job.execute_in_process(
        instance=instance,
        run_id=run_id,
        raise_on_error=False,
        run_config={
            "ops": {EVALUATION: {"config": config}},
            "loggers": {"console": {"config": {"log_level": log_level}}},
        },
    )


def comparison_of(result: ExecuteInProcessResult) -> Comparison | None:
    """The comparison the run materialized; None when it failed or skipped (no question)."""
    if not result.success or not result.get_asset_materialization_events():
        return None
    return result.output_for_node(EVALUATION, EVALUATION)


def skip_reason(result: ExecuteInProcessResult) -> str | None:
    """Why a successful run materialized nothing (no evaluation question), as it logged it."""
    for observation in result.asset_observations_for_node(EVALUATION):
        if "skipped" in observation.metadata:
            return str(observation.metadata["skipped"].value)
    return None
