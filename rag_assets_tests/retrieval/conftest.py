"""Fixtures shared by the search tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rag_assets.cli import main


@pytest.fixture
def query_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., str]:
    """`rag-assets query ARGS...` on a data folder's own Milvus Lite file: what it prints,
    once it has exited 0."""
    monkeypatch.delenv("RAG_ASSETS_MILVUS_URI", raising=False)

    def run(data_dir: Path, *args: str) -> str:
        assert main(["query", "--data-dir", str(data_dir), *args]) == 0
        return capsys.readouterr().out

    return run
