"""Template options and the registry: names, entry points, validation, and what every
registered template's rows share."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest
from pydantic import ValidationError

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.contracts.tabular import to_arrow, to_records
from rag_assets.errors import ConfigurationError
from rag_assets.quality.chunks import check_header_paths
from rag_assets.templates import registry
from rag_assets.templates.base import ChunkTemplate, TemplateOptions, link_neighbours
from rag_assets.templates.fixed import FixedTemplate
from rag_assets.templates.registry import (
    available_templates,
    build_template,
    get_template,
    register_template,
)
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import assert_blocking_checks_pass, make_doc, texts

APPROX = ApproxTokenCounter()


# --- options and registry ----------------------------------------------------------------


def test_template_options_validation() -> None:
    assert TemplateOptions().max_tokens == 256 and TemplateOptions().overlap_tokens == 32
    with pytest.raises(ValidationError, match="overlap_tokens"):
        TemplateOptions(max_tokens=64, overlap_tokens=64)
    with pytest.raises(ValidationError):
        TemplateOptions(max_tokns=100)


def test_registry_builtins_and_unknown_name() -> None:
    assert {"semantic", "fixed"} <= set(available_templates())
    template = get_template("semantic", TemplateOptions(max_tokens=100))
    assert isinstance(template, SemanticTemplate)
    assert template.options.max_tokens == 100
    assert isinstance(get_template("fixed"), FixedTemplate)
    with pytest.raises(ConfigurationError, match=r"unknown template 'nope'; available: .*fixed"):
        get_template("nope")


class ToyTemplate(ChunkTemplate):
    name = "toy"
    version = "1"

    def chunk(self, doc: StandardizedDocument, counter) -> list[ChunkRow]:
        return [self.make_row(doc, 0, doc.markdown, counter, [])]


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_templates", dict(registry._templates))
    monkeypatch.setattr(registry, "_broken", {})


def test_register_template_rules(clean_registry: None) -> None:
    register_template("toy", ToyTemplate)
    register_template("toy", ToyTemplate)  # the same class again is fine
    assert "toy" in available_templates()

    class Impostor(ToyTemplate):
        name = "semantic"

    with pytest.raises(ConfigurationError, match="already registered"):
        register_template("semantic", Impostor)
    with pytest.raises(ConfigurationError, match="is named 'toy'"):
        register_template("other", ToyTemplate)
    with pytest.raises(ConfigurationError, match="not a ChunkTemplate"):
        register_template("str", str)  # type: ignore[arg-type]


def test_entry_point_templates_load_lazily(
    clean_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = [
        EntryPoint("toy", f"{__name__}:ToyTemplate", registry.ENTRY_POINT_GROUP),
        EntryPoint("broken", "no_such_module_xyz:Thing", registry.ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(registry, "entry_points", lambda group: found)
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    builtin = list(registry._templates)

    rows = get_template("toy").chunk(make_doc([("paragraph", "p", None, 1)]), APPROX)
    assert rows[0].template == "toy" and rows[0].text == "p"
    assert available_templates() == sorted([*builtin, "toy"])
    with pytest.raises(ConfigurationError, match="'broken' failed to load: no_such_module_xyz"):
        get_template("broken")


def test_neighbour_ids_link_every_chunk_to_the_ones_beside_it() -> None:
    doc = make_doc(
        [
            ("heading", "# A", 1, 1),
            ("paragraph", "one", None, 1),
            ("heading", "# B", 1, 2),
            ("paragraph", "two", None, 2),
        ]
    )
    rows = get_template("semantic", TemplateOptions(min_tokens=0)).chunk(doc, APPROX)
    linked = link_neighbours(rows)
    assert [r.chunk_id for r in linked] == [r.chunk_id for r in rows]  # ids do not depend on links
    assert (
        linked[0].metadata["prev_chunk_id"] is None and linked[-1].metadata["next_chunk_id"] is None
    )
    assert linked[0].metadata["next_chunk_id"] == rows[1].chunk_id
    assert linked[1].metadata["prev_chunk_id"] == rows[0].chunk_id
    assert build_template("semantic", {"neighbour_ids": True}).options.neighbour_ids


def test_header_path_separator_is_configurable_and_checked_with_it() -> None:
    doc = make_doc(
        [
            ("heading", "# A", 1, 1),
            ("paragraph", "a", None, 1),
            ("heading", "## I/O", 2, 1),
            ("paragraph", "b", None, 1),
            ("heading", "### C", 3, 1),
            ("paragraph", "x", None, 1),
        ]
    )
    options = {"header_path_separator": "::", "min_tokens": 0}
    rows = build_template("semantic", options).chunk(doc, APPROX)
    assert [r.header_path for r in rows] == ["::", "::A::", "::A::I\u2215O::"]
    records = to_records(to_arrow(rows, ChunkRow), ChunkRow)
    assert check_header_paths(records, doc, separator="::").passed
    assert not check_header_paths(records, doc).passed  # read with "/", "::A::" is not a path
    with pytest.raises(ConfigurationError, match="header_path_separator"):
        build_template("semantic", {"header_path_separator": "a b"})


@pytest.mark.parametrize("name", available_templates())
def test_text_without_a_word_is_no_chunk_nor_part_of_one(name: str) -> None:
    """An empty table's grid or a rule holds nothing to find: alone it made a chunk that
    failed `chunks_have_content` and so the whole document."""
    empty_table = "|  |\n|---|"
    doc = make_doc(
        [
            ("paragraph", "Some words here.", None, 1),
            ("table", empty_table, None, 1),
            ("paragraph", "***", None, 2),
        ]
    )
    assert texts(build_template(name).chunk(doc, APPROX)) == ["Some words here."]
    assert build_template(name).chunk(make_doc([("table", empty_table, None, 1)]), APPROX) == []


@pytest.mark.parametrize("name", available_templates())
def test_a_split_element_leaves_no_part_without_a_word(name: str) -> None:
    """A dot leader's dots after the last sentence were a seam, then a chunk, of their own."""
    text = "One two three four five six. Seven eight nine ten eleven twelve." + " ." * 13
    doc = make_doc([("heading", "## Article 1 Scope", 2, 1), ("paragraph", text, None, 1)])
    template = build_template(name, {"max_tokens": 16, "overlap_tokens": 0, "min_tokens": 0})
    rows = template.chunk(doc, APPROX)
    assert len(rows) > 1
    assert_blocking_checks_pass(rows, doc, template.headings_from_text)
