"""An ingest runs a document as its landing part, then its checked part once that succeeded;
each document still has one outcome, whatever its runs did."""

from __future__ import annotations

import os
import signal

import pytest
from dagster import DagsterInstance

from rag_assets.defs.assets import CHECKED, PIPELINE
from rag_assets.defs.landing import PART_TAG
from rag_assets.runner import ingest as ingest_module
from rag_assets.runner.ingest import IngestInterrupted, ingest
from rag_assets.settings import Settings

pytestmark = pytest.mark.slow

LANDING = tuple(PIPELINE[: PIPELINE.index(CHECKED[0])])
GUIDE = "# Pumps\n\n" + "Prime the pump before the first start; check the seal monthly. " * 20


def _parts(instance: DagsterInstance, key: str) -> list[tuple[str, bool]]:
    """The document's runs, first first: their part and whether they succeeded."""
    runs = instance.get_runs()[::-1]
    return [
        (r.tags[PART_TAG], r.is_success) for r in runs if r.tags.get("dagster/partition") == key
    ]


def test_a_document_failing_before_its_checks_has_one_outcome_and_no_checked_run(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(GUIDE)
    (docs / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + b"damaged in transit\n" * 40)
    instance = DagsterInstance.ephemeral()
    outcomes = {
        o.source_path.split("/")[-1]: o
        for o in ingest(Settings(data_dir=tmp_path / "data"), [docs], instance=instance)
    }
    guide, corrupt = outcomes["guide.md"], outcomes["corrupt.pdf"]
    assert guide.success and guide.ran == tuple(PIPELINE), guide.summary()
    # The checks of both runs' steps counted once each, the parser from the first run.
    assert guide.checks_total == 10 and guide.parser and guide.template and guide.chunks > 0
    assert _parts(instance, guide.doc_id) == [("landing", True), ("checked", True)]
    assert not corrupt.success and corrupt.ran == LANDING
    assert "corrupt" in corrupt.error and corrupt.checks_total == 0
    assert _parts(instance, corrupt.doc_id) == [("landing", False)]

    # Only the checked steps stale (another template): one run of them.
    again = ingest(
        Settings(data_dir=tmp_path / "data", force_template="fixed"), [docs], instance=instance
    )
    (again,) = [o for o in again if o.doc_id == guide.doc_id]
    assert again.success and again.ran == tuple(CHECKED) and again.template.startswith("fixed")
    assert _parts(instance, guide.doc_id)[2:] == [("checked", True)]


def test_a_stop_after_the_landing_part_leaves_the_document_interrupted(tmp_path, monkeypatch):
    source = tmp_path / "guide.md"
    source.write_text(GUIDE)
    instance = DagsterInstance.ephemeral()
    execute = ingest_module._execute

    def stopped_after(*arguments):
        result = execute(*arguments)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as the landing run ends
        return result

    monkeypatch.setattr(ingest_module, "_execute", stopped_after)
    with pytest.raises(IngestInterrupted) as stopped:
        ingest(Settings(data_dir=tmp_path / "data"), [source], instance=instance)
    (outcome,) = stopped.value.outcomes
    assert outcome.stopped == "interrupted" and not outcome.success
    assert _parts(instance, outcome.doc_id) == [("landing", True)]
