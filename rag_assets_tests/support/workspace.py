"""The code location as the webserver loads it (`rag_assets.definitions` under a data folder),
in this process, and GraphQL sent to it as the UI sends it."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster_graphql.test.utils import execute_dagster_graphql

from rag_assets_tests.conftest import REPO_ROOT

LOCATION = "rag_assets"
REPOSITORY = "__repository__"
REPOSITORY_SELECTOR = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}


@contextmanager
def code_location(
    instance: DagsterInstance, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WorkspaceProcessContext]:
    monkeypatch.setenv("RAG_ASSETS_DATA_DIR", str(data_dir))
    import rag_assets.definitions

    importlib.reload(rag_assets.definitions)  # its defs are built at import, for this data dir
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(
            module_name="rag_assets.definitions", working_directory=str(REPO_ROOT)
        ),
        location_name=LOCATION,
    )
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget([origin])) as context:
        yield context


def graphql(
    context: WorkspaceProcessContext, query: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    result = execute_dagster_graphql(context.create_request_context(), query, variables)
    assert not result.errors, result.errors
    return result.data
