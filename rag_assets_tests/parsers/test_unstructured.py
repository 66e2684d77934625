"""Unstructured as a Layer 1 parser and its Layer 2 adapter, on the real fixtures.

The `*.groundtruth.md` files are Docling's markdown of the same documents: the IR's headings,
tables and list items are compared with them where Unstructured sees the same structure, and the
known differences are spelled out where it does not.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.normalize.unstructured_adapter import unstructured_to_ir
from rag_assets.parsers import unstructured as unstructured_parser
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.page_chrome import prepare_html
from rag_assets.parsers.unstructured import UnstructuredParser
from rag_assets_tests.conftest import REPO_ROOT

# --- reading markdown: strict on content, lenient on formatting --------------------------------

_LINK = re.compile(r"!?\[([^\]]*)\]\((?:[^()]|\([^()]*\))*\)")
_HEADING = re.compile(r"(#{1,6})\s+(.*)")
_ITEM = re.compile(r"( *)(?:[-*+]|\d+\.)\s+(.*)")
_RULE_CELL = re.compile(r"\s*:?-+:?\s*")
_NUMBERING = re.compile(r"^[\d.]+\s+")  # "1.2.1." (Unstructured) vs "1.2.1" (Docling)


def norm(text: str) -> str:
    """Content only: links become their text; escapes, emphasis, ligatures and spacing go."""
    text = html.unescape(_LINK.sub(r"\1", text))
    text = re.sub(r"\\(.)", r"\1", text)
    text = re.sub(r"[*`]|__", "", text)
    return "".join(unicodedata.normalize("NFKC", text).split())


def md_headings(markdown: str) -> list[tuple[int, str]]:
    """(`#` depth, text) of every heading outside fenced code."""
    headings, in_fence = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (match := _HEADING.match(line)):
            headings.append((len(match[1]), match[2].strip()))
    return headings


def md_tables(markdown: str) -> list[list[list[str]]]:
    tables: list[list[list[str]]] = []
    table: list[list[str]] | None = None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            table = None
            continue
        cells = [norm(c) for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if all(_RULE_CELL.fullmatch(c) for c in cells):
            continue
        if table is None:
            table = []
            tables.append(table)
        table.append(cells)
    return tables


def list_items(markdown: str) -> list[tuple[int, str]]:
    """(nesting depth, text) of list lines."""
    return [
        (len(m[1]) // 4, norm(m[2])) for line in markdown.splitlines() if (m := _ITEM.match(line))
    ]


def assert_well_formed(doc: StandardizedDocument) -> None:
    for e in doc.elements:
        assert doc.markdown[e.start_char : e.end_char] == e.text
        if e.type in ("title", "heading"):
            assert e.text.startswith("#" * e.level + " ")
        if doc.page_count:
            assert 1 <= e.page_start <= e.page_end <= doc.page_count
        if e.bbox is not None:
            left, top, right, bottom = e.bbox
            assert 0 <= left <= right and 0 <= top <= bottom


# --- fixtures: one parser, each document parsed once --------------------------------------------


@pytest.fixture(scope="module")
def parser() -> UnstructuredParser:
    return UnstructuredParser()


@pytest.fixture(scope="module")
def parsed(shared_fixtures: Path, parser: UnstructuredParser) -> Callable[[str], ParsedDocument]:
    cache: dict[str, ParsedDocument] = {}

    def load(name: str) -> ParsedDocument:
        if name not in cache:
            path = shared_fixtures / name
            cache[name] = parser.parse(path, path.suffix.lstrip("."))
        return cache[name]

    return load


@pytest.fixture(scope="module")
def ir(parsed: Callable[[str], ParsedDocument]) -> Callable[[str], StandardizedDocument]:
    def load(name: str) -> StandardizedDocument:
        return unstructured_to_ir(parsed(name), doc_id=name, source_sha256="0" * 64)

    return load


def groundtruth(shared_fixtures: Path, name: str) -> str:
    """The groundtruth beside a document: `x.pdf` -> `x.groundtruth.md`, `x.docx` -> `x.docx...`."""
    stem = name.removesuffix(".pdf")
    return (shared_fixtures / f"{stem}.groundtruth.md").read_text(encoding="utf-8")


def _ir_headings(doc: StandardizedDocument) -> list[tuple[int, str]]:
    return [(e.level or 0, e.text.lstrip("#").strip()) for e in doc.headings()]


# --- DOCX ----------------------------------------------------------------------------------------


def test_docx_tables_match_groundtruth_cell_by_cell(ir, shared_fixtures):
    name = "docx/word_tables.docx"
    doc = ir(name)
    expected = md_tables(groundtruth(shared_fixtures, name))
    tables = [e for e in doc.elements if e.type == "table"]
    assert len(tables) == len(expected) == 7
    for element, rows in zip(tables, expected, strict=True):
        assert [[norm(c) for c in row] for row in element.table.grid()] == rows
        assert element.text.startswith("| ")
    spans = {(c.row_span, c.col_span) for e in tables for c in e.table.cells}
    assert {(1, 2), (2, 1), (3, 1)} <= spans
    assert doc.page_count is None
    assert_well_formed(doc)


def test_docx_heading_levels_follow_word_styles(ir, parsed, shared_fixtures):
    name = "docx/unit_test_headers_numbered.docx"
    doc = ir(name)
    expected = md_headings(groundtruth(shared_fixtures, name))
    # Word's custom style "heading 2 invisible num" is no heading style to Unstructured.
    assert (3, "REFERENCES") in expected
    expected = [
        (level, _NUMBERING.sub("", text)) for level, text in expected if text != "REFERENCES"
    ]
    got = [(level, _NUMBERING.sub("", text)) for level, text in _ir_headings(doc)]
    assert got == expected
    assert doc.elements[0].type == "title" and doc.title == "Test Document"
    assert parsed(name).native["title_style_texts"] == ["Test Document"]


def test_docx_nested_numbered_list_is_one_list(ir, shared_fixtures):
    name = "docx/unit_test_headers_numbered.docx"
    lists = [e for e in ir(name).elements if e.type == "list"]
    assert len(lists) == 1
    assert list_items(lists[0].text) == list_items(groundtruth(shared_fixtures, name))


# --- HTML ----------------------------------------------------------------------------------------


def test_html_headings_with_depth(ir, shared_fixtures):
    name = "html/wiki_duck.html"
    expected = md_headings(groundtruth(shared_fixtures, name))
    # Wikipedia's table-of-contents box title: navigation, which Unstructured leaves out.
    expected.remove((2, "Contents"))
    assert _ir_headings(ir(name)) == expected
    assert ir(name).title == "Duck"


def test_html_tables_keep_rows_and_header_cells(ir, shared_fixtures):
    doc = ir("html/wiki_duck.html")
    tables = [e.table for e in doc.elements if e.type == "table"]
    expected = md_tables(groundtruth(shared_fixtures, "html/wiki_duck.html"))
    # The groundtruth's second table is the authority-control box, page navigation, dropped.
    assert len(tables) == len(expected) - 1 == 1
    infobox = [[norm(c) for c in row] for row in tables[0].grid()]
    for key, value in [("Domain:", "Eukaryota"), ("Class:", "Aves"), ("Family:", "Anatidae")]:
        assert [key, value] in infobox
        assert [norm(key), norm(value)] in expected[0]
    assert tables[0].header_rows == 1 and tables[0].cells[0].is_header  # <th>Duck</th>
    assert_well_formed(doc)


def test_html_row_headers(parser: UnstructuredParser, tmp_path: Path) -> None:
    path = tmp_path / "authority.html"
    path.write_text(
        "<table><tr><th colspan='2'>Authority control</th></tr>"
        "<tr><th>National</th><td><ul><li>United States</li><li>France</li></ul></td></tr>"
        "<tr><th>Other</th><td>IdRef</td></tr></table>",
        encoding="utf-8",
    )
    doc = unstructured_to_ir(parser.parse(path, "html"), doc_id="a", source_sha256="0" * 64)
    (table,) = [e.table for e in doc.elements if e.type == "table"]
    assert table.grid()[1] == ["National", "United States France"]
    assert [c.is_header for c in table.cells if c.row == 1] == [True, False]  # a row header


def test_html_list_items_agree_with_groundtruth(ir, shared_fixtures):
    ours = {text for _, text in list_items(ir("html/wiki_duck.html").markdown)}
    # The groundtruth's items that are the page's content, not its chrome (dropped before parsing).
    cleaned, _ = prepare_html((shared_fixtures / "html/wiki_duck.html").read_bytes())
    content = norm(BeautifulSoup(cleaned, "html.parser").get_text())
    items = [text for _, text in list_items(groundtruth(shared_fixtures, "html/wiki_duck.html"))]
    expected = [text for text in items if text in content]
    assert len(expected) > 70
    recall = sum(text in ours for text in expected) / len(expected)
    assert recall >= 0.8, recall


# --- Markdown ------------------------------------------------------------------------------------


def test_markdown_headings_and_fenced_hash_lines(ir, shared_fixtures):
    name = "md/docling_deployment.md"
    source = (shared_fixtures / name).read_text(encoding="utf-8")
    doc = ir(name)
    assert [(lv, norm(t)) for lv, t in _ir_headings(doc)] == [
        (lv, norm(t)) for lv, t in md_headings(source)
    ]
    fenced_hash_lines = [
        line.strip() for block in re.findall(r"```\w*\n(.*?)```", source, re.DOTALL)
        for line in block.splitlines() if line.lstrip().startswith("#")
    ]  # fmt: skip
    assert len(fenced_hash_lines) == 7
    code = "\n".join(e.text for e in doc.elements if e.type == "code")
    heading_texts = {e.text for e in doc.headings()}
    for line in fenced_hash_lines:
        assert line in code
        assert all(line.lstrip("# ") not in text for text in heading_texts)
    assert all(e.text.startswith("```") for e in doc.elements if e.type == "code")
    assert len([e for e in doc.elements if e.type == "table"]) == 3
    assert_well_formed(doc)


# --- PDF -----------------------------------------------------------------------------------------


def test_pdf_fast_pages_and_heading_recall(ir, parsed, shared_fixtures):
    name = "pdf/redp5110_sampled.pdf"
    doc = ir(name)
    assert doc.page_count == 18 and parsed(name).native["strategy"] == "fast"
    assert doc.metadata["pdf_strategy"] == "fast"
    assert_well_formed(doc)
    starts = [e.page_start for e in doc.elements]
    # Page 17 is blank: Docling's export has nothing on it either.
    assert starts == sorted(starts) and set(starts) == set(range(1, 19)) - {17}
    # Heading pages from Docling's full-pipeline export of the same PDF.
    export = json.loads((shared_fixtures / "pdf/redp5110_sampled.groundtruth.json").read_text())
    expected_pages: dict[str, set[int]] = {}
    for item in export["texts"]:
        if item["label"] in ("title", "section_header"):
            expected_pages.setdefault(norm(item["text"]), set()).add(item["prov"][0]["page_no"])
    expected = [norm(text) for _, text in md_headings(groundtruth(shared_fixtures, name))]
    ours: dict[str, set[int]] = {}
    for e in doc.headings():
        ours.setdefault(norm(e.text.lstrip("#")), set()).add(e.page_start)
    found = [text for text in expected if text in ours]
    # Measured: 17 of 22. Missed: a heading split over two lines, a bare chapter number "1",
    # and headings pdfminer merged into the paragraph below them.
    assert len(found) / len(expected) >= 0.75, sorted(set(expected) - set(found))
    for text in found:
        assert ours[text] & expected_pages[text], text
    # fast gives no heading depth, and no tables.
    assert {e.level for e in doc.headings()} == {1}
    assert not [e for e in doc.elements if e.type == "table"]
    assert any(e.type == "page_footer" for e in doc.elements)
    assert unstructured_parser.SPACY_FALLBACK_NOTE in parsed(name).notes or (
        unstructured_parser._spacy_model_installed()
    )


def _write_small_pdf(path: Path) -> None:
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=letter)  # 612 x 792 points
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(72, 700, "Introduction")
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 660, "The pump moves water from the tank. It runs on mains power.")
    pdf.drawString(90, 620, "- Check the inlet valve before starting.")
    pdf.drawString(90, 590, "- Check the outlet valve before starting.")
    pdf.showPage()
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(72, 700, "Maintenance")
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 660, "Clean the filter every month. Replace it every year.")
    pdf.save()


@pytest.fixture(scope="module")
def small_pdf(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pdf") / "small.pdf"
    _write_small_pdf(path)
    return path


def test_generated_pdf_pages_boxes_and_types(parser, small_pdf):
    doc = unstructured_to_ir(parser.parse(small_pdf, "pdf"), doc_id="small", source_sha256="0")
    assert_well_formed(doc)
    assert doc.page_count == 2
    by_text = {e.text: e for e in doc.elements}
    intro, maintenance = by_text["# Introduction"], by_text["# Maintenance"]
    assert (intro.page_start, maintenance.page_start) == (1, 2)
    assert doc.title == "Introduction"
    # Drawn at x=72, baseline y=700 from the bottom: the top-left box starts ~792-700-18 down.
    left, top, right, bottom = intro.bbox
    assert left == pytest.approx(72, abs=1)
    assert 792 - 700 - 18 <= top < bottom <= 792 - 700 + 6
    lists = [e for e in doc.elements if e.type == "list"]
    assert len(lists) == 1 and lists[0].page_start == 1
    assert lists[0].text.splitlines() == [
        "- Check the inlet valve before starting.",
        "- Check the outlet valve before starting.",
    ]
    paragraphs = [e for e in doc.elements if e.type == "paragraph"]
    assert [p.page_start for p in paragraphs] == [1, 2]


def test_text_file_parses_with_spacy_note(parser, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text(
        "SAFETY NOTES\n\nThe pump moves water from the tank. It runs on mains power and must be "
        "earthed.\n\n- keep the lid closed\n- wear gloves\n",
        encoding="utf-8",
    )
    parsed_txt = parser.parse(path, "txt")
    doc = unstructured_to_ir(parsed_txt, doc_id="notes", source_sha256="0")
    assert [e.type for e in doc.elements] == ["heading", "paragraph", "list"]
    assert doc.elements[2].text == "- keep the lid closed\n- wear gloves"
    assert doc.page_count is None and all(e.page_start == 1 for e in doc.elements)
    if not unstructured_parser._spacy_model_installed():
        assert unstructured_parser.SPACY_FALLBACK_NOTE in parsed_txt.notes


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("file_format", ["pdf", "docx", "html", "md", "txt"])
def test_zero_byte_file_raises(parser, tmp_path, file_format):
    path = tmp_path / f"empty.{file_format}"
    path.write_bytes(b"")
    with pytest.raises(DocumentError, match=rf"empty\.{file_format} is empty \(0 bytes\)"):
        parser.parse(path, file_format)


@pytest.mark.parametrize(
    ("file_format", "message"),
    [
        ("pdf", r"could not be read as PDF: .*Data format error"),
        ("docx", r"could not be read as DOCX: not a ZIP archive"),
        ("html", r"is binary \(it holds NUL bytes\), not HTML"),
        ("md", r"is binary"),
        ("txt", r"is binary"),
    ],
)
def test_garbage_file_raises(parser, tmp_path, file_format, message):
    path = tmp_path / f"garbage.{file_format}"
    path.write_bytes(b"not a real document\n" + bytes(range(256)) * 8)
    with pytest.raises(DocumentError, match=message) as raised:
        parser.parse(path, file_format)
    assert "\n" not in str(raised.value)


def test_unknown_format_and_strategy_raise(parser, tmp_path):
    with pytest.raises(DocumentError, match="not 'xlsx'"):
        parser.parse(tmp_path / "sheet.xlsx", "xlsx")
    with pytest.raises(DocumentError, match="cannot be read"):
        parser.parse(tmp_path / "nowhere.pdf", "pdf")
    with pytest.raises(ConfigurationError, match="unknown Unstructured PDF strategy"):
        UnstructuredParser(pdf_strategy="ocr_only")


# --- hi_res: only with its model in the local cache ----------------------------------------------


def test_hi_res_model_constants_match_unstructured_inference():
    from unstructured_inference.models.yolox import MODEL_TYPES

    args, _ = MODEL_TYPES[unstructured_parser.HI_RES_MODEL_NAME]._raw_dict["model_path"].info
    assert args == (unstructured_parser.HI_RES_MODEL_REPO, unstructured_parser.HI_RES_MODEL_FILE)


def test_hi_res_available_needs_tesseract_and_cached_model(monkeypatch, tmp_path):
    from huggingface_hub import constants

    parser = UnstructuredParser(pdf_strategy="hi_res")
    monkeypatch.setattr(unstructured_parser.shutil, "which", lambda name: None)
    assert parser.hi_res_available() == (
        False,
        "hi_res runs Tesseract OCR on every page and `tesseract` is not on PATH",
    )
    monkeypatch.setattr(unstructured_parser.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    available, reason = parser.hi_res_available()
    assert not available and "not in the local Hugging Face cache" in reason
    # A cache laid out as huggingface_hub lays it out makes it available (no model is loaded).
    repo = tmp_path / f"models--{unstructured_parser.HI_RES_MODEL_REPO.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    model = repo / "snapshots" / "abc123" / unstructured_parser.HI_RES_MODEL_FILE
    model.parent.mkdir(parents=True)
    model.write_bytes(b"onnx")
    assert parser.hi_res_available() == (True, f"layout model found at {model}")


def test_hi_res_without_models_falls_back_to_fast_with_note(small_pdf):
    parser = UnstructuredParser(pdf_strategy="hi_res")
    available, why_not = parser.hi_res_available()
    if available:
        pytest.skip("hi_res models are present on this machine")
    result = parser.parse(small_pdf, "pdf")
    assert result.native["strategy"] == "fast"
    assert f"hi_res requested, fast used instead: {why_not}" in result.notes


# --- adapter details on hand-made element lists --------------------------------------------------


def _parsed(elements: list[dict], page_sizes: list[list[float]] | None = None) -> ParsedDocument:
    native: dict = {"elements": elements}
    if page_sizes:
        native["page_sizes"] = page_sizes
    return ParsedDocument(
        parser="unstructured",
        parser_version="test",
        source_path="x.pdf",
        file_format="pdf",
        page_count=len(page_sizes) if page_sizes else None,
        native=native,
    )


def test_pixel_and_point_coordinates_become_points_top_left():
    pixels = {"system": "PixelSpace", "layout_width": 1700, "layout_height": 2200}
    points = {"system": "PointSpace", "layout_width": 612, "layout_height": 792}
    elements = [
        {
            "type": "NarrativeText",
            "element_id": "a",
            "text": "rendered at 200 dpi",
            "metadata": {
                "page_number": 1,
                "coordinates": {**pixels, "points": [[200, 100], [200, 300], [1000, 300], [1000, 100]]},
            },
        },
        {
            "type": "NarrativeText",
            "element_id": "b",
            "text": "bottom-left origin",
            "metadata": {
                "page_number": 2,
                "coordinates": {**points, "points": [[72, 700], [72, 720], [300, 720], [300, 700]]},
            },
        },
    ]  # fmt: skip
    doc = unstructured_to_ir(
        _parsed(elements, page_sizes=[[612, 792], [612, 792]]), doc_id="d", source_sha256="0"
    )
    assert doc.elements[0].bbox == (72.0, 36.0, 360.0, 108.0)
    assert doc.elements[1].bbox == (72.0, 72.0, 300.0, 92.0)
    assert doc.page_count == 2


def test_element_types_map_to_the_ir():
    def el(kind: str, text: str, **metadata) -> dict:
        return {"type": kind, "element_id": kind, "text": text, "metadata": metadata}

    table_html = (
        "<table><thead><tr><th>Offset</th><th colspan='2'>Bits</th></tr></thead>"
        "<tbody><tr><td rowspan='2'>0x04</td><td>15:8</td><td>7:0</td></tr>"
        "<tr><td>RW</td><td>RO</td></tr></tbody></table>"
    )
    elements = [
        el("Header", "Manual v2", page_number=1),
        el("Title", "Registers", page_number=1, category_depth=1),
        el("ListItem", "one", page_number=1),
        el("ListItem", "two", page_number=2),
        el("PageBreak", ""),
        el("Table", "Offset Bits ...", page_number=2, text_as_html=table_html),
        el("FigureCaption", "Figure 3 Layout", page_number=2),
        el("Image", "", page_number=2),
        el("Formula", "E = mc^2", page_number=2),
        el("CodeSnippet", "# not a heading\nx = 1", page_number=2),
        el("Footer", "Page 2", page_number=2),
        el("Table", "a b c", page_number=2),
    ]
    doc = unstructured_to_ir(_parsed(elements), doc_id="d", source_sha256="0")
    assert [(e.type, e.page_start, e.page_end) for e in doc.elements] == [
        ("page_header", 1, 1),
        ("heading", 1, 1),
        ("list", 1, 2),
        ("table", 2, 2),
        ("caption", 2, 2),
        ("figure", 2, 2),
        ("formula", 2, 2),
        ("code", 2, 2),
        ("page_footer", 2, 2),
        ("table", 2, 2),
    ]
    heading, items, table = doc.elements[1], doc.elements[2], doc.elements[3]
    assert (heading.level, heading.text) == (2, "## Registers")
    assert items.text == "- one\n- two" and items.metadata["element_ids"] == ["ListItem"] * 2
    assert table.table.header_rows == 1 and table.table.num_cols == 3
    assert table.table.grid() == [
        ["Offset", "Bits", "Bits"],
        ["0x04", "15:8", "7:0"],
        ["0x04", "RW", "RO"],
    ]
    assert table.text.splitlines()[0] == "| Offset | Bits | Bits |"
    assert doc.elements[5].text == "<!-- image -->"
    assert doc.elements[6].text == "$$E = mc^2$$"
    assert doc.elements[7].text == "```\n# not a heading\nx = 1\n```"
    assert doc.elements[9].table is None and doc.elements[9].metadata["structure"] is False
    assert doc.page_count == 2 and doc.title is None


# --- offline: no network, no model download ------------------------------------------------------

_NO_NETWORK_SCRIPT = """
import json, socket, sys
from pathlib import Path

attempts = []

def refuse(self, address, *args):
    attempts.append(repr(address))
    raise OSError("network blocked by the test")

def no_dns(host, *args, **kwargs):
    attempts.append(repr(host))
    raise socket.gaierror("DNS blocked by the test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = no_dns

from rag_assets.parsers.unstructured import UnstructuredParser

parser = UnstructuredParser()
for name in sys.argv[1:]:
    path = Path(name)
    parser.parse(path, path.suffix.lstrip("."))

from unstructured.nlp import tokenize

print(json.dumps({"attempts": attempts, "pipes": tokenize._get_nlp().pipe_names}))
"""


def test_parsing_attempts_no_network_and_no_spacy_download(tmp_path, small_pdf, shared_fixtures):
    """A fresh interpreter (so import-time telemetry counts too) with sockets and DNS refused."""
    (tmp_path / "a.txt").write_text("Intro\n\nThe pump moves water. It runs daily.\n")
    (tmp_path / "a.md").write_text("# Title\n\nSome text here.\n\n```\n# code\n```\n")
    (tmp_path / "a.html").write_text("<h1>Title</h1><p>Some text that is a sentence.</p>")
    (tmp_path / "a.rtf").write_text("{\\rtf1\\ansi {\\pard Some text that is a sentence.\\par}}")
    docx = shared_fixtures / "docx/unit_test_headers_numbered.docx"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SCARF_NO_ANALYTICS", "DO_NOT_TRACK", "HF_HUB_OFFLINE")
    }
    files = [tmp_path / name for name in ("a.txt", "a.md", "a.html", "a.rtf")] + [small_pdf, docx]
    result = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK_SCRIPT, *map(str, files)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["attempts"] == []
    if not unstructured_parser._spacy_model_installed():
        assert report["pipes"] == ["sentencizer"]


def test_offline_spacy_loader_is_what_unstructured_calls(parser, small_pdf):
    from unstructured.nlp import tokenize

    parser.parse(small_pdf, "pdf")
    assert tokenize._load_spacy_model is unstructured_parser._offline_spacy_loader
    if not unstructured_parser._spacy_model_installed():
        nlp = unstructured_parser._offline_spacy_loader()
        assert nlp.pipe_names == ["sentencizer"]
        assert [s.text for s in nlp("One thing. Another thing.").sents] == [
            "One thing.",
            "Another thing.",
        ]
