"""What the UI shows of an ingest names its files: every step's metadata names the document's
file, its size and pages, and each run names the files it holds; the process tags recovery
reads stay out of sight."""

from __future__ import annotations

import pytest
from dagster import AssetKey, AssetRecordsFilter

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.landing import DOCUMENTS_TAG
from rag_assets.defs.metadata import SOURCE_LABELS
from rag_assets.defs.recovery import HOST_TAG, PID_TAG
from rag_assets.instance import open_instance
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings

pytestmark = pytest.mark.slow

NAMES = ["a-pumps.md", "b-valves.md", "c-seals.md"]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    root = tmp_path_factory.mktemp("labels")
    folder = root / "notes"
    folder.mkdir()
    for name in NAMES:
        (folder / name).write_text(f"# {name}\n\n## Service\n\nService the {name} yearly.\n")
    settings = Settings(data_dir=root / "data")
    outcomes = ingest(settings, [folder])
    assert all(o.success for o in outcomes), [o.summary() for o in outcomes]
    return open_instance(settings), {o.doc_id: o for o in outcomes}


def test_every_steps_metadata_names_the_documents_file(ingested):
    instance, outcomes = ingested
    for asset in PIPELINE:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=list(outcomes)), 10
        ).records
        assert len(records) == len(outcomes), asset
        for record in records:
            made = record.asset_materialization
            source = {label: made.metadata[label].value for label in SOURCE_LABELS}
            outcome = outcomes[made.partition]
            assert source["source_path"] == outcome.source_path, asset
            assert source["size_bytes"] > 0 and source["page_count"] == 0, (asset, source)


def test_runs_name_their_files_and_hide_their_process(ingested):
    instance, _ = ingested
    runs = instance.get_runs()
    assert {r.tags[DOCUMENTS_TAG] for r in runs} == {
        "notes/a-pumps.md … notes/c-seals.md (3 documents)"
    }
    for run in runs:
        assert run.tags[PID_TAG].isdigit() and run.tags[HOST_TAG]  # what recovery reads
        # Dagster's GraphQL, and so its UI, leaves out tags under `.dagster/`.
        shown = [key for key in run.tags if not key.startswith(".dagster/")]
        assert not [key for key in shown if "pid" in key or "host" in key], shown
