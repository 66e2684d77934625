"""Fixtures shared by the search tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rag_assets.cli import main
from rag_assets.settings import Settings


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A data folder of the test module's own (a module indexing one overrides it)."""
    return Settings(data_dir=tmp_path_factory.mktemp("data"))


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
