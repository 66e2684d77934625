"""An import inside a function says why it is there: a heavy or optional dependency loaded only
when the code that needs it runs (a parser's library, a model, Dagster behind `--help`). Every
other import sits at the top of its module, where a reader looks for what a module uses."""

from __future__ import annotations

import ast

from rag_assets_tests.conftest import REPO_ROOT

_IMPORTS = (ast.Import, ast.ImportFrom)


def _import_blocks(tree: ast.AST) -> list[list[ast.stmt]]:
    """Runs of consecutive import statements in every function body (and the blocks nested in
    it), each run read as one: a comment above its first line gives the reason for all of it."""
    blocks: list[list[ast.stmt]] = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            for body in (getattr(node, field, None) for field in ("body", "orelse", "finalbody")):
                if not isinstance(body, list):
                    continue
                run: list[ast.stmt] = []
                for statement in [*body, None]:
                    if isinstance(statement, _IMPORTS):
                        run.append(statement)
                        continue
                    if run:
                        blocks.append(run)
                    run = []
    return blocks


def unexplained_imports(source: str) -> list[int]:
    """Line numbers of function-level imports with no comment above their block or beside them."""
    lines = source.splitlines()
    found: set[int] = set()
    for block in _import_blocks(ast.parse(source)):
        above = lines[block[0].lineno - 2].strip() if block[0].lineno > 1 else ""
        beside = any("#" in lines[s.lineno - 1] for s in block)
        if not above.startswith("#") and not beside:
            found.update(s.lineno for s in block)
    return sorted(found)


def test_every_import_inside_a_function_says_why() -> None:
    package = REPO_ROOT / "rag_assets"
    unexplained = {
        str(path.relative_to(REPO_ROOT)): lines
        for path in sorted(package.rglob("*.py"))
        if (lines := unexplained_imports(path.read_text(encoding="utf-8")))
    }
    assert not unexplained, unexplained


def test_a_reason_is_read_above_a_block_or_beside_an_import() -> None:
    source = """
def explained():
    # The parser's library takes seconds to import: loaded when a file needs it.
    import json
    import os

def beside():
    import json  # optional: only with the extra installed

def bare():
    x = 1
    import json
    return json, x

def nested():
    if True:
        from os import path
    return path
"""
    assert unexplained_imports(source) == [12, 17]
