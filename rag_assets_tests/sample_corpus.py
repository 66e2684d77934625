"""The sample corpus (examples/corpus) ingested once per test session through the project's ingest.

Test modules that answer questions about it share one data folder: the ingest (parse, chunk,
embed, index three documents) is the slow part, so it runs for the first module that asks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance

from rag_assets.defs.ingest import ingest
from rag_assets.settings import Settings

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
DOCUMENTS = ("host-controller-spec.pdf", "operator-guide.md", "travel-policy.docx")


def ingested_sample(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.getbasetemp() / "sample-corpus"
    settings = Settings(data_dir=root / "data", template="auto")
    done = root / "ingested"
    if not done.exists():
        outcomes = ingest(
            settings, [CORPUS / name for name in DOCUMENTS], instance=DagsterInstance.ephemeral()
        )
        assert [o.summary() for o in outcomes if not o.success] == []
        done.touch()
    return settings
