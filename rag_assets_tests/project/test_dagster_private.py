"""Dagster's private APIs are reached from one module only, and each one it names still exists:
an upgrade that moves or removes one fails here, by name, before anything else does."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from rag_assets.defs import dagster_private
from rag_assets.defs.dagster_private import PRIVATE_APIS
from rag_assets_tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "rag_assets"
GATEWAY = PACKAGE / "defs" / "dagster_private.py"


@pytest.mark.parametrize(
    ("module", "name"), PRIVATE_APIS, ids=[f"{m}:{n}" for m, n in PRIVATE_APIS]
)
def test_each_private_api_used_still_exists(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name)


def _private_imports(path: Path) -> set[tuple[str, str]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagster._"):
            found |= {(node.module, alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {(a.name, "") for a in node.names if a.name.startswith("dagster._")}
    return found


def test_no_module_but_the_gateway_imports_a_private_api() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): imports
        for path in PACKAGE.rglob("*.py")
        if path != GATEWAY and (imports := _private_imports(path))
    }
    assert offenders == {}


def test_the_gateway_lists_every_private_api_it_imports() -> None:
    imported = _private_imports(GATEWAY) - {("dagster._utils", "interrupts")}
    assert imported <= set(PRIVATE_APIS)
    # the interrupt flag is reached through the module; its name is listed
    assert ("dagster._utils.interrupts", "_received_interrupt") in PRIVATE_APIS
    assert set(dagster_private.__all__) <= set(dir(dagster_private))


def test_the_replaced_input_version_method_is_still_dagsters_as_it_was() -> None:
    import inspect

    original = dagster_private.DAGSTER_PARTITIONS_DATA_VERSION
    assert original.__module__ == "dagster._core.execution.context.data_version_cache"
    assert list(inspect.signature(original).parameters) == ["self", "key", "partition_keys"]
    # Still the materializations-only read the replacement extends to observations.
    assert "ASSET_MATERIALIZATION" in inspect.getsource(original)


def test_the_wrapped_output_events_function_is_still_dagsters_as_it_was() -> None:
    import inspect

    original = dagster_private.DAGSTER_OUTPUT_ASSET_EVENTS
    assert original.__module__ == "dagster._core.execution.plan.execute_step"
    assert list(inspect.signature(original).parameters) == [
        "asset_key",
        "asset_partitions",
        "output",
        "output_def",
        "io_manager_metadata",
        "step_context",
        "execution_type",
    ]
    # One data version for every partition of the output: what the wrapper makes per partition.
    assert "tags_for_event = {**all_tags}" in inspect.getsource(original)


def test_the_wrapped_log_mirror_is_still_dagsters_as_it_was() -> None:
    import inspect

    original = dagster_private.DAGSTER_TAIL_TO_STREAM
    assert original.__module__ == "dagster._core.execution.compute_logs"
    assert list(inspect.signature(original).parameters) == ["path", "stream"]
    # Its helpers end with terminate() (SIGTERM), which the wrapper leaves them open to.
    import dagster._core.execution.compute_logs as compute_logs

    assert "terminate()" in inspect.getsource(compute_logs._clean_up_subprocess)
