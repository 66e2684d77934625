"""The `spec` template: real IR from the sample spec PDF and an arXiv page, plus hand-built IR
for what the sample lacks (multi-level headers, footnotes, figures, page ranges).

Counts use ApproxTokenCounter (one token per word or punctuation run), as in test_semantic.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument, TableCell, TableData
from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets.tables.structure import structure_markdown, with_table_markdown
from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.spec import SpecOptions, SpecTemplate, spec_structure
from rag_assets.templates.spec_parts.labels import find_references
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.conftest import REPO_ROOT
from rag_assets_tests.support.builders import assert_blocking_checks_pass, doc_from_elements
from rag_assets_tests.support.metadata import own_metadata

APPROX = ApproxTokenCounter()
CORPUS_SPEC = REPO_ROOT / "examples" / "corpus" / "host-controller-spec.pdf"
TABLE_3 = "[Table 3: Host Control Register (Offset 0x04)]"


def spec(doc: StandardizedDocument, **options) -> list[ChunkRow]:
    return SpecTemplate(SpecOptions(**options)).chunk(doc, APPROX)


def of_type(rows: list[ChunkRow], chunk_type: str) -> list[ChunkRow]:
    return [row for row in rows if row.chunk_type == chunk_type]


def element(
    kind: str, text: str, page: int = 1, level: int | None = None, **fields
) -> DocumentElement:
    return DocumentElement(
        type=kind, text=text, level=level, page_start=page, page_end=page, **fields
    )


def build(elements: list[DocumentElement], doc_id: str = "spec-1") -> StandardizedDocument:
    return doc_from_elements(elements, doc_id, "inbox/spec.pdf")


# --- the sample spec, through the real parser -------------------------------------------


@pytest.fixture(scope="module")
def corpus_doc() -> StandardizedDocument:
    parsed = PyMuPDFParser().parse(CORPUS_SPEC)
    return pymupdf_to_ir(parsed, doc_id="host-controller-spec", source_sha256="ef" * 32)


@pytest.fixture(scope="module")
def corpus_rows(corpus_doc: StandardizedDocument) -> list[ChunkRow]:
    return spec(corpus_doc)


def test_corpus_register_row_is_a_key_value_chunk(
    corpus_doc: StandardizedDocument, corpus_rows: list[ChunkRow]
) -> None:
    (row,) = [
        r for r in of_type(corpus_rows, "table_row") if "Bits: 15:8 | Field: Timeout" in r.text
    ]

    assert row.text == (
        f"{TABLE_3} Bits: 15:8 | Field: Timeout Counter Value | Access: RW | Reset: 0x0E"
        " | Description: Data timeout, as a power of two of TMCLK cycles. See 2.1.1."
    )
    assert own_metadata(row) == {
        "table_name": "Table 3: Host Control Register (Offset 0x04)",
        "table_label": "Table 3",
        "table_caption": "Table 3: Host Control Register (Offset 0x04)",
        "table_index": 2,
        "element_index": 27,
        "row_index": 1,
        "reserved": False,
        "table_source": "markdown",
        "references": ["Section 2.1.1"],
    }
    assert (row.header_path, row.headings) == (
        "/2 Register Map/",
        ["2 Register Map", "2.1 Host Control Register"],
    )
    assert (row.page_start, row.page_end, row.logical_unit) == (2, 2, "2.1")
    # The row's own line of the table in the IR markdown.
    assert corpus_doc.markdown[row.start_char : row.end_char].startswith("| 15:8 | Timeout")
    assert_blocking_checks_pass(corpus_rows, corpus_doc)


def test_corpus_table_is_one_table_chunk_followed_by_its_rows(corpus_rows: list[ChunkRow]) -> None:
    position = next(
        i for i, r in enumerate(corpus_rows) if r.metadata.get("table_label") == "Table 3"
    )
    before, table, *after = corpus_rows[position - 1 : position + 10]

    assert before.text.startswith("## 2.1 Host Control Register\n\nThe Host Control Register")
    assert table.chunk_type == "table"
    assert table.text.startswith(
        "## 2.1 Host Control Register\n\nTable 3: Host Control Register (Offset 0x04)\n\n"
        "| Bits | Field | Access | Reset | Description |"
    )
    assert [r.chunk_type for r in after[:8]] == ["table_row"] * 8
    assert [r.metadata["row_index"] for r in after[:8]] == list(range(8))
    assert after[8].text.startswith("### 2.1.1 Timeout Counter")
    # The caption moved into the table chunk; the body chunk does not repeat it.
    assert "Table 3:" not in before.text


def test_corpus_reserved_rows_kept_or_dropped(corpus_doc: StandardizedDocument) -> None:
    def table_3(rows: list[ChunkRow]) -> list[tuple[int, bool, str]]:
        return [
            (r.metadata["row_index"], r.metadata["reserved"], r.text.split(" | ")[0])
            for r in of_type(rows, "table_row")
            if r.metadata["table_label"] == "Table 3"
        ]

    kept = spec(corpus_doc)
    dropped = spec(corpus_doc, drop_reserved_rows=True)

    assert [(i, bits) for i, reserved, bits in table_3(kept) if reserved] == [
        (0, f"{TABLE_3} Bits: 31:16"),
        (5, f"{TABLE_3} Bits: 3"),
    ]
    # "01 = Reserved" inside a description does not make the DMA Select row reserved.
    assert (2, False, f"{TABLE_3} Bits: 7:6") in table_3(kept)
    assert [i for i, *_ in table_3(dropped)] == [1, 2, 3, 4, 6, 7]
    assert not any(r.metadata["reserved"] for r in of_type(dropped, "table_row"))
    assert len(of_type(kept, "table_row")) - len(of_type(dropped, "table_row")) == 6
    assert_blocking_checks_pass(dropped, corpus_doc)


def test_corpus_glossary_terms(
    corpus_doc: StandardizedDocument, corpus_rows: list[ChunkRow]
) -> None:
    glossary = of_type(corpus_rows, "glossary")

    assert [(r.metadata["term"], r.text) for r in glossary] == [
        ("ADMA", "ADMA: Advanced DMA. A scatter-gather DMA engine that reads transfer descriptors from a table in system memory."),
        ("Block Gap", "Block Gap: The interval between two consecutive data blocks on the DAT lines, during which a transfer can be paused."),
        ("Card Detect", "Card Detect: The input signal, and the matching Present State Register bit, that indicates whether a card is inserted."),
        ("DAT lines", "DAT lines: The 1, 4 or 8 data signals between the controller and the card."),
        ("RW1C", "RW1C: Read, write 1 to clear. An access type for status bits that software clears by writing 1."),
        ("SDCLK", "SDCLK: The clock the controller drives to the card, derived from the base clock by the divisor in the Clock Control Register."),
        ("SDMA", "SDMA: Simple DMA. A DMA engine that transfers one contiguous buffer and interrupts at each buffer boundary."),
        ("TMCLK", "TMCLK: The timeout clock that drives the Timeout Counter."),
    ]  # fmt: skip
    assert {(r.header_path, tuple(r.headings), r.page_start) for r in glossary} == {
        ("/", ("5 Glossary",), 5)
    }
    # The glossary section holds only terms: its heading is no body chunk of its own.
    assert not [r for r in corpus_rows if r.text.startswith("# 5 Glossary")]
    assert not any("Advanced DMA" in r.text for r in of_type(corpus_rows, "text"))


def test_corpus_body_text_is_chunked_exactly_like_semantic(
    corpus_doc: StandardizedDocument, corpus_rows: list[ChunkRow]
) -> None:
    glossary = [e for e in corpus_doc.elements if e.type == "paragraph" and e.page_start == 5]
    body = [
        e for e in corpus_doc.elements if e.type not in ("table", "caption") and e not in glossary
    ]
    expected = SemanticTemplate(TemplateOptions()).chunk(
        corpus_doc.model_copy(update={"elements": body}), APPROX
    )

    def shape(rows: list[ChunkRow]) -> list[tuple]:
        return [
            (r.text, r.header_path, r.headings, r.page_start, r.page_end, r.start_char, r.end_char)
            for r in rows
        ]

    assert shape(of_type(corpus_rows, "text")) == shape(expected)
    assert {r.template for r in corpus_rows} == {"spec"}


def test_corpus_structure_toc_tree_and_xrefs(corpus_doc: StandardizedDocument) -> None:
    structure = spec_structure(corpus_doc)

    assert structure.toc_source == "headings"
    register_map = next(node for node in structure.toc if node.title == "2 Register Map")
    assert [(n.level, n.title, n.page) for n in register_map.children] == [
        (2, "2.1 Host Control Register", 2),
        (2, "2.2 Interrupt Status Register", 3),
    ]
    assert [(n.title, n.page) for n in register_map.children[0].children] == [
        ("2.1.1 Timeout Counter", 2),
        ("2.1.2 Data Transfer Width", 3),
    ]
    table_3 = structure.xrefs["Table 3"]
    assert (table_3.kind, table_3.page, table_3.section, table_3.title) == (
        "table",
        2,
        "2.1 Host Control Register",
        "Table 3: Host Control Register (Offset 0x04)",
    )
    section = structure.xrefs["Section 2.1.1"]
    assert (section.kind, section.page, section.title) == ("section", 2, "2.1.1 Timeout Counter")
    assert [label for label in structure.xrefs if not label.startswith("Section")] == [
        "Table 1",
        "Table 2",
        "Table 3",
        "Table 4",
    ]


def test_corpus_chunk_references(corpus_rows: list[ChunkRow]) -> None:
    by_start = {
        r.text.split("\n")[0]: r.metadata["references"] for r in of_type(corpus_rows, "text")
    }

    assert by_start["# 2 Register Map"] == ["Table 2"]  # "Offsets not listed in Table 2 ..."
    assert by_start["## 3.1 Initialization"] == ["Section 3.2", "Section 3.3"]
    assert by_start["## 1.1 Scope"] == []
    # A caption defines its table; only citations count.
    assert all(
        r.metadata["references"] == [] for r in of_type(corpus_rows, "table") if "See" not in r.text
    )


def test_corpus_oversized_rows_are_cut_with_the_table_name_repeated(
    corpus_doc: StandardizedDocument,
) -> None:
    rows = spec(corpus_doc, max_tokens=24, overlap_tokens=4)
    table_rows = of_type(rows, "table_row")
    parts = [r for r in table_rows if "part" in r.metadata]

    assert all(r.token_count <= 24 for r in table_rows)
    assert parts and all(r.text.startswith("[Table ") for r in parts)
    first, second = [r for r in parts if r.metadata["table_label"] == "Table 3"][:2]
    assert first.text.startswith(f"{TABLE_3} Bits: 15:8 | Field: Timeout Counter Value")
    assert second.text.startswith(TABLE_3) and second.text.endswith("See 2.1.1.")
    assert (first.metadata["part"], second.metadata["part"]) == (0, 1)
    assert first.metadata["row_index"] == second.metadata["row_index"] == 1
    assert second.metadata["references"] == ["Section 2.1.1"]
    assert_blocking_checks_pass(rows, corpus_doc)


def test_corpus_split_tables_get_no_outline_their_rows_name_every_row(
    corpus_doc: StandardizedDocument,
) -> None:
    sizes = TemplateOptions(max_tokens=64, overlap_tokens=0)
    semantic_rows = SemanticTemplate(sizes).chunk(corpus_doc, APPROX)
    assert any(r.metadata.get("table_outline") for r in semantic_rows)
    rows = spec(corpus_doc, max_tokens=64, overlap_tokens=0)
    assert not any(r.metadata.get("table_outline") for r in rows)


def test_corpus_chunks_are_deterministic(
    corpus_doc: StandardizedDocument, corpus_rows: list[ChunkRow]
) -> None:
    again = spec(corpus_doc)
    # As document_chunks runs it: each table's text replaced by its chosen markdown.
    chosen = spec(with_table_markdown(corpus_doc, structure_markdown(corpus_doc)))

    assert [(r.chunk_id, r.text) for r in again] == [(r.chunk_id, r.text) for r in corpus_rows]
    assert [r.model_dump() for r in chosen] == [r.model_dump() for r in corpus_rows]
    assert [r.chunk_index for r in corpus_rows] == list(range(len(corpus_rows)))


# --- a real results table with two header rows ------------------------------------------


def test_arxiv_results_table_rows_get_composite_keys(shared_fixtures: Path) -> None:
    parsed = PyMuPDFParser().parse(shared_fixtures / "pdf" / "2305.03393v1-pg9.pdf")
    doc = pymupdf_to_ir(parsed, doc_id="arxiv-pg9", source_sha256="ab" * 32)
    rows = spec(doc)
    table_rows = of_type(rows, "table_row")

    # The parser marks one header row; the second ("enc-layers", "simple", ...) is found again.
    first = table_rows[0]
    assert first.text.split("] ", 1)[1] == (
        "# / enc-layers: 6 | # / dec-layers: 6 | Language: OTSL | simple: 0.965"
        " | TEDs / complex: 0.934 | all: 0.955 | mAP / (0.75): 0.88 | Inference / time (secs): 2.73"
    )
    # The caption is a paragraph ("**Table 1.** HPO performed ..."), found beside the table.
    assert first.text.startswith(
        "[Table 1. HPO performed in OTSL and HTML representation on the same …]"
    )
    assert first.metadata["table_label"] == "Table 1"
    assert len(table_rows) == 7
    assert first.headings == ["5.1 Hyper Parameter Optimization"]
    assert spec_structure(doc).xrefs["Table 1"].section == "5.1 Hyper Parameter Optimization"
    assert_blocking_checks_pass(rows, doc)


# --- hand-built IR: multi-level headers and footnotes -----------------------------------


def packet_table() -> TableData:
    cells = [
        TableCell(row=0, col=0, text="Field", row_span=2, is_header=True),
        TableCell(row=0, col=1, text="Size", col_span=2, is_header=True),
        TableCell(row=0, col=3, text="Notes", row_span=2, is_header=True),
        TableCell(row=1, col=1, text="Bytes", is_header=True),
        TableCell(row=1, col=2, text="Bits", is_header=True),
        *[
            TableCell(row=r, col=c, text=text)
            for r, row in enumerate(
                [["Header", "4", "32", "Fixed"], ["Payload", "0-512", "0-4096", ""]], 2
            )
            for c, text in enumerate(row)
        ],
    ]
    return TableData(
        num_rows=4, num_cols=4, cells=cells, header_rows=2, caption="Table 5: Packet Layout"
    )


@pytest.mark.parametrize(
    ("text", "source"),
    [
        (table_to_markdown(packet_table()), "markdown"),
        ("<table>vision said HTML</table>", "structure"),
    ],
)
def test_multi_level_header_becomes_composite_keys(text: str, source: str) -> None:
    doc = build(
        [
            element("heading", "## 3 Packets", level=2),
            element("table", text, table=packet_table()),
        ]
    )
    rows = of_type(spec(doc), "table_row")

    assert [r.text for r in rows] == [
        "[Table 5: Packet Layout] Field: Header | Size / Bytes: 4 | Size / Bits: 32 | Notes: Fixed",
        "[Table 5: Packet Layout] Field: Payload | Size / Bytes: 0-512 | Size / Bits: 0-4096",
    ]
    assert {r.metadata["table_source"] for r in rows} == {source}
    assert_blocking_checks_pass(spec(doc), doc)


def test_second_header_row_in_markdown_is_folded_into_the_keys() -> None:
    # As a vision model may write it: the second header level as the first body row.
    markdown = (
        "| Signal | Timing | Timing | Timing |\n|---|---|---|---|\n"
        "| | Min | Typ | Max |\n| tSU | 5 | 7 | 10 |\n| tH | 2 | 3 | 4 |"
    )
    doc = build([element("heading", "## 4 Timing", level=2), element("table", markdown)])
    rows = of_type(spec(doc), "table_row")

    # No caption: the table is named after its section.
    assert [r.text for r in rows] == [
        "[4 Timing] Signal: tSU | Timing / Min: 5 | Timing / Typ: 7 | Timing / Max: 10",
        "[4 Timing] Signal: tH | Timing / Min: 2 | Timing / Typ: 3 | Timing / Max: 4",
    ]
    assert [r.metadata["row_index"] for r in rows] == [0, 1]
    assert rows[0].metadata["table_label"] is None


def test_markdown_is_preferred_over_the_structure() -> None:
    old = TableData(
        num_rows=2,
        num_cols=2,
        header_rows=1,
        cells=[
            TableCell(row=0, col=0, text="Name", is_header=True),
            TableCell(row=0, col=1, text="Value", is_header=True),
            TableCell(row=1, col=0, text="Mode"),
            TableCell(row=1, col=1, text="misread"),
        ],
    )
    doc = build([element("heading", "## 1 A", level=2), element("table", "x", table=old)])
    # What `with_table_markdown` does once a vision model read the table better.
    chosen = "| Name | Value |\n|---|---|\n| Mode | ADMA2 |"
    elements = [
        e.model_copy(update={"text": chosen}) if e.type == "table" else e for e in doc.elements
    ]
    doc = doc.model_copy(update={"elements": elements})
    rows = spec(doc)
    (row,) = of_type(rows, "table_row")

    assert row.text == "[1 A] Name: Mode | Value: ADMA2"
    # The text is no longer the IR's own, so the row points at the whole table element.
    table = doc.elements[1]
    assert (row.start_char, row.end_char) == (table.start_char, table.end_char)
    assert_blocking_checks_pass(rows, doc)


def test_footnote_markers_attach_notes_to_the_rows_they_mark() -> None:
    markdown = (
        "| Bits | Field | Reset† |\n|---|---|---|\n"
        "| 15:8 | Timeout Counter Value<sup>1</sup> | 0x0E |\n"
        "| 7:6 | DMA Select* | 0b00 |\n"
        "| 5 | ADMA2 | 0 |\n"
        "1 Valid only when bit 0 is set."
    )
    table = TableData(
        num_rows=1,
        num_cols=1,
        cells=[TableCell(row=0, col=0, text="unused")],
        footnotes=["* Depends on the strap pins.", "2 Never used."],
    )
    doc = build(
        [
            element("heading", "## 2.1 Host Control", level=2),
            element("caption", "Table 3: Host Control Register"),
            element("table", markdown, table=table),
            element("footnote", "† Hexadecimal unless marked 0b."),
        ]
    )
    rows = spec(doc)

    assert [r.text for r in of_type(rows, "table_row")] == [
        "[Table 3: Host Control Register] Bits: 15:8"
        " | Field: Timeout Counter Value (Note: Valid only when bit 0 is set.)"
        " | Reset: 0x0E (Note: Hexadecimal unless marked 0b.)",
        "[Table 3: Host Control Register] Bits: 7:6"
        " | Field: DMA Select (Note: Depends on the strap pins.)"
        " | Reset: 0b00 (Note: Hexadecimal unless marked 0b.)",
        # "ADMA2" is a name, not a cell marked with footnote 2.
        "[Table 3: Host Control Register] Bits: 5 | Field: ADMA2"
        " | Reset: 0 (Note: Hexadecimal unless marked 0b.)",
    ]
    assert_blocking_checks_pass(rows, doc)


MARKED_CELLS = [
    # (the cell, the value it keeps); the notes are (1) and (2), however they are written
    ("Base clock (1).", "Base clock. (Note: Valid only when bit 0 is set.)"),
    ("Base clock(1)", "Base clock (Note: Valid only when bit 0 is set.)"),
    ("Base clock<sup>1</sup>,", "Base clock, (Note: Valid only when bit 0 is set.)"),
    ("Base clock¹", "Base clock (Note: Valid only when bit 0 is set.)"),
    ("Base clock [2]", "Base clock (Note: Ignored in SDR mode.)"),
    ("Base clock^2;", "Base clock; (Note: Ignored in SDR mode.)"),
    ("clocks2.", "clocks. (Note: Ignored in SDR mode.)"),
    # names and labels keep their digits: no note attaches
    ("ADMA2", "ADMA2"),
    ("CMD12.", "CMD12."),
    ("Figure 1", "Figure 1"),
    ("see Figure 1.", "see Figure 1."),
    ("Gen (3)", "Gen (3)"),  # no note (3)
]
NOTE_SHAPES = {
    "list": ("list", "- (1) Valid only when bit 0 is set.\n- (2) Ignored in SDR mode."),
    "list of superscripts": ("list", "* ¹ Valid only when bit 0 is set.\n* ² Ignored in SDR mode."),
    "paragraph": ("paragraph", "1) Valid only when bit 0 is set.\n2) Ignored in SDR mode."),
    "footnotes": (
        "footnote",
        "Note 1: Valid only when bit 0 is set.\nNote 2: Ignored in SDR mode.",
    ),
}


@pytest.mark.parametrize("shape", NOTE_SHAPES)
def test_footnotes_attach_in_every_shape_and_marker_form(shape: str) -> None:
    kind, notes = NOTE_SHAPES[shape]
    body = "".join(f"| {i} | {cell} |\n" for i, (cell, _) in enumerate(MARKED_CELLS))
    doc = build(
        [
            element("heading", "## 2.1 Clocks", level=2),
            element("caption", "Table 4: Clock Control"),
            element("table", "| Bit | Meaning |\n|---|---|\n" + body),
            element(kind, notes),
            element("paragraph", "1 Scope of the next part: not a note, the notes ended."),
        ]
    )
    rows = of_type(spec(doc), "table_row")
    assert [r.text for r in rows] == [
        f"[Table 4: Clock Control] Bit: {i} | Meaning: {value}"
        for i, (_, value) in enumerate(MARKED_CELLS)
    ]


@pytest.mark.parametrize(
    "steps", ["- (1) Valid only when set.\n- Then restart the card.", "1. Set it.\n2. Restart."]
)
def test_a_list_after_a_table_is_not_taken_for_its_notes(steps: str) -> None:
    doc = build(
        [
            element("table", "| Bit | Meaning |\n|---|---|\n| 0 | Enable (1) |"),
            element("list", steps),
        ]
    )
    (row,) = of_type(spec(doc), "table_row")
    assert row.text.endswith("Meaning: Enable (1)")


# --- hand-built IR: glossary forms ---------------------------------------------------------


def test_glossary_lines_bold_terms_and_two_column_tables() -> None:
    doc = build(
        [
            element("heading", "## 9 Definitions", level=2),
            element("paragraph", "The following terms apply."),
            element(
                "list",
                "- **Block Gap** – The pause between blocks.\n  It ends with the next block.\n"
                "- **TMCLK**: Timeout clock.",
            ),
            element(
                "table",
                "| Term | Definition |\n|---|---|\n| SDR | Single data rate |\n| DDR | Double data rate |",
            ),
            element("heading", "## 10 Abbreviations", level=2),
            element(
                "table",
                "| ACMD | Application command |\n|---|---|\n| CRC | Cyclic redundancy check |",
            ),
            element("paragraph", "術語：定義的內容"),
            element("heading", "## 11 Annex", level=2),
            element("paragraph", "Scope: not a glossary here."),
        ]
    )
    rows = spec(doc, min_tokens=0)

    assert [(r.metadata["term"], r.text) for r in of_type(rows, "glossary")] == [
        ("Block Gap", "Block Gap: The pause between blocks. It ends with the next block."),
        ("TMCLK", "TMCLK: Timeout clock."),
        ("SDR", "SDR: Single data rate"),
        ("DDR", "DDR: Double data rate"),
        ("ACMD", "ACMD: Application command"),
        ("CRC", "CRC: Cyclic redundancy check"),
        ("術語", "術語: 定義的內容"),
    ]
    # Prose in a glossary section, and term-like lines elsewhere, stay body text;
    # "10 Abbreviations" holds only terms, so its heading is no body chunk.
    assert [r.text for r in of_type(rows, "text")] == [
        "## 9 Definitions\n\nThe following terms apply.",
        "## 11 Annex\n\nScope: not a glossary here.",
    ]
    assert not of_type(rows, "table") and not of_type(rows, "table_row")
    assert_blocking_checks_pass(rows, doc)


# --- hand-built IR: figures -----------------------------------------------------------------


def figure_doc() -> StandardizedDocument:
    return build(
        [
            element("heading", "## 7 Write Operation", level=2),
            element(
                "paragraph",
                "The host writes a block as shown in Figure 7-1. The card then answers.",
            ),
            element(
                "figure",
                "<!-- image -->",
                page=2,
                bbox=(50.0, 100.0, 300.0, 400.0),
                metadata={"ref": "#/pictures/0"},
            ),
            element("caption", "Figure 7-1: Write Operation Flowchart", page=2),
            element("figure", "<!-- image -->", page=2),  # a logo: no caption of its own
            element("heading", "## 8 Layout", level=2, page=3),
            # Docling keeps the caption on the figure itself.
            element(
                "figure",
                "Figure 8: Block Diagram",
                page=3,
                metadata={"caption": "Figure 8: Block Diagram"},
            ),
        ]
    )


def test_figures_become_placeholders_with_caption_and_anchor() -> None:
    doc = figure_doc()
    rows = spec(doc, min_tokens=0)  # short sections apart, to see each one's placeholder
    figures = of_type(rows, "figure")

    assert [r.text for r in figures] == [
        "[Figure 7-1: Write Operation Flowchart]\nThe host writes a block as shown in Figure 7-1.",
        "[Figure 8: Block Diagram]",
    ]
    first = figures[0]
    assert own_metadata(first) == {
        "figure_id": "Figure 7-1",
        "caption": "Figure 7-1: Write Operation Flowchart",
        "anchor_text": "The host writes a block as shown in Figure 7-1.",
        "figure_ref": {
            "element_index": 2,
            "page": 2,
            "bbox": [50.0, 100.0, 300.0, 400.0],
            "ref": "#/pictures/0",
        },
        "references": [],  # the figure's own label is no outgoing reference
    }
    assert (first.header_path, first.headings, first.page_start) == ("/", ["7 Write Operation"], 2)
    assert figures[1].metadata["anchor_text"] is None
    # In reading order: each placeholder follows the body chunk of its section.
    assert [r.chunk_type for r in rows] == ["text", "figure", "text", "figure"]
    assert rows[0].metadata["references"] == ["Figure 7-1"]
    assert list(spec_structure(doc).xrefs) == ["Section 7", "Figure 7-1", "Section 8", "Figure 8"]
    assert_blocking_checks_pass(rows, doc)


# --- hand-built IR: page ranges ---------------------------------------------------------------


def paged_doc() -> StandardizedDocument:
    return build(
        [
            element("heading", "# Contents", level=1, page=1),
            element(
                "paragraph",
                "1 Scope ..... 3\n2 Registers ..... 4\n2.1 Control ..... 4\nAppendix A ..... 5",
                page=1,
            ),
            element("paragraph", "ADMA: Advanced DMA.\nSDMA: Simple DMA.", page=2),
            element("heading", "# 1 Scope", level=1, page=3),
            element("paragraph", "Scope text, see Section 2.1.", page=3),
            element("heading", "# 2 Registers", level=1, page=4),
            element("heading", "## 2.1 Control", level=2, page=4),
            element("paragraph", "Control text.", page=4),
            element("heading", "# Appendix A", level=1, page=5),
            element("paragraph", "Appendix text.", page=5),
        ]
    )


def test_page_ranges_route_pages_to_their_rules() -> None:
    doc = paged_doc()
    options = {"toc_pages": "1", "glossary_pages": [2], "body_pages": "3-4"}
    rows = spec(doc, **options)

    assert [(r.chunk_type, r.text, r.page_start) for r in rows] == [
        ("glossary", "ADMA: Advanced DMA.", 2),
        ("glossary", "SDMA: Simple DMA.", 2),
        ("text", "# 1 Scope\n\nScope text, see Section 2.1.", 3),
        # "2 Registers" holds only a subsection: no chunk of its own.
        ("text", "## 2.1 Control\n\nControl text.", 4),
    ]
    assert rows[2].metadata["references"] == ["Section 2.1"]
    assert_blocking_checks_pass(rows, doc)


def test_toc_pages_build_the_toc_tree() -> None:
    doc = paged_doc()
    structure = spec_structure(doc, SpecOptions(toc_pages="1"))

    assert structure.toc_source == "toc"
    assert [
        (node.level, node.title, node.page, node.printed_page, [c.title for c in node.children])
        for node in structure.toc
    ] == [
        (1, "1 Scope", 3, "3", []),
        (1, "2 Registers", 4, "4", ["2.1 Control"]),
        (1, "Appendix A", 5, "5", []),
    ]
    # Without toc_pages the contents page is body text and the tree comes from the headings.
    assert spec_structure(doc).toc_source == "headings"
    assert "Contents" in [node.title for node in spec_structure(doc).toc]


def test_without_page_ranges_every_page_is_body() -> None:
    doc = paged_doc()
    rows = spec(doc)

    assert rows[0].text.startswith("# Contents\n\n1 Scope ..... 3")
    assert "Appendix text." in rows[-1].text
    assert not of_type(rows, "glossary")  # no glossary heading and no glossary_pages


# --- options and references ---------------------------------------------------------------------


def test_spec_options() -> None:
    options = SpecOptions(toc_pages="1-3, 7", glossary_pages=[9, 8], body_pages=5)
    assert (options.toc_pages, options.glossary_pages, options.body_pages) == (
        (1, 2, 3, 7),
        (8, 9),
        (5,),
    )
    assert SpecOptions().drop_reserved_rows is False
    for bad in ({"toc_pages": "3-1"}, {"body_pages": "0"}, {"glossary_pages": "x"}):
        with pytest.raises(ValidationError):
            SpecOptions(**bad)
    with pytest.raises(ValidationError, match=r"pages \[2\] are both"):
        SpecOptions(toc_pages="1-2", glossary_pages="2")
    with pytest.raises(ValidationError):
        SpecOptions(drop_reserved=True)
    # The registry hands plain size options: spec defaults fill the rest.
    template = SpecTemplate(TemplateOptions(max_tokens=100, overlap_tokens=10))
    assert isinstance(template.options, SpecOptions) and template.options.max_tokens == 100


def test_find_references_forms() -> None:
    text = (
        "Table 3: a caption defines, it does not cite.\n"
        "See Table 4 and Fig. 7–1; Sections 2.1 and 2.2; §4.2, 表 7.5, then see 2.1.1 at 3.3 V."
    )
    assert find_references(text, {"Section 2.1.1", "Section 3.3"}) == [
        "Table 4",
        "Figure 7-1",
        "Section 2.1",
        "Section 2.2",
        "Section 4.2",
        "Table 7.5",
        "Section 2.1.1",
    ]
    # A bare number counts only when the document has that section.
    assert find_references("see 2.1.1", set()) == []


# --- auto: a generated spec PDF with one captioned register table --------------------------


def build_one_table_spec_pdf(path: Path) -> None:
    """A contents page, numbered sections (7.4.1), one register table under its `Table 32:`
    caption, figure captions and a glossary: a spec, though it holds a single table."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    body = styles["BodyText"]
    text = "The host controller moves data between the card and system memory. " * 3
    contents = ["7 Host Controller", "7.4 Host Control", "7.4.1 Register Layout", "8 Glossary"]
    story = [Paragraph("Contents", styles["Heading1"])]
    story += [
        Paragraph(f"{line} . . . . . . . . {page}", body)
        for line, page in zip(contents, "2233", strict=True)
    ]
    story += [
        PageBreak(),
        Paragraph("7 Host Controller", styles["Heading1"]),
        Paragraph(text, body),
    ]
    story += [Paragraph("Figure 3: Command timing", body), Paragraph(text, body)]
    story += [Paragraph("7.4 Host Control", styles["Heading2"]), Paragraph(text, body)]
    story += [Paragraph("7.4.1 Register Layout", styles["Heading3"]), Paragraph(text, body)]
    story += [Paragraph("Table 32: Host Control Register (Offset 0x28)", body)]
    grid = Table(
        [
            ["Bits", "Field", "Reset"],
            ["15:8", "Timeout Counter Value", "0x0E"],
            ["7:6", "DMA Select", "0b00"],
            ["5", "ADMA2 Enable", "0"],
        ]
    )
    grid.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    story += [grid, Paragraph("Figure 4: Register fields", body), Paragraph(text, body)]
    story += [Paragraph("8 Glossary", styles["Heading1"])]
    story += [Paragraph("ADMA: Advanced DMA.", body), Paragraph("SDR: Single data rate.", body)]
    SimpleDocTemplate(str(path), pagesize=A4).build(story)


@pytest.mark.slow
def test_auto_picks_spec_for_a_spec_with_one_captioned_table(tmp_path: Path) -> None:
    from rag_assets.normalize.adapt import to_ir
    from rag_assets.templates.select import choose_template

    path = tmp_path / "one-table-spec.pdf"
    build_one_table_spec_pdf(path)
    doc = to_ir(PyMuPDFParser().parse(path), doc_id="one-table", source_sha256="0" * 64)
    choice = choose_template(doc, "auto")
    assert choice.template == "spec", choice.reason
    for signal in ("1 tables (1 captioned)", "figure captions", "a glossary", "contents"):
        assert signal in choice.reason


def test_auto_spec_score_and_reason() -> None:
    from rag_assets.templates.select import choose_template

    sections = [element("heading", f"## 7.{n} Part {n}", level=2) for n in (1, 2, 3)]
    sections.append(element("heading", "## 2024 Outlook", level=2))  # a year, not a number
    table = element("table", "| Bits | Field |\n|---|---|\n| 15:8 | Timeout |")
    one_table = build([*sections, element("caption", "Table 32: Host Control"), table])
    assert choose_template(one_table, "auto").reason == (
        "auto: 1 tables (1 captioned) under 3 numbered section headings (score 2)"
    )
    uncaptioned = build([*sections, table])
    assert choose_template(uncaptioned, "auto").template == "semantic"
    report = build(
        [
            element("heading", "# Contents", level=1),
            *sections,
            element("paragraph", "Figure 1: Layout of the site."),
            element("heading", "## 8 Glossary", level=2),
        ]
    )
    choice = choose_template(report, "auto")
    assert (choice.template, choice.reason) == (
        "spec",
        "auto: 1 figure captions, a glossary, a table of contents"
        " under 4 numbered section headings (score 3)",
    )
    assert choose_template(build(sections), "auto").template == "semantic"
