"""The package's layers hold: the import-linter contracts in pyproject.toml (each layer imports
only from the layers below it; Dagster only where the skin is), and no module imports one that
imports it back, at module level or inside a function."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

from rag_assets_tests.conftest import REPO_ROOT


def test_the_layers_contract_is_kept() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(linter), "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:]


# Where Dagster may be imported (README, docs/index.md and docs/contributing.md say the same).
DAGSTER_ALLOWED = {"cli", "definitions", "defs", "instance", "runner"}


def test_every_module_outside_the_skin_is_forbidden_dagster() -> None:
    """A new top-level module is plain Python until it is named here and in the docs."""
    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (forbidden,) = [c for c in contracts["contracts"] if c["type"] == "forbidden"]
    package = REPO_ROOT / "rag_assets"
    top_level = {
        p.stem for p in package.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()
    } - {"__init__"}
    assert set(forbidden["source_modules"]) == {
        f"rag_assets.{name}" for name in top_level - DAGSTER_ALLOWED
    }
    assert "dagster" in forbidden["forbidden_modules"]


def test_the_docs_name_where_dagster_is_imported_as_the_contract_does() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    contributing = (REPO_ROOT / "docs" / "contributing.md").read_text()
    for text in (readme, contributing):
        # The sentence naming the modules, up to "import Dagster".
        (claim,) = re.findall(r"Only ((?:`[^`]+`|[^.`])*?) import Dagster", text.replace("\n", " "))
        named = {Path(path).stem for path in re.findall(r"`rag_assets/([^`]+)`", claim)}
        assert named == DAGSTER_ALLOWED, claim
    # The site's overview shows the README's layout section, the claim with it.
    assert '--8<-- "README.md:layout"' in (REPO_ROOT / "docs" / "index.md").read_text()


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each set of modules that import one another in a circle (Tarjan's strongly connected
    components of more than one module); a package's own `__init__` is left out."""
    edges = {
        module: sorted(graph.find_modules_directly_imported_by(module) - {"rag_assets"})
        for module in graph.modules
    }
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for imported in edges.get(module, []):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in order:
            visit(module)
    return cycles


def test_no_import_cycles() -> None:
    assert import_cycles(grimp.build_graph("rag_assets")) == []


def test_a_cycle_is_found() -> None:
    graph = grimp.ImportGraph()
    for a, b in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=a, imported=b)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]
