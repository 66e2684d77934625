"""An element that runs over pages (a table merged across page breaks, a list continued on the
next page) lets each chunk of it cite the pages of its own lines, not the element's whole range."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument, TableCell, TableData
from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.normalize.repairs.tables import merge_continued_tables
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets.tables.models import TableMarkdown
from rag_assets.tables.structure import with_table_markdown
from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.registry import get_template
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import doc_from_elements

HEADER = ["Offset", "Register", "Reset value"]
SMALL = TemplateOptions(max_tokens=60, overlap_tokens=0)


def register_rows(start: int, stop: int) -> list[list[str]]:
    return [[f"0x{i:02X}", f"REG{i} control register", f"{i * 3}"] for i in range(start, stop)]


def table_part(rows: list[list[str]], page: int) -> DocumentElement:
    data = TableData(
        num_rows=len(rows),
        num_cols=3,
        cells=[
            TableCell(row=r, col=c, text=text, is_header=r == 0)
            for r, row in enumerate(rows)
            for c, text in enumerate(row)
        ],
        header_rows=1,
    )
    return DocumentElement(
        type="table", text=table_to_markdown(data), page_start=page, page_end=page, table=data
    )


@pytest.fixture
def merged_register_table() -> StandardizedDocument:
    # Page 1: REG0-REG9; page 2: REG10-REG19 under a repeated header; page 3: REG20-REG29.
    parts = [
        DocumentElement(type="heading", text="## 2 Registers", level=2),
        table_part([HEADER, *register_rows(0, 10)], 1),
        table_part([HEADER, *register_rows(10, 20)], 2),
        table_part([HEADER, *register_rows(20, 30)], 3),
    ]
    elements, merged = merge_continued_tables(parts)
    assert merged == 2
    return doc_from_elements(elements)


def register_page(number: int) -> int:
    return 1 + number // 10


def test_merged_table_records_where_each_page_starts(merged_register_table) -> None:
    table = merged_register_table.elements[1]
    assert (table.page_start, table.page_end) == (1, 3)
    # Header line and rule, then REG0 on line 2; REG10 (page 2) on line 12, REG20 on line 22.
    assert table.metadata["line_pages"] == [[0, 1], [12, 2], [22, 3]]
    assert "row_pages" not in table.metadata
    lines = table.text.split("\n")
    assert lines[12].startswith("| 0x0A | REG10") and lines[22].startswith("| 0x14 | REG20")
    start = table.text.index("REG15")
    assert table.pages_of(start, start + 5) == (2, 2)
    assert table.pages_of(table.text.index("REG8"), table.text.index("REG21")) == (1, 3)
    assert table.pages_of(0, 10) == (1, 1)  # the header line


@pytest.mark.parametrize("template", ["semantic", "fixed", "spec"])
def test_every_chunk_of_a_long_table_cites_its_own_rows_pages(
    merged_register_table, template: str
) -> None:
    chunks = get_template(template, SMALL).chunk(merged_register_table, ApproxTokenCounter())
    cited = [c for c in chunks if re.search(r"REG\d+", c.text)]
    assert len(cited) >= 4
    for chunk in cited:
        numbers = [int(n) for n in re.findall(r"REG(\d+)", chunk.text)]
        assert (chunk.page_start, chunk.page_end) == (
            register_page(min(numbers)),
            register_page(max(numbers)),
        ), chunk.text
    assert {c.page_start for c in cited} == {1, 2, 3}


def test_table_markdown_that_keeps_the_lines_keeps_the_pages(merged_register_table) -> None:
    table = merged_register_table.elements[1]
    same_lines = table.text.replace("control register", "ctrl")
    other_lines = "\n".join(table.text.split("\n")[:5])

    def chosen(markdown: str) -> DocumentElement:
        choice = TableMarkdown(
            doc_id="d",
            element_index=1,
            page_start=1,
            page_end=3,
            markdown=markdown,
            method="vision",
            cache_key="k",
        )
        return with_table_markdown(merged_register_table, [choice]).elements[1]

    assert chosen(same_lines).metadata["line_pages"] == table.metadata["line_pages"]
    # Markdown with other lines (a vision model's rows): the whole element's range again.
    assert "line_pages" not in chosen(other_lines).metadata
    assert chosen(other_lines).pages_of(0, 10) == (1, 3)


def build_list_pdf(path: Path) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import ListFlowable, ListItem, Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    text = "The controller keeps a queue of pending requests and serves them in order. " * 5
    steps = [
        ListItem(Paragraph(f"Step {i}: check REG{i} and clear its flag first.", styles["BodyText"]))
        for i in range(1, 25)
    ]
    story = [Paragraph("1 Overview", styles["Heading1"])]
    story += [Paragraph(text, styles["BodyText"]) for _ in range(9)]
    story += [ListFlowable(steps, bulletType="bullet"), Paragraph("After.", styles["BodyText"])]
    SimpleDocTemplate(str(path), pagesize=A4).build(story)


def test_a_list_continued_on_the_next_page_cites_each_item_page(tmp_path: Path) -> None:
    path = tmp_path / "steps.pdf"
    build_list_pdf(path)
    with pymupdf.open(path) as pdf:
        page_of_step = {
            int(n): page.number + 1
            for page in pdf
            for n in re.findall(r"Step (\d+):", page.get_text())
        }
    assert set(page_of_step.values()) == {1, 2}
    doc = pymupdf_to_ir(PyMuPDFParser().parse(path), doc_id="steps", source_sha256="0" * 64)
    (steps,) = [e for e in doc.elements if e.type == "list"]
    first_on_2 = min(n for n, page in page_of_step.items() if page == 2)
    assert steps.metadata["line_pages"] == [[0, 1], [first_on_2 - 1, 2]]
    chunks = get_template("semantic", SMALL).chunk(doc, ApproxTokenCounter())
    listed = [c for c in chunks if "Step " in c.text]
    assert len(listed) >= 3
    for chunk in listed:
        numbers = [int(n) for n in re.findall(r"Step (\d+):", chunk.text)]
        assert (chunk.page_start, chunk.page_end) == (
            page_of_step[min(numbers)],
            page_of_step[max(numbers)],
        )
