"""`rag-assets ingest` runs are runs of the code location's job, as the UI's webserver sees them."""

from __future__ import annotations

import pytest
from dagster import AssetKey
from dagster._core.definitions.selector import JobSubsetSelector
from dagster._core.storage.tags import REPOSITORY_LABEL_TAG
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster_graphql.test.utils import execute_dagster_graphql

from rag_assets.cli import main
from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.jobs import INGEST_JOB, LAUNCHED_BY_TAG
from rag_assets.defs.landing import split_parts
from rag_assets.instance import open_instance
from rag_assets.runner.ingest import WORKSPACE_YAML
from rag_assets.settings import Settings

pytestmark = pytest.mark.slow

LOCATION = "rag_assets"
REPOSITORY = "__repository__"

# The job page's Runs tab (runs of this job in this repository) and the Overview timeline
# (every run, placed on its job's row by its repository origin). A run names its steps, as the
# inbox sensor's do: its snapshot is the job's subset for them, the job's own is its parent.
JOB_RUNS = """
query ($selector: PipelineSelector!, $labelTag: String!, $label: String!, $job: String!) {
  pipelineOrError(params: $selector) { ... on Pipeline { runs { runId } } }
  runsOrError(filter: {pipelineName: $job, tags: [{key: $labelTag, value: $label}]}) {
    ... on Runs {
      results {
        runId pipelineSnapshotId parentPipelineSnapshotId assetSelection { path }
        repositoryOrigin { repositoryName repositoryLocationName }
      }
    }
  }
}
"""


def test_a_cli_ingest_run_is_a_run_of_the_code_locations_job(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    monkeypatch.setenv("RAG_ASSETS_DATA_DIR", str(data))  # what `rag-assets ui` gives the UI
    guide = tmp_path / "pumps.md"
    guide.write_text("# Pumps\n\n## Priming\n\nPrime the pump before the first start.\n")
    note = tmp_path / "valves.md"
    note.write_text("# Valves\n\n" + "Test each relief valve monthly. " * 60)
    assert main(["ingest", str(guide)]) == 0, capsys.readouterr().out
    # A flag reaches the run as run config: the job, and its snapshot, stay the code location's.
    assert main(["ingest", "--template", "fixed", str(note)]) == 0
    assert "valves.md  parser=docling template=fixed" in capsys.readouterr().out
    instance = open_instance(Settings.from_env())
    runs = instance.get_runs()
    assert len(runs) == 4  # each document's landing part, then its checked part
    label = f"{REPOSITORY}@{LOCATION}"

    target = WorkspaceFileTarget(paths=[str(WORKSPACE_YAML)])
    with WorkspaceProcessContext(instance, target) as process:
        context = process.create_request_context()
        location = context.get_code_location(LOCATION)
        job = location.get_repository(REPOSITORY).get_full_job(INGEST_JOB)
        # What the daemon creates for a request naming a part's steps: the job's subset.
        subsets = {
            frozenset(steps): location.get_job(
                JobSubsetSelector(LOCATION, REPOSITORY, INGEST_JOB, None, set(steps))
            ).computed_job_snapshot_id
            for steps in ({AssetKey(a) for a in part.assets} for part in split_parts(PIPELINE))
        }
        answer = execute_dagster_graphql(
            context,
            JOB_RUNS,
            {
                "selector": {
                    "pipelineName": INGEST_JOB,
                    "repositoryName": REPOSITORY,
                    "repositoryLocationName": LOCATION,
                },
                "labelTag": REPOSITORY_LABEL_TAG,
                "label": label,
                "job": INGEST_JOB,
            },
        )
    assert answer.errors is None, answer.errors
    run_ids = {r.run_id for r in runs}
    assert {r["runId"] for r in answer.data["pipelineOrError"]["runs"]} == run_ids
    listed = answer.data["runsOrError"]["results"]
    assert {r["runId"] for r in listed} == run_ids
    for shown in listed:
        assert shown["repositoryOrigin"] == {
            "repositoryName": REPOSITORY,
            "repositoryLocationName": LOCATION,
        }
        # The snapshots the webserver computes from the code location.
        steps = frozenset(AssetKey(a["path"]) for a in shown["assetSelection"])
        assert shown["pipelineSnapshotId"] == subsets[steps]
        assert shown["parentPipelineSnapshotId"] == job.computed_job_snapshot_id
    served = job.get_python_origin()
    for run in runs:
        assert run.tags[LAUNCHED_BY_TAG] == "cli"  # not just "Manually launched"
        assert run.job_snapshot_id == subsets[frozenset(run.asset_selection)]
        # Where a run worker loads the job: the code location's module and its `defs`.
        ours = run.job_code_origin
        assert (ours.job_name, ours.executable_path) == (served.job_name, served.executable_path)
        pointers = ours.get_repo_pointer(), served.get_repo_pointer()
        assert len({(p.module, p.fn_name) for p in pointers}) == 1, pointers
