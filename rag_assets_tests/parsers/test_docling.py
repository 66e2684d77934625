"""Docling as a Layer 1 parser and its Layer 2 adapter, on the real fixtures.

The `*.groundtruth.json` files are DoclingDocument exports from Docling's full PDF/DOCX
pipeline and the `*.groundtruth.md` beside them is Docling's own markdown of the same document,
so the adapter's headings, tables and list items must say what that markdown says.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.normalize.docling_adapter import docling_to_ir
from rag_assets.parsers import docling as docling_parser
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.docling import DoclingParser

GROUNDTRUTH_STEMS = [
    "pdf/redp5110_sampled",
    "pdf/2305.03393v1-pg9",
    "pdf/normal_4pages",
    "docx/unit_test_headers_numbered.docx",
    "docx/word_tables.docx",
]

# --- reading markdown: strict on content, lenient on formatting --------------------------------

_LINK = re.compile(r"!?\[([^\]]*)\]\((?:[^()]|\([^()]*\))*\)")  # URLs may hold (...)
_DASHES = str.maketrans({"\u2014": "-", "\u2013": "-"})
_ITEM = re.compile(r"( *)(?:[-*+]|\d+\.)\s+(.*)")
_HEADING = re.compile(r"(#{1,6})\s+(.*)")
_RULE_CELL = re.compile(r"\s*:?-+:?\s*")


def norm(text: str) -> str:
    """Content only: links become their text; escapes, emphasis, entities and spacing go."""
    text = html.unescape(_LINK.sub(r"\1", text)).translate(_DASHES)
    text = re.sub(r"\\(.)", r"\1", text)
    text = re.sub(r"[*`]|__", "", text)
    return "".join(text.split())


@dataclass
class Outline:
    headings: list[tuple[int, str]] = field(default_factory=list)  # (`#` depth, text)
    tables: list[list[list[str]]] = field(default_factory=list)  # rows of cells
    items: list[tuple[int, str]] = field(default_factory=list)  # (nesting depth, text)


def _list_item(line: str) -> tuple[int, str] | None:
    match = _ITEM.match(line)
    return (len(match[1]) // 4, norm(match[2])) if match else None


def md_outline(markdown: str) -> Outline:
    outline = Outline()
    in_fence = False
    table: list[list[str]] | None = None
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            in_fence, table = not in_fence, None
            continue
        if in_fence:
            continue
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            if all(_RULE_CELL.fullmatch(c) for c in cells):
                continue
            if table is None:
                table = []
                outline.tables.append(table)
            table.append([norm(c) for c in cells])
            continue
        table = None
        if heading := _HEADING.match(line):
            outline.headings.append((len(heading[1]), norm(heading[2])))
        elif item := _list_item(line):
            outline.items.append(item)
    return outline


def ir_outline(doc: StandardizedDocument) -> Outline:
    return Outline(
        headings=[(e.level or 0, norm(e.text.lstrip("#"))) for e in doc.headings()],
        tables=[
            [[norm(c) for c in row] for row in e.table.grid()]
            for e in doc.elements
            if e.type in ("table", "toc") and e.table is not None
        ],
        items=[
            item
            for e in doc.elements
            if e.type == "list"
            for item in map(_list_item, e.text.splitlines())
            if item is not None
        ],
    )


def assert_well_formed(doc: StandardizedDocument) -> None:
    for e in doc.elements:
        assert doc.markdown[e.start_char : e.end_char] == e.text
        if e.type in ("title", "heading"):
            assert e.text.startswith("#" * e.level + " ")
        if doc.page_count:
            assert e.page_end <= doc.page_count
        else:
            assert (e.page_start, e.page_end, e.bbox) == (1, 1, None)
        if e.bbox is not None:
            left, top, right, bottom = e.bbox
            assert left <= right and top <= bottom


# --- fixtures: one parser (one converter) and each document parsed once ------------------------


@pytest.fixture(scope="module")
def parser() -> DoclingParser:
    return DoclingParser()


@pytest.fixture(scope="module")
def from_groundtruth(shared_fixtures: Path) -> Callable[[str], StandardizedDocument]:
    cache: dict[str, StandardizedDocument] = {}

    def load(stem: str) -> StandardizedDocument:
        if stem not in cache:
            path = shared_fixtures / f"{stem}.groundtruth.json"
            parsed = ParsedDocument(
                parser="docling",
                parser_version="groundtruth",
                source_path=str(shared_fixtures / stem),
                file_format=stem.split("/")[0],
                native=json.loads(path.read_text(encoding="utf-8")),
            )
            cache[stem] = docling_to_ir(parsed, doc_id=stem, source_sha256="0" * 64)
        return cache[stem]

    return load


@pytest.fixture(scope="module")
def parsed_ir(
    shared_fixtures: Path, parser: DoclingParser
) -> Callable[[str], StandardizedDocument]:
    cache: dict[str, StandardizedDocument] = {}

    def load(name: str) -> StandardizedDocument:
        if name not in cache:
            path = shared_fixtures / name
            parsed = parser.parse(path, path.suffix.lstrip("."))
            cache[name] = docling_to_ir(parsed, doc_id=name, source_sha256="0" * 64)
        return cache[name]

    return load


def groundtruth_md(shared_fixtures: Path, stem: str) -> Outline:
    return md_outline((shared_fixtures / f"{stem}.groundtruth.md").read_text(encoding="utf-8"))


# --- (a) the adapter on Docling's full-pipeline exports ----------------------------------------


@pytest.mark.parametrize("stem", GROUNDTRUTH_STEMS)
def test_groundtruth_headings_tables_and_lists_agree(stem, shared_fixtures, from_groundtruth):
    doc = from_groundtruth(stem)
    expected = groundtruth_md(shared_fixtures, stem)
    got = ir_outline(doc)
    assert got.headings == expected.headings
    assert len(got.tables) == len(expected.tables)
    for got_rows, expected_rows in zip(got.tables, expected.tables, strict=True):
        assert got_rows == expected_rows
    assert got.items == expected.items
    assert_well_formed(doc)


@pytest.mark.parametrize("stem", GROUNDTRUTH_STEMS)
def test_groundtruth_text_blocks_in_reading_order(stem, shared_fixtures, from_groundtruth):
    text = norm(from_groundtruth(stem).markdown)
    markdown = (shared_fixtures / f"{stem}.groundtruth.md").read_text(encoding="utf-8")
    # Tables are compared cell by cell above; image placeholders are not content.
    blocks = [b for b in markdown.split("\n\n") if b.strip() and "<!--" not in b and b[0] != "|"]
    cursor = 0
    for block in blocks:
        found = text.find(norm(block), cursor)
        assert found >= 0, f"not found in order: {block[:80]!r}"
        cursor = found + len(norm(block))


def test_pdf_groundtruth_pages_boxes_and_furniture(from_groundtruth):
    doc = from_groundtruth("pdf/redp5110_sampled")
    assert doc.page_count == 18 and doc.title is None
    assert {e.type for e in doc.elements} >= {"toc", "table", "figure", "caption", "page_footer"}
    toc = next(e for e in doc.elements if e.type == "toc")
    assert toc.page_start == 2 and toc.table is not None and toc.table.num_rows == 42
    for e in doc.elements:
        assert e.bbox is not None
        assert 0 <= e.bbox[1] <= e.bbox[3] <= 792  # top-left origin on a 612 x 792 page
    table = next(e for e in from_groundtruth("pdf/2305.03393v1-pg9").elements if e.type == "table")
    assert table.table.header_rows == 2
    assert table.table.caption.startswith("Table 1. HPO performed in OTSL and HTML")
    assert table.text.splitlines()[0].startswith("| # enc-layers | # dec-layers | Language | TEDs")


def test_pdf_groundtruth_table_footnotes_and_caption_element(from_groundtruth):
    doc = from_groundtruth("pdf/normal_4pages")
    index, table = doc.tables()[0]
    assert doc.elements[index - 1].type == "caption"
    assert doc.elements[index - 1].text == table.table.caption
    assert len(table.table.footnotes) == 2
    assert [e.type for e in doc.elements[index + 1 : index + 3]] == ["footnote", "footnote"]


# --- (b) parsing real DOCX, Markdown and HTML -------------------------------------------------


def test_docx_tables_every_cell(parsed_ir, shared_fixtures):
    doc = parsed_ir("docx/word_tables.docx")
    expected = groundtruth_md(shared_fixtures, "docx/word_tables.docx")
    assert ir_outline(doc).tables == expected.tables
    tables = [e.table for _, e in doc.tables()]
    assert len(tables) == 7 and all(t.header_rows == 1 for t in tables)
    spans = {(c.text, c.row_span, c.col_span) for t in tables for c in t.cells}
    assert ("Merged Cell 1.1 1.2", 1, 2) in spans
    assert ("Merged Cell 1.1 2.1", 2, 1) in spans
    assert ("Merged Cell 4.4 5.4", 2, 1) in spans
    assert [e.text for e in doc.headings()] == ["## Test with tables"]
    assert_well_formed(doc)


def test_docx_heading_levels(parsed_ir, shared_fixtures):
    doc = parsed_ir("docx/unit_test_headers_numbered.docx")
    stem = "docx/unit_test_headers_numbered.docx"
    assert ir_outline(doc).headings == groundtruth_md(shared_fixtures, stem).headings
    assert ir_outline(doc).items == groundtruth_md(shared_fixtures, stem).items
    title = doc.elements[0]
    assert (title.type, title.level, title.text, doc.title) == (
        "title",
        1,
        "# Test Document",
        "Test Document",
    )
    # Word "Heading N" is one below the title: "1.2.1" (three numbers) is level 4.
    for heading in doc.headings()[1:]:
        number = heading.text.lstrip("# ").split()[0]
        if number[0].isdigit():
            assert heading.level == len(number.split(".")) + 1


def test_markdown_fenced_hash_lines_stay_code(parsed_ir, shared_fixtures):
    doc = parsed_ir("md/docling_deployment.md")
    source = (shared_fixtures / "md/docling_deployment.md").read_text(encoding="utf-8")
    comments, in_fence = [], False
    for line in source.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif in_fence and line.startswith("#"):
            comments.append(line)
    assert len(comments) == 7
    heading_texts = " ".join(e.text for e in doc.headings())
    code = "\n".join(e.text for e in doc.elements if e.type == "code")
    for comment in comments:
        assert comment in code
        assert comment.lstrip("# ") not in heading_texts
    # `#` depth in the source is the IR level; `#` is a heading, not a document title.
    assert ir_outline(doc).headings == md_outline(source).headings
    assert doc.headings()[0].type == "heading" and doc.title == "Deployment"
    assert all(e.text.startswith("```") for e in doc.elements if e.type == "code")
    assert_well_formed(doc)


def test_markdown_nested_lists(parsed_ir, shared_fixtures):
    doc = parsed_ir("md/nested.md")
    assert ir_outline(doc).items == groundtruth_md(shared_fixtures, "md/nested.md").items
    lists = [e for e in doc.elements if e.type == "list"]
    assert len(lists) == 3  # `*` after `-` starts a new list, as in CommonMark
    assert lists[0].text.splitlines()[:3] == ["- abc", "    - abc123", "        - abc1234"]
    assert [(e.type, e.level, e.text) for e in doc.headings()] == [("heading", 1, "# Nesting")]


def test_html_headings_tables_lists(parsed_ir, shared_fixtures):
    doc = parsed_ir("html/wiki_duck.html")
    expected = groundtruth_md(shared_fixtures, "html/wiki_duck.html")
    got = ir_outline(doc)
    # The groundtruth keeps the page's chrome: its table of contents opens with `## Contents`.
    assert got.headings == [h for h in expected.headings if h != (2, "Contents")]
    assert {level for level, _ in got.headings} == {1, 2, 3}
    assert doc.title == "Duck"
    # The groundtruth came from an older Docling that put images and lists into cells:
    # compare the rows free of both.
    # The groundtruth's second table is the authority-control navigation box (role=navigation).
    assert len(got.tables) == len(expected.tables) - 1 == 1
    assert expected.tables[1][-1][0] == "Other"
    plain_rows = 0
    for got_rows, expected_rows in zip(got.tables, expected.tables[:1], strict=True):
        for row in expected_rows:
            if all(row) and not any("<!--" in cell or cell.startswith("-") for cell in row):
                assert row in got_rows
                plain_rows += 1
    assert plain_rows == 10
    assert ("Domain:", "Eukaryota") in [tuple(r) for r in got.tables[0]]
    # Every list item is the groundtruth's, in order; the chrome's are left out: the table of
    # contents, 136 language links, the page tools and the footer's categories.
    expected_texts = [text for _, text in expected.items]
    cursor = 0
    for _, text in got.items:
        cursor = expected_texts.index(text, cursor) + 1
    got_texts = {text for _, text in got.items}
    assert {"1Etymology", "Afrikaans", "Viewhistory", "Permanentlink"}.isdisjoint(got_texts)
    assert {"Domesticduck", "Rubberduck"} <= got_texts  # the article's own "See also"
    assert len(got.items) > 80
    assert_well_formed(doc)


def test_txt_is_read_as_markdown_without_front_matter(parser, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("---\ntitle: Notes\nms.date: 1\n---\n# Notes\n\nSome text.\n", encoding="utf-8")
    parsed = parser.parse(path, "txt")
    doc = docling_to_ir(parsed, doc_id="notes", source_sha256="0" * 64)
    assert [e.text for e in doc.elements] == ["# Notes", "Some text."]
    assert "YAML front matter (4 lines) left out" in parsed.notes
    assert parsed.parser_version and parsed.page_count is None


# --- (c) bad input ---------------------------------------------------------------------------


def test_zero_byte_docx_raises(parser, tmp_path):
    path = tmp_path / "empty.docx"
    path.write_bytes(b"")
    with pytest.raises(DocumentError, match=r"empty\.docx is empty \(0 bytes\)"):
        parser.parse(path, "docx")


@pytest.mark.parametrize("content", [b"not a zip file, just text\n", bytes(range(256)) * 8])
def test_garbage_docx_raises(parser, tmp_path, content):
    path = tmp_path / "garbage.docx"
    path.write_bytes(content)
    with pytest.raises(DocumentError, match=r"garbage\.docx could not be read as DOCX: .*corrupt"):
        parser.parse(path, "docx")


def test_missing_file_and_unknown_format_raise(parser, tmp_path):
    with pytest.raises(DocumentError, match="cannot be read"):
        parser.parse(tmp_path / "nowhere.docx", "docx")
    with pytest.raises(DocumentError, match="not 'rtf'"):  # Docling needs LibreOffice for RTF
        parser.parse(tmp_path / "memo.rtf", "rtf")


# --- (d) the PDF path needs layout models ----------------------------------------------------


def test_pdf_models_not_available_here(parser, shared_fixtures):
    available, reason = parser.pdf_models_available()
    assert not available and "artifacts_path" in reason
    with pytest.raises(ConfigurationError, match="artifacts_path"):
        parser.parse(shared_fixtures / "pdf/2305.03393v1-pg9.pdf", "pdf")


def test_pdf_models_check_names_the_missing_folder(tmp_path):
    assert "does not exist" in DoclingParser(str(tmp_path / "absent")).pdf_models_available()[1]
    available, reason = DoclingParser(str(tmp_path)).pdf_models_available()
    assert not available and docling_parser.LAYOUT_MODEL_FOLDER in reason
    (tmp_path / docling_parser.LAYOUT_MODEL_FOLDER).mkdir()
    (tmp_path / docling_parser.TABLE_MODEL_FOLDER).mkdir()
    assert DoclingParser(str(tmp_path)).pdf_models_available()[0]


def test_model_folder_names_match_docling(parser):
    from docling.datamodel.pipeline_options import LayoutObjectDetectionOptions
    from docling.models.stages.ocr.rapid_ocr_model import RapidOcrModel
    from docling.models.stages.table_structure.table_structure_model import (
        TableStructureModel,
    )

    layout_repo = LayoutObjectDetectionOptions().model_spec.repo_id
    assert layout_repo.replace("/", "--") == docling_parser.LAYOUT_MODEL_FOLDER
    assert TableStructureModel._model_repo_folder == docling_parser.TABLE_MODEL_FOLDER
    assert RapidOcrModel._model_repo_folder == docling_parser.OCR_MODEL_FOLDER


# --- faithful structure: generated documents, no ../shared needed -----------------------------


def to_ir_of(parser: DoclingParser, path: Path, file_format: str) -> StandardizedDocument:
    from rag_assets.normalize.adapt import to_ir

    return to_ir(parser.parse(path, file_format), doc_id=path.stem, source_sha256="0" * 64)


def write_docx(path: Path, headings: list[tuple[int, str]]) -> None:
    import docx

    document = docx.Document()
    for level, text in headings:
        document.add_heading(text, level=level)
        document.add_paragraph(f"Body of {text}.")
    document.save(path)


STATED = [
    ([(1, "Header 1"), (2, "Header 2"), (3, "Header 3")]),
    ([(1, "Chapter 1 Intro"), (2, "Chapter 2 Scope"), (1, "Part A"), (2, "1.1 Foo")]),
    ([(1, "Windows 10"), (2, "Windows 11"), (2, "Setup 2")]),
]


@pytest.mark.parametrize("headings", STATED)
@pytest.mark.parametrize("file_format", ["md", "html", "docx"])
def test_levels_the_source_states_are_kept(parser, tmp_path, file_format, headings):
    """`#` depth, <hN> and Word's "Heading N" are levels; the numbering repair must not redo them."""
    path = tmp_path / f"doc.{file_format}"
    if file_format == "md":
        path.write_text("".join(f"{'#' * n} {t}\n\nBody of {t}.\n\n" for n, t in headings))
    elif file_format == "html":
        body = "".join(f"<h{n}>{t}</h{n}><p>Body of {t}.</p>" for n, t in headings)
        path.write_text(f"<html><body>{body}</body></html>")
    else:
        # Word's Heading N sits one below the Title style, as in Docling's markdown.
        write_docx(path, headings)
        headings = [(n + 1, t) for n, t in headings]
    doc = to_ir_of(parser, path, file_format)
    assert [(e.level, e.text.lstrip("# ")) for e in doc.headings()] == headings
    assert doc.metadata["repairs"]["heading_levels"] == 0


def test_markdown_with_an_html_block_keeps_its_typography(parser, tmp_path):
    """Such a file goes through Docling's HTML backend, which turns — “ ” … into ASCII."""
    heading = "Scope — the “core” rules… and ‘quotes’ ‐ ‑ ‒ – ―"
    body = "It’s — as “written”…"
    path = tmp_path / "typo.md"
    path.write_text(
        f"# {heading}\n\n{body}\n\n<div class='note'>\n<p>An HTML block — “kept”.</p>\n</div>\n\n"
        "```\nliteral &mdash; and \ue000 stay\n```\n",
        encoding="utf-8",
    )
    doc = to_ir_of(parser, path, "md")
    assert [e.text for e in doc.elements[:3]] == [
        f"# {heading}",
        body,
        "An HTML block — “kept”.",
    ]
    # An entity in code is literal; the page's own private-use character moved the stand-ins.
    assert "literal &mdash; and" in doc.elements[3].text


def test_html_typography_raw_and_as_entities(parser, tmp_path):
    path = tmp_path / "typo.html"
    path.write_text(
        "<html><head><meta charset='windows-1252'></head><body><h1>A &mdash; B</h1>"
        "<p>&ldquo;x&rdquo; &#8230; &#x2019; &amp; &lt;tag&gt;</p></body></html>",
        encoding="ascii",
    )
    doc = to_ir_of(parser, path, "html")
    assert [e.text for e in doc.elements] == ["# A — B", "“x” … ’ & <tag>"]


def test_code_block_in_a_list_item_stays_a_code_block(parser, tmp_path):
    import marko

    path = tmp_path / "list.md"
    path.write_text(
        "- item one\n- item with code:\n\n  ```python\n  # has some indented code\n  x = 1\n  ```\n\n"
        "- item three\n\n"
        "1. first\n   - nested with code:\n\n     ```sh\n     # comment\n     make\n     ```\n"
        "   - nested after\n2. second\n",
        encoding="utf-8",
    )
    doc = to_ir_of(parser, path, "md")
    assert [e.type for e in doc.elements] == ["list", "list"]
    assert all("# " not in e.text.lstrip("#") for e in doc.headings())

    def fenced(node) -> list[str]:
        found = [node.children[0].children] if isinstance(node, marko.block.FencedCode) else []
        return found + [
            c
            for child in getattr(node, "children", [])
            if not isinstance(child, str)
            for c in fenced(child)
        ]

    # Read back as CommonMark, each block is fenced code inside its list, in item order.
    assert fenced(marko.Markdown().parse(doc.markdown)) == [
        "# has some indented code\nx = 1\n",
        "# comment\nmake\n",
    ]
    assert ir_outline(doc).items == [
        (0, "itemone"),
        (0, "itemwithcode:"),
        (0, "itemthree"),
        (0, "first"),
        (1, "nestedwithcode:"),
        (1, "nestedafter"),
        (0, "second"),
    ]


@pytest.mark.parametrize(
    ("file_format", "quote"),
    [
        ("md", "> # Quoted\n>\n> Quoted paragraph.\n"),
        ("md", "> Quoted\n> ========\n>\n> Quoted paragraph.\n"),
        ("md", "- > ## Quoted\n  > Quoted paragraph.\n"),
        ("html", "<blockquote><h1>Quoted</h1><p>Quoted paragraph.</p></blockquote>"),
    ],
)
def test_heading_inside_a_quote_opens_no_section(parser, tmp_path, file_format, quote):
    """A quoted heading is the quote's text: what follows the quote stays in its section."""
    path = tmp_path / f"quote.{file_format}"
    if file_format == "md":
        path.write_text(f"# Guide\n\n## Usage\n\nBefore.\n\n{quote}\nAfter the quote.\n")
    else:
        path.write_text(
            f"<html><body><h1>Guide</h1><h2>Usage</h2><p>Before.</p>{quote}"
            "<p>After the quote.</p></body></html>"
        )
    doc = to_ir_of(parser, path, file_format)
    assert [(e.level, e.text) for e in doc.headings()] == [(1, "# Guide"), (2, "## Usage")]
    texts = [e.text.lstrip("- ") for e in doc.elements if e.type not in ("heading", "title")]
    assert texts[0] == "Before." and texts[-1] == "After the quote."
    assert "Quoted" in "\n".join(texts[1:-1])


def test_a_table_set_in_a_tables_cell_is_a_table_of_its_own_too(parser, tmp_path):
    path = tmp_path / "nested.html"
    path.write_text(
        "<html><body><table><tr><th>Part</th><th>Sizes</th></tr>"
        "<tr><td>Seal kit</td><td><table><tr><th>Bore</th><th>Code</th></tr>"
        "<tr><td>40 mm</td><td>SK-40</td></tr><tr><td>50 mm</td><td>SK-50</td></tr></table>"
        "</td></tr></table></body></html>",
        encoding="utf-8",
    )
    doc = to_ir_of(parser, path, "html")
    outer, inner = [e.table.grid() for e in doc.elements if e.type == "table"]
    # The outer cell keeps the inner table's words, flattened; the inner table its rows.
    assert outer[0] == ["Part", "Sizes"] and "SK-40" in outer[1][1]
    assert inner == [["Bore", "Code"], ["40 mm", "SK-40"], ["50 mm", "SK-50"]]
