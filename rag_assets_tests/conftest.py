"""Shared test fixtures: the real documents in ../shared/fixtures and temp data dirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"
SHARED_CORPUS = REPO_ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The real documents written by others; in CI they must be there."""
    return _shared(SHARED_FIXTURES)


@pytest.fixture(scope="session")
def shared_corpus() -> Path:
    """576 real files from public test suites, listed in its MANIFEST.tsv."""
    return _shared(SHARED_CORPUS)


def _shared(folder: Path) -> Path:
    if not folder.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{folder} is missing; CI runs with shared/ beside the checkout")
        pytest.skip(f"{folder} is absent (it sits beside the checkout in CI)")
    return folder
