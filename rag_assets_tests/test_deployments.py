"""Every instance config the project ships validates against Dagster's schema."""

import pytest
from dagster._core.instance.config import dagster_instance_config

from rag_assets_tests.conftest import REPO_ROOT

INSTANCE_FILES = [
    REPO_ROOT / "dagster.yaml",
    *sorted((REPO_ROOT / "deployments").rglob("dagster.yaml")),
]


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_instance_config_validates(path, monkeypatch):
    for name in ("DAGSTER_PG_HOST", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB"):
        monkeypatch.setenv(name, "placeholder")
    config, _ = dagster_instance_config(str(path.parent), path.name)
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert config["concurrency"]["runs"]["max_concurrent_runs"] >= 1


def test_there_is_more_than_the_local_instance():
    assert len(INSTANCE_FILES) >= 2
