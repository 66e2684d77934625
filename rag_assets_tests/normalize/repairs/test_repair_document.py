"""The whole repair pass: hand-built IR with exact expectations, then every adapter's real output.

Real output: Docling's own exports of two PDFs (flat heading levels, furniture), the PyMuPDF
path on a 16-page table and a Chinese standard, a generated PDF with running furniture and a
table over a page break, and DOCX/Markdown documents that must come through untouched.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rag_assets.contracts.ir import (
    DocumentElement,
    StandardizedDocument,
)
from rag_assets.normalize.adapt import to_ir
from rag_assets.normalize.docling_adapter import docling_to_ir
from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.normalize.repairs import repair_document
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets_tests.normalize.repairs.test_tables import HEADER, rows
from rag_assets_tests.support.builders import (
    BODY_BOX,
    doc_from_elements,
    heading,
    materialize_file,
    para,
    table,
)

FURNITURE = ("page_header", "page_footer")
HAN_SPACE_HAN = re.compile(r"([\u4e00-\u9fff])[ \u3000]+([\u4e00-\u9fff])")


# --- the whole pass ---------------------------------------------------------------------------


def test_repair_document_counts_and_keeps_furniture_out_of_the_markdown() -> None:
    doc = doc_from_elements(
        [
            heading("1 Scope", bbox=(72.0, 60.0, 300.0, 80.0)),
            heading("1.1 Terms", bbox=BODY_BOX),
            para("The implemen-\ntation runs."),
            table([HEADER, *rows(0, 2)], 1),
            para("- 1 -", 1, (280.0, 815.0, 310.0, 825.0)),
            table(rows(2, 4), 2, bbox=(72.0, 40.0, 520.0, 200.0)),
            para("- 2 -", 2, (280.0, 815.0, 310.0, 825.0)),
        ]
    )
    repaired = repair_document(doc)
    assert repaired.metadata["repairs"] == {
        "hyphens_joined": 1,
        "split_words_joined": 0,
        "cjk_spaces_removed": 0,
        "furniture_restored": 0,
        "furniture_retyped": 2,
        "tables_merged": 1,
        "heading_lines_split": 0,
        "heading_levels": 1,
        "furniture_dropped": 2,
    }
    assert "- 1 -" not in repaired.markdown and "- 2 -" not in repaired.markdown
    for element in repaired.elements:
        if element.type in FURNITURE:
            assert element.start_char == element.end_char
        else:
            assert repaired.markdown[element.start_char : element.end_char] == element.text
    assert repaired.markdown.startswith("# 1 Scope\n\n## 1.1 Terms\n\nThe implementation runs.")
    again = repair_document(repaired)
    assert again.elements == repaired.elements and again.markdown == repaired.markdown
    assert again.metadata["repairs"] == {
        **{k: 0 for k in repaired.metadata["repairs"]},
        "furniture_dropped": 2,
    }


# --- real output: Docling ---------------------------------------------------------------------

DECIMAL = re.compile(r"^(\d+(?:\.\d+)*)(?:\s|$)")


def docling_groundtruth(shared_fixtures: Path, stem: str) -> StandardizedDocument:
    parsed = ParsedDocument(
        parser="docling",
        parser_version="groundtruth",
        source_path=str(shared_fixtures / stem),
        file_format="pdf",
        native=json.loads(
            (shared_fixtures / f"{stem}.groundtruth.json").read_text(encoding="utf-8")
        ),
    )
    return docling_to_ir(parsed, doc_id=stem, source_sha256="0" * 64)


def plain(element: DocumentElement) -> str:
    return element.text.lstrip("#").strip()


def assert_nothing_lost(before: StandardizedDocument, after: StandardizedDocument) -> None:
    """Same elements in the same order, same text bar `#` marks: a chapter number and the title
    under it stay two headings."""
    assert [plain(e) for e in before.elements] == [plain(e) for e in after.elements]
    body = [e for e in after.elements if e.type not in FURNITURE]
    assert after.markdown == "\n\n".join(e.text for e in body)


def test_docling_redp5110_levels_agree_with_numbering(shared_fixtures: Path) -> None:
    before = docling_groundtruth(shared_fixtures, "pdf/redp5110_sampled")
    after = to_ir(
        ParsedDocument(
            parser="docling",
            parser_version="gt",
            source_path="redp",
            file_format="pdf",
            native=json.loads(
                (shared_fixtures / "pdf/redp5110_sampled.groundtruth.json").read_text()
            ),
        ),
        doc_id="pdf/redp5110_sampled",
        source_sha256="0" * 64,
    )
    assert {e.level for e in before.headings()} == {2}  # Docling flattens PDF section headers
    assert_nothing_lost(before, after)
    numbered = [(e.level, m[1]) for e in after.headings() if (m := DECIMAL.match(plain(e)))]
    assert len(numbered) == 10
    assert all(level == number.count(".") + 1 for level, number in numbered)
    by_title = {plain(e): e.level for e in after.headings()}
    # The chapter number and its title stay two headings, as the source prints them: `# 1`,
    # then `# Securing and protecting IBM DB2 data` (no repair joins them).
    outline = [e.text for e in after.headings()]
    chapter = outline.index("# 1")
    assert outline[chapter + 1] == "# Securing and protecting IBM DB2 data"
    assert by_title["Contents"] == by_title["Preface"] == 1
    assert all(e.text.startswith("#" * e.level + " ") for e in after.headings())
    assert after.metadata["repairs"] == {
        "hyphens_joined": 0,
        "split_words_joined": 0,
        "cjk_spaces_removed": 0,
        "furniture_restored": 0,
        "furniture_retyped": 0,
        "tables_merged": 0,
        "heading_lines_split": 0,
        "heading_levels": 17,
        "furniture_dropped": 20,
    }
    assert "© Copyright IBM Corp. 2014" not in after.markdown
    assert "© Copyright IBM Corp. 2014" in before.markdown


def test_docling_korean_report_levels_and_running_header(shared_fixtures: Path) -> None:
    before = docling_groundtruth(shared_fixtures, "pdf/normal_4pages")
    after = repair_document(before)
    assert_nothing_lost(before, after)
    outline = [(e.level, plain(e)) for e in after.headings()]
    sections = [title for level, title in outline if level == 1]
    # The last section's number is a heading of its own before its title, as Docling reads it.
    assert sections[2:] == [
        "들어가며 1",
        "코로나-19 관련 보험 현황 2",
        "문제점 3",
        "개선과제 4",
        "5",
        "맺으며",
    ]
    assert all(level == 2 for level, title in outline if title.startswith("("))
    assert sum(title.startswith("(") for _, title in outline) == 11
    # The running header Docling typed on page 2 it missed on page 4.
    assert [(e.type, e.page_start) for e in after.elements if e.text == "이슈와 논점"] == [
        ("page_header", 2),
        ("page_header", 4),
    ]
    assert "\n\n이슈와 논점\n\n" in before.markdown and "\n\n이슈와 논점\n\n" not in after.markdown
    assert after.metadata["repairs"]["heading_levels"] == 8  # `맺으며` is a heading of its own
    assert after.metadata["repairs"]["cjk_spaces_removed"] == 0  # Korean spaces words: kept


# --- real output: PyMuPDF ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pymupdf() -> PyMuPDFParser:
    return PyMuPDFParser()


def pymupdf_ir(parser: PyMuPDFParser, path: Path) -> StandardizedDocument:
    return pymupdf_to_ir(parser.parse(path), doc_id=path.stem, source_sha256="0" * 64)


@pytest.fixture(scope="module")
def warn_report(
    pymupdf: PyMuPDFParser, shared_fixtures: Path
) -> tuple[StandardizedDocument, StandardizedDocument]:
    before = pymupdf_ir(pymupdf, shared_fixtures / "pdf/WARN-Report-for-7-1-2015-to-03-25-2016.pdf")
    return before, repair_document(before)


def test_warn_report_is_one_table_with_every_row_and_one_header(warn_report) -> None:
    before, after = warn_report
    parts = [e.table for e in before.elements if e.type == "table" and e.table.num_cols == 7]
    assert len(parts) == 15  # one per page, as the adapter gives them
    tables = [e for e in after.elements if e.type == "table"]
    assert len(tables) == 2  # the 15-page notice table and the month summary after it
    notices, summary = tables
    assert (notices.page_start, notices.page_end, notices.table.header_rows) == (1, 15, 1)
    grid = notices.table.grid()
    assert grid == [row for part in parts for row in part.grid()]
    assert len(grid) == 634 and grid.count(grid[0]) == 1 and grid[0][0] == "Notice Date"
    assert [c.row for c in notices.table.cells if c.is_header] == [0] * 7
    assert notices.text.count("Notice Date") == 1 and notices.text == table_to_markdown(
        notices.table
    )
    assert (summary.page_start, summary.page_end, summary.table.num_rows) == (15, 16, 11)
    assert summary.table.grid()[-1][:2] == ["Total", "632"]
    assert after.metadata["repairs"]["tables_merged"] == 15


def test_anhui_standard_clauses_tables_and_cjk_spacing(
    pymupdf: PyMuPDFParser, shared_fixtures: Path
) -> None:
    before = pymupdf_ir(
        pymupdf, shared_fixtures / "pdf/issue-336-example_zh_anhui_land_use_standard.pdf"
    )
    after = repair_document(before)
    # This page holds no heading: "7.6" is table 7.6's caption, the clauses are 第 7.9 条 ... text.
    assert after.headings() == []
    captions = [e.text for e in after.elements if e.type == "caption"]
    assert captions[:2] == [
        "表 7.5 停车区用地指标基准值（公顷 / 处）",
        "表 7.6 停车区用地指标调整系数",
    ]
    tables = [e for e in after.elements if e.type == "table"]
    assert [t.table.caption for t in tables[:2]] == captions[:2]
    clauses = [e.text for e in after.elements if e.type == "paragraph" and e.text.startswith("第")]
    assert [c.split(" ", 3)[:3] for c in clauses] == [
        ["第", "7.9", "条"],
        ["第", "7.10", "条"],
        ["第", "7.11", "条"],
    ]
    assert (
        "桥隧养护管理站一般在独立特大桥" in after.markdown
    )  # "桥隧 养护" joined at the line break
    assert "其用地指标按表 7.6 中的系数进行调整" in after.markdown
    assert [m.group() for m in HAN_SPACE_HAN.finditer(after.markdown)] == [
        "条 服",
        "条 公",
        "条 养",
    ]
    assert HAN_SPACE_HAN.search(before.markdown.replace("条 ", "条"))  # the parser did inject some
    assert "安徽省建设用地使用标准" not in after.markdown and not after.markdown.endswith("173")
    assert after.metadata["repairs"]["cjk_spaces_removed"] == 9
    assert_nothing_changed_but_spacing(before, after)


def assert_nothing_changed_but_spacing(
    before: StandardizedDocument, after: StandardizedDocument
) -> None:
    def squeeze(doc: StandardizedDocument) -> list[str]:
        return ["".join(e.text.split()) for e in doc.elements]

    assert squeeze(before) == squeeze(after)


HEADER_LINE = "Widget Protocol Specification"
REGISTER_ROWS = [["Offset", "Name", "Access", "Reset"]] + [
    [f"0x{4 * i:02X}", f"REG{i}", "RW" if i % 2 else "RO", str(i)] for i in range(60)
]


def build_spec_pdf(path: Path) -> None:
    """Four pages: running header, a date line under it and `- N -` on every page; a register
    table whose header row reportlab repeats after the page break."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    text = "The controller keeps a queue of pending requests and serves them in order. " * 5
    grid = Table(REGISTER_ROWS, repeatRows=1)
    grid.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    story = [Paragraph("1 Overview", styles["Heading1"])]
    story += [Paragraph(text, styles["BodyText"]) for _ in range(26)]
    story += [
        Paragraph("1.1 Register map", styles["Heading2"]),
        Paragraph(text, styles["BodyText"]),
    ]
    story += [grid, Paragraph("1.2 Reset", styles["Heading2"]), Paragraph(text, styles["BodyText"])]

    def furniture(canvas, doc) -> None:
        canvas.saveState()
        canvas.setFont("Helvetica", 10)
        canvas.drawString(72, 780, HEADER_LINE)
        canvas.drawString(72, 766, "2026-05-15")
        canvas.drawCentredString(297, 60, f"- {doc.page} -")
        canvas.restoreState()

    SimpleDocTemplate(str(path), pagesize=A4).build(
        story, onFirstPage=furniture, onLaterPages=furniture
    )


def test_generated_pdf_furniture_out_and_table_merged(
    pymupdf: PyMuPDFParser, tmp_path: Path
) -> None:
    path = tmp_path / "spec.pdf"
    build_spec_pdf(path)
    before = pymupdf_ir(pymupdf, path)
    after = repair_document(before)
    pages = after.page_count
    assert pages == 4
    furniture = [(e.type, e.page_start, e.text) for e in after.elements if e.type in FURNITURE]
    assert [p for kind, p, text in furniture if kind == "page_header" and HEADER_LINE in text] == [
        1,
        2,
        3,
        4,
    ]
    assert [p for kind, p, text in furniture if kind == "page_footer" and text == f"- {p} -"] == [
        1,
        2,
        3,
        4,
    ]
    assert all("2026-05-15" in text for kind, _, text in furniture if kind == "page_header")
    for needle in (HEADER_LINE, "2026-05-15", "- 2 -"):
        assert needle not in after.markdown
    # The layout model takes the running header for a heading or body text on some pages.
    missed = [e for e in before.elements if e.type not in FURNITURE and HEADER_LINE in e.text]
    assert after.metadata["repairs"]["furniture_retyped"] == len(missed)
    assert [(e.level, plain(e)) for e in after.headings()] == [
        (1, "1 Overview"),
        (2, "1.1 Register map"),
        (2, "1.2 Reset"),
    ]
    tables = [e for e in after.elements if e.type == "table"]
    assert len(tables) == 1
    assert tables[0].table.grid() == REGISTER_ROWS
    assert (tables[0].page_start, tables[0].page_end, tables[0].table.header_rows) == (3, 4, 1)
    assert len(after.elements) == len(before.elements) - after.metadata["repairs"]["tables_merged"]


# --- real output that needs no repair ------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "docx/unit_test_headers_numbered.docx",
        "md/docling_deployment.md",
        "legal/劳动合同法(2012-12-28).md",
    ],
)
def test_documents_whose_levels_agree_come_through_untouched(
    name: str, shared_fixtures: Path
) -> None:
    from rag_assets.parsers.docling import DoclingParser

    path = shared_fixtures / name
    parsed = DoclingParser().parse(path, path.suffix.lstrip("."))
    before = docling_to_ir(parsed, doc_id=name, source_sha256="0" * 64)
    after = repair_document(before)
    assert after.elements == before.elements and after.markdown == before.markdown
    assert set(after.metadata["repairs"].values()) == {0}


def test_unstructured_fast_pdf_levels_follow_numbering(shared_fixtures: Path) -> None:
    """Unstructured's fast PDF path puts every heading at level 1; the repair nests them."""
    from rag_assets.normalize.unstructured_adapter import unstructured_to_ir
    from rag_assets.parsers.unstructured import UnstructuredParser

    parsed = UnstructuredParser().parse(shared_fixtures / "pdf/redp5110_sampled.pdf", "pdf")
    before = unstructured_to_ir(parsed, doc_id="redp", source_sha256="0" * 64)
    after = to_ir(parsed, doc_id="redp", source_sha256="0" * 64)
    assert {e.level for e in before.headings()} == {1}
    numbered = [(e.level, m[1]) for e in after.headings() if (m := DECIMAL.match(plain(e)))]
    assert len(numbered) >= 8
    assert all(level == number.count(".") + 1 for level, number in numbered)
    assert after.metadata["repairs"]["heading_levels"] > 0


@pytest.mark.slow
def test_normalized_documents_metadata_shows_the_repair_counts(tmp_path: Path) -> None:
    source = tmp_path / "guide.md"
    source.write_text("# Guide\n\n## 1 Scope\n\n這是 中文 句子。\n", encoding="utf-8")
    result, _ = materialize_file(source, tmp_path / "data")
    (materialization,) = [m for m in result.asset_materializations_for_node("normalized_documents")]
    assert materialization.metadata["repairs"].value == {
        "hyphens_joined": 0,
        "split_words_joined": 0,
        "cjk_spaces_removed": 0,
        "furniture_restored": 0,
        "furniture_retyped": 0,
        "tables_merged": 0,
        "heading_lines_split": 0,
        "heading_levels": 0,
        "furniture_dropped": 0,
    }


@pytest.mark.parametrize("file_format", ["md", "html"])
def test_unstructured_markup_levels_are_kept(tmp_path: Path, file_format: str) -> None:
    from rag_assets.parsers.unstructured import UnstructuredParser

    path = tmp_path / f"levels.{file_format}"
    if file_format == "md":
        path.write_text("# Header 1\n\nA.\n\n## Header 2\n\nB.\n\n### Header 3\n\nC.\n")
    else:
        path.write_text(
            "<html><body><h1>Header 1</h1><p>A.</p><h2>Header 2</h2><p>B.</p>"
            "<h3>Header 3</h3><p>C.</p></body></html>"
        )
    doc = to_ir(UnstructuredParser().parse(path, file_format), doc_id="u", source_sha256="0" * 64)
    assert [(e.level, e.text) for e in doc.headings()] == [
        (1, "# Header 1"),
        (2, "## Header 2"),
        (3, "### Header 3"),
    ]


@pytest.mark.parametrize("levels", [(1, 2, 3), (1, 1, 1)])
def test_docling_pdf_levels_are_set_from_real_numbering(levels) -> None:
    """A PDF's levels are the layout model's guess from the page, varied or flat: the headings'
    numbers set them (`2 Design` is no child of `1.1 Terms`)."""
    from docling_core.types.doc import DoclingDocument, ProvenanceItem, Size
    from docling_core.types.doc.base import BoundingBox

    doc = DoclingDocument(name="spec")
    doc.add_page(page_no=1, size=Size(width=600, height=800))
    box = ProvenanceItem(page_no=1, bbox=BoundingBox(l=72, t=700, r=500, b=680), charspan=(0, 1))
    doc.add_title(text="Widget Spec", prov=box)
    for level, text in zip(levels, ("1 Scope", "1.1 Terms", "2 Design"), strict=True):
        doc.add_heading(text=text, level=level, prov=box)
        doc.add_text(label="text", text=f"Body of {text}.", prov=box)
    parsed = ParsedDocument(
        parser="docling",
        parser_version="test",
        source_path="spec.pdf",
        file_format="pdf",
        native=doc.export_to_dict(),
    )
    after = to_ir(parsed, doc_id="spec", source_sha256="0" * 64)
    assert [e.level for e in after.headings() if e.type == "heading"] == [2, 3, 2]


@pytest.mark.parametrize(
    ("file_format", "quote"),
    [
        ("md", "> # Quoted\n>\n> Quoted text.\n"),
        ("html", "<blockquote><h2>Quoted</h2><p>Quoted text.</p></blockquote>"),
    ],
)
def test_unstructured_quoted_heading_opens_no_section(
    tmp_path: Path, file_format: str, quote: str
) -> None:
    from rag_assets.parsers.unstructured import UnstructuredParser

    path = tmp_path / f"quote.{file_format}"
    if file_format == "md":
        path.write_text(f"# Guide\n\n## Usage\n\nBefore.\n\n{quote}\nAfter the quote.\n")
    else:
        path.write_text(
            f"<html><body><h1>Guide</h1><h2>Usage</h2><p>Before.</p>{quote}"
            "<p>After the quote.</p></body></html>"
        )
    doc = to_ir(UnstructuredParser().parse(path, file_format), doc_id="u", source_sha256="0" * 64)
    assert [(e.type, e.text) for e in doc.elements] == [
        ("heading", "# Guide"),
        ("heading", "## Usage"),
        ("paragraph", "Before."),
        ("paragraph", "Quoted"),
        ("paragraph", "Quoted text."),
        ("paragraph", "After the quote."),
    ]
