"""Shared test fixtures: the real documents in ../shared/fixtures and temp data dirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from rag_assets.embedding.models import Embedder, EmbeddingSpec, load_embedder

# Property tests: reproducible in CI (the same examples every run, nothing remembered between
# runs), about a minute on two cores; `--hypothesis-profile soak` explores at random, longer.
settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=10_000,  # ms; the first example also loads the word list and templates
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("soak", max_examples=2000, deadline=None)
settings.load_profile("ci")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"
SHARED_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
SHARED_FINANCEBENCH = REPO_ROOT.parent / "shared" / "financebench-dev"


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The bundled embedding model (loaded once: load_embedder keeps it)."""
    return load_embedder(EmbeddingSpec())


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The real documents written by others; in CI they must be there."""
    return _shared(SHARED_FIXTURES)


@pytest.fixture(scope="session")
def shared_corpus() -> Path:
    """576 real files from public test suites, listed in its MANIFEST.tsv."""
    return _shared(SHARED_CORPUS)


@pytest.fixture(scope="session")
def shared_filings() -> Path:
    """The 14 SEC filings of the FinanceBench development set (`pdfs/`)."""
    return _shared(SHARED_FINANCEBENCH) / "pdfs"


def _shared(folder: Path) -> Path:
    if not folder.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{folder} is missing; CI runs with shared/ beside the checkout")
        pytest.skip(f"{folder} is absent (it sits beside the checkout in CI)")
    return folder


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the snapshots under rag_assets_tests/golden/ instead of comparing with them",
    )


@pytest.fixture(scope="session")
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
