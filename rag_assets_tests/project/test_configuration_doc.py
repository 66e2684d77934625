"""docs/configuration.md is rendered from the settings models and lists every variable read."""

from __future__ import annotations

import re

from rag_assets.settings_doc import DOC_PATH, render, rows
from rag_assets_tests.conftest import REPO_ROOT


def test_the_configuration_reference_matches_the_settings_models() -> None:
    assert DOC_PATH.read_text() == render(), (
        "docs/configuration.md is out of date: run `python -m rag_assets.settings_doc`"
    )


def test_every_variable_the_package_names_is_in_the_reference() -> None:
    documented = {variable for variable, _, _ in rows()}
    pattern = re.compile(r"RAG_ASSETS_[A-Z0-9_]*[A-Z0-9]")
    named = {
        name
        for source in (REPO_ROOT / "rag_assets").rglob("*.py")
        for name in pattern.findall(source.read_text())
    }
    # A family named by its prefix (RAG_ASSETS_MAX_*, RAG_ASSETS_FUSION_<FIELD>) is covered
    # by its members.
    missing = {
        name
        for name in named - documented
        if not any(variable.startswith(f"{name}_") for variable in documented)
    }
    assert missing == set()


def test_each_variable_is_documented_once() -> None:
    variables = [variable for variable, _, _ in rows()]
    assert len(variables) == len(set(variables))
