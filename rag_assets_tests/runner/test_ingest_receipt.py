"""An unchanged re-ingest: its receipt replayed without Dagster, void once anything changed."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from dagster import AssetObservation, DagsterEventType
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from rag_assets.cli import main
from rag_assets.instance import open_instance
from rag_assets.runner.ingest import ingest
from rag_assets.runner.receipt import replay
from rag_assets.settings import Settings
from rag_assets_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

# What an unchanged re-ingest has no use for: the models, parsers and index client; and what
# its receipt spares besides (Dagster's definitions and storage, Parquet).
HEAVY = {"torch", "FlagEmbedding", "pymilvus", "docling", "unstructured", "fitz", "pymupdf"}
HEAVY |= {"onnxruntime", "transformers"}
DAGSTER = {"dagster", "sqlalchemy", "pyarrow"}


def cli_ingest(data, *paths) -> tuple[list[str], set[str]]:
    """`rag-assets ingest` in a fresh process: its lines, and the top-level modules it imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rag_assets.cli", "ingest", "--data-dir"]
        + [str(data), *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    imported = re.findall(r"^import time:.*\|\s*([\w.]+)$", done.stderr, re.M)
    return done.stdout.splitlines(), {name.split(".")[0] for name in imported}


def test_an_unchanged_reingest_imports_no_model_and_its_receipt_no_dagster(tmp_path, capsys):
    data = tmp_path / "data"
    guide = tmp_path / "pumps.md"
    guide.write_text("# Pumps\n\n## Priming\n\nPrime the pump before the first start.\n")
    assert main(["ingest", "--data-dir", str(data), str(guide)]) == 0
    capsys.readouterr()

    replayed, imported = cli_ingest(data, guide)
    assert replayed[0].endswith("unchanged") and replayed[1] == "1 of 1 documents indexed"
    assert not imported & (HEAVY | DAGSTER), imported & (HEAVY | DAGSTER)

    # Without the receipt Dagster's stale status decides, with the same lines and no model.
    Settings(data_dir=data).receipt_path.unlink()
    decided, imported = cli_ingest(data, guide)
    assert decided == replayed
    assert "dagster" in imported and not imported & HEAVY, imported & HEAVY
    assert Settings(data_dir=data).receipt_path.is_file()


def test_the_receipt_an_ingest_leaves_after_its_runs_says_what_dagster_says_next(tmp_path):
    """The receipt written after runs holds the runs' outcomes as the instance reads them: the
    same lines, in the same order, as the next ingest decided by Dagster's stale status."""
    settings = Settings(data_dir=tmp_path / "data")
    files = [tmp_path / "valves.md", tmp_path / "pumps.md"]
    files[0].write_text("# Valves\n\nClose the valve slowly.\n")
    files[1].write_text("# Pumps\n\n## Priming\n\nPrime the pump before the first start.\n")
    first = ingest(settings, files)
    assert all(o.success and o.ran for o in first)
    left = replay(settings, files)
    settings.receipt_path.unlink()
    decided = ingest(settings, files)
    assert not any(o.ran for o in decided)
    assert left == decided
    assert [o.summary() for o in left] == [o.summary() for o in decided]


def test_the_receipt_is_void_once_anything_it_was_read_from_changes(tmp_path, monkeypatch):
    settings = Settings(data_dir=tmp_path / "data")
    guide = tmp_path / "pumps.md"
    guide.write_text("# Pumps\n\n## Priming\n\nPrime the pump before the first start.\n")
    (first,) = ingest(settings, [guide])
    assert first.success and first.ran
    (again,) = ingest(settings, [guide])  # decided by Dagster: nothing ran
    (replayed,) = replay(settings, [guide])
    assert replayed == again and replayed.summary().endswith("unchanged")

    # The same paths only, with the same settings and environment.
    assert replay(settings, [guide, guide.parent]) is None
    assert replay(settings.model_copy(update={"force_template": "fixed"}), [guide]) is None
    monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "another-model")
    assert replay(settings, [guide]) is None
    monkeypatch.delenv("RAG_ASSETS_LLM_MODEL")
    assert replay(settings, [guide]) == [replayed]

    # Anything written to the instance: here the UI's "Observe" of an unchanged file.
    instance = open_instance(settings)
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        AssetObservation("inbox_files").asset_key,
        DagsterEventType.ASSET_OBSERVATION,
        [DATA_VERSION_TAG],
        [first.doc_id],
    )[first.doc_id]
    instance.report_runless_asset_event(
        AssetObservation("inbox_files", partition=first.doc_id, tags=tags)
    )
    assert replay(settings, [guide]) is None
    assert ingest(settings, [guide]) == [replayed]  # still unchanged; a new receipt
    assert replay(settings, [guide]) == [replayed]

    # An edited file: placed in the inbox, it voids the receipt and its document runs again.
    guide.write_text("# Pumps\n\n## Priming\n\nPrime the pump twice before the first start.\n")
    assert replay(settings, [guide]) is None
    (changed,) = ingest(settings, [guide])
    assert changed.success and changed.ran
