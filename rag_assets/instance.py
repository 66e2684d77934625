"""The Dagster instance under the data dir, shared by the CLI and `rag-assets ui`."""

from __future__ import annotations

import shutil
from pathlib import Path

from rag_assets.settings import Settings

# The repository's instance config (queued runs, pools); absent in a non-editable install.
REPO_INSTANCE_YAML = Path(__file__).resolve().parents[1] / "dagster.yaml"


def ensure_dagster_home(settings: Settings) -> Path:
    home = settings.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.exists() and REPO_INSTANCE_YAML.is_file():
        shutil.copyfile(REPO_INSTANCE_YAML, target)
    return home


def open_instance(settings: Settings):
    from dagster import DagsterInstance

    return DagsterInstance.from_config(str(ensure_dagster_home(settings)))
