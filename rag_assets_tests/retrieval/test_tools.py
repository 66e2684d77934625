"""The typed retrieval tools on the sample corpus, ingested by the project's own ingest into
Milvus Lite with the bundled MiniLM, and their `rag-assets` subcommands."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from rag_assets.cli import main
from rag_assets.retrieval.tools.figures import figures
from rag_assets.retrieval.tools.glossary import glossary
from rag_assets.retrieval.tools.section import section
from rag_assets.retrieval.tools.table_rows import parse_markdown_rows, parse_row_text, table_rows
from rag_assets.retrieval.tools.text import text
from rag_assets.retrieval.tools.toolbox import Toolbox, open_toolbox
from rag_assets.settings import Settings
from rag_assets_tests.support.builders import make_doc
from rag_assets_tests.support.sample_corpus import index_spec_document, ingested_sample

SPEC = "host-controller-spec.pdf"
# A spec table whose marked cells have footnotes under the table (the sample has none).
FOOTNOTED = make_doc(
    [
        ("heading", "4 Power States", 1, 6),
        ("caption", "Table 7: Power State Latencies", None, 6),
        (
            "table",
            "| State | Wake Latency | Retention |\n|---|---|---|\n"
            "| Doze | 20 us<sup>1</sup> | Full |\n| Hibernate | 5 ms | Registers only* |",
            None,
            6,
        ),
        ("footnote", "1 Measured with the reference oscillator running.", None, 6),
        ("footnote", "* The FIFO contents are lost.", None, 6),
    ],
    doc_id="footnotes-doc",
    source_path="power/states.pdf",
)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = ingested_sample(tmp_path_factory)
    # The sample corpus has no figure and no table footnotes: index spec documents that have.
    doc = make_doc(
        [
            ("heading", "1 Card Detect", 1, 1),
            ("paragraph", "The debounce timing is shown in Figure 1. The filter waits.", None, 1),
            ("figure", "", None, 1),
            ("caption", "Figure 1: Card detect debounce timing diagram", None, 1),
        ],
        doc_id="figures-doc",
        source_path="figures/timing.pdf",
    )
    index_spec_document(settings, doc)
    index_spec_document(settings, FOOTNOTED)
    return settings


@pytest.fixture(scope="module")
def box(settings: Settings) -> Iterator[Toolbox]:
    with open_toolbox(settings) as opened:
        assert opened is not None
        yield opened


@pytest.mark.slow
@pytest.mark.parametrize(
    ("term", "match"),
    [
        ("ｂｌｏｃｋ ＧＡＰ", "exact"),  # full width and upper case
        ("the access type RW1C", "exact"),  # a trailing part of the query is the term
        ("Blok Gaps", "fuzzy"),
    ],
)
def test_glossary_exact_then_fuzzy(box: Toolbox, term: str, match: str) -> None:
    (entry, *_) = glossary(box, term)
    assert entry.match == match
    assert entry.term in ("Block Gap", "RW1C")
    assert entry.definition.startswith(("The interval between", "Read, write 1 to clear"))
    assert entry.source.page_start == 5 and entry.source.source_path.endswith(SPEC)


@pytest.mark.slow
def test_glossary_falls_back_to_passages_defining_the_term(box: Toolbox) -> None:
    (entry, *_) = glossary(box, "length field")
    assert entry.match == "defined_in_text"
    assert "a length field of 0 means 65,536" in entry.definition
    assert entry.source.section.endswith("3.4 ADMA Transfers")


@pytest.mark.slow
def test_table_rows_as_cells_with_the_tables_name_and_page(box: Toolbox) -> None:
    rows = table_rows(box, ["Software", "Reset", "Register"], attribute="offset")
    assert rows[0].cells == {
        "Offset": "0x2C",
        "Register": "Software Reset Register",
        "Access": "RW",
        "Reset Value": "0x00000000",
    }
    assert rows[0].table == "Table 2: Register Summary" and rows[0].page == 2
    assert all("Offset" in r.cells for r in rows)
    # Table 3's rows have Bits, Field, ...: an attribute none of them has leaves none.
    bits = table_rows(box, ["Host", "Control", "Register", "Timeout"], attribute="Bits")
    assert bits and all("Offset" not in r.cells and "Bits" in r.cells for r in bits)
    assert {"Bits": "15:8", "Field": "Timeout Counter Value"}.items() <= bits[0].cells.items()
    assert bits[0].caption == "Table 3: Host Control Register (Offset 0x04)"


@pytest.mark.slow
def test_table_rows_carry_the_footnotes_their_cells_mark(box: Toolbox) -> None:
    rows = table_rows(box, ["Doze", "Hibernate", "wake", "latency"], attribute="State")
    found = [r for r in rows if r.source.doc_id == FOOTNOTED.doc_id]
    by_state = {r.cells["State"]: r for r in found}
    assert len(found) == 2  # once each, not again raw from the whole-table chunk
    assert by_state["Doze"].footnotes == ["Measured with the reference oscillator running."]
    assert by_state["Doze"].cells["Wake Latency"] == (
        "20 us (Note: Measured with the reference oscillator running.)"
    )
    assert by_state["Hibernate"].footnotes == ["The FIFO contents are lost."]
    assert by_state["Doze"].table == "Table 7: Power State Latencies" and by_state["Doze"].page == 6


def test_row_text_and_markdown_tables_parse_into_cells() -> None:
    assert parse_row_text("[Table 9: X] Bits: 15:8 | Note: a: b (Note: c)") == {
        "Bits": "15:8",
        "Note": "a: b (Note: c)",
    }
    table = "Intro\n\n| City | Dinner |\n|---|---|\n| London | 50 |\n| Paris | 48 |\n\nAfter"
    assert parse_markdown_rows(table) == [
        {"City": "London", "Dinner": "50"},
        {"City": "Paris", "Dinner": "48"},
    ]


@pytest.mark.slow
def test_text_and_figures(box: Toolbox) -> None:
    (first, *_) = text(box, "Where does the daemon write its log file?")
    assert "/var/log/ashc/ashcd.log" in first.text and first.header_path.startswith("/")
    (figure, *_) = figures(box, "card detect debounce timing")
    assert figure.figure_id == "Figure 1" and figure.page == 1
    assert figure.caption == "Figure 1: Card detect debounce timing diagram"
    assert figure.anchor_text == "The debounce timing is shown in Figure 1."
    assert figure.image_path is None  # a hand-built document has no PDF to crop from


@pytest.mark.slow
def test_section_by_number_resolves_cross_references(box: Toolbox) -> None:
    (result,) = [r for r in section(box, "3.1") if r.source_path.endswith(SPEC)]
    assert result.section == "3.1 Initialization"
    references = {r.label: r for c in result.chunks for r in c.references}
    assert references["Section 3.2"].title == "3.2 Reset Sequence"
    assert references["Section 3.2"].page == 4 and references["Section 3.2"].kind == "section"


@pytest.mark.slow
def test_section_by_path_and_title_in_reading_order(box: Toolbox) -> None:
    spec = next(c for c in box.chunks() if c.source_path.endswith(SPEC))
    (by_path,) = section(box, "/2 Register Map/", doc=spec.source_path)
    indexes = [c.chunk_index for c in by_path.chunks]
    assert indexes == sorted(indexes) and len(indexes) > 10
    texts = [c.text for c in by_path.chunks]
    assert texts[0].startswith("# 2 Register Map")
    assert any(t.startswith("### 2.1.1 Timeout Counter") for t in texts)  # subsections too
    assert not any("3.1 Initialization" in t for t in texts)
    (by_title,) = section(box, "reset sequence")
    assert by_title.section == "3.2 Reset Sequence"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "check"),
    [
        (["glossary", "RW1C"], lambda r: r[0]["term"] == "RW1C"),
        (
            ["table-rows", "--attribute", "Reset Value", "Capabilities", "Register"],
            lambda r: r[0]["cells"]["Reset Value"] == "0x0169680A",
        ),
        (["text", "debug logging"], lambda r: "header_path" in r[0]),
        (["figures", "debounce timing"], lambda r: r[0]["figure_id"] == "Figure 1"),
        (["section", "3.2"], lambda r: r[0]["section"] == "3.2 Reset Sequence"),
    ],
)
def test_cli_subcommands_print_json(
    settings: Settings, capsys: pytest.CaptureFixture[str], argv: list[str], check
) -> None:
    assert main([argv[0], "--data-dir", str(settings.data_dir), "--json", *argv[1:]]) == 0
    assert check(json.loads(capsys.readouterr().out))
