"""Two runs of one document at once, on an instance configured by the repository's dagster.yaml."""

import subprocess
import sys

import pytest
from dagster import DagsterInstance
from dagster._core.instance.config import dagster_instance_config

from rag_assets.index.store import MilvusIndex
from rag_assets.instance import REPO_INSTANCE_YAML, ensure_dagster_home
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.storage import read_chunks

pytestmark = pytest.mark.slow


def test_the_instance_serializes_runs_of_one_document_and_pools_writers():
    config, _ = dagster_instance_config(str(REPO_INSTANCE_YAML.parent), REPO_INSTANCE_YAML.name)
    (limit,) = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert limit["key"] == "dagster/partition" and limit["limit"] == 1
    assert limit["value"] == {"applyLimitPerUniqueValue": True}
    assert config["concurrency"]["pools"]["default_limit"] == 1


RUN_ONE = """
import sys
from dagster import DagsterEventType, DagsterInstance
from rag_assets.defs.build import build_defs
from rag_assets.settings import Settings

settings = Settings(data_dir=sys.argv[1])
instance = DagsterInstance.from_config(str(settings.dagster_home))
result = build_defs(settings).resolve_job_def("ingest_documents").execute_in_process(
    partition_key=sys.argv[2], instance=instance, raise_on_error=False
)
stamps = {
    e.dagster_event.event_type_value: e.timestamp
    for e in instance.all_logs(
        result.run_id, of_type={DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS}
    )
    if e.step_key == "vector_index"
}
print(result.success, stamps["STEP_START"], stamps["STEP_SUCCESS"])
"""


def test_two_runs_of_one_document_at_once_end_consistent(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    instance = DagsterInstance.from_config(str(ensure_dagster_home(settings)))
    source = tmp_path / "pumps.md"
    source.write_text(
        "# Pumps\n\n## Priming\n\nPrime the pump before the first start.\n\n"
        "## Seals\n\nReplace the seal every 4000 hours.\n"
    )
    (first,) = ingest(settings, [source], instance=instance)
    assert first.success, first.summary()
    chunk_ids = [c.chunk_id for c in read_chunks(settings, first.doc_id)]

    # Two run workers at once, as two launched runs would be: separate processes, one instance.
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", RUN_ONE, str(settings.data_dir), first.doc_id],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [w.communicate(timeout=600)[0].split() for w in workers]
    assert [o[0] for o in outputs] == ["True", "True"]
    # The "milvus" pool (limit 1) let one vector_index step at a time hold the Lite file.
    (a_start, a_end), (b_start, b_end) = ((float(o[1]), float(o[2])) for o in outputs)
    assert a_end <= b_start or b_end <= a_start
    assert [c.chunk_id for c in read_chunks(settings, first.doc_id)] == chunk_ids
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        (collection,) = index.list_collections()
        assert index.count_document(collection, first.doc_id) == len(chunk_ids)
