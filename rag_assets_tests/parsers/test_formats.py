"""PPTX, XLSX, CSV, AsciiDoc, ODT, EPUB, e-mail, RTF and images, end to end.

Each format is tested on a document the test writes (python-pptx and openpyxl, or the file's
own text or zip layout), parsed by `parse_file` with the `auto` router and chunked by the
template `auto` picks; the real files of ../shared/corpus are read where it is present.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.errors import DocumentError
from rag_assets.parsers.image import image_to_pdf
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import ParseResult, parse_file
from rag_assets.sources.formats import detect_format
from rag_assets.templates.registry import build_template
from rag_assets.templates.select import choose_template
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.conftest import SHARED_CORPUS


@pytest.fixture(scope="module")
def router() -> ParserRouter:
    return ParserRouter()


def chunks(doc: StandardizedDocument) -> tuple[str, list[ChunkRow]]:
    """The template `auto` picks, with its default options, and its chunks."""
    choice = choose_template(doc, "auto")
    return choice.template, build_template(choice.template).chunk(doc, ApproxTokenCounter())


def chunk_with(rows: list[ChunkRow], text: str) -> ChunkRow:
    return next(row for row in rows if text in row.text)


def headings(doc: StandardizedDocument) -> list[tuple[int | None, str]]:
    return [(e.level, e.text.lstrip("# ")) for e in doc.headings()]


# --- PPTX ---------------------------------------------------------------------------------------


def test_pptx_slide_titles_are_headings_and_tables_keep_their_cells(router, tmp_path):
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    first.shapes.title.text = "Pump maintenance"
    first.placeholders[1].text_frame.text = "Check the seals every month."
    second = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    second.shapes.title.text = "Spare parts"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, row in enumerate([["Part", "Stock"], ["Seal kit", "12"], ["Impeller", "3"]]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    path = tmp_path / "deck.pptx"
    deck.save(path)

    result = parse_file(path, router)
    doc = result.document
    assert result.choice.parser == "docling"
    assert headings(doc) == [(1, "Pump maintenance"), (1, "Spare parts")]
    assert doc.title == "Pump maintenance"
    body = next(e for e in doc.elements if "seals" in e.text)  # a bulleted content placeholder
    assert (body.type, body.text, body.page_start) == ("list", "- Check the seals every month.", 1)
    [(_, element)] = doc.tables()
    assert element.page_start == 2
    assert element.table.grid() == [["Part", "Stock"], ["Seal kit", "12"], ["Impeller", "3"]]
    assert element.table.header_rows == 1
    template, rows = chunks(doc)
    assert template == "semantic"
    # Both slides are short: one chunk holds them, the second slide under its title.
    [chunk] = rows
    assert chunk.text.index("Pump maintenance") < chunk.text.index("# Spare parts")
    assert chunk.text.index("# Spare parts") < chunk.text.index("| Impeller | 3 |")
    assert (chunk.page_start, chunk.page_end) == (1, 2)


# --- XLSX, CSV, TSV: rows of a table ----------------------------------------------------------


def _rows(count: int) -> list[list[str]]:
    return [["Station", "Flow (l/s)", "Operator"]] + [
        [f"Station {n}", str(10 + n), f"Crew {n % 4}"] for n in range(1, count + 1)
    ]


def _assert_rows_chunked_with_their_header(doc: StandardizedDocument, rows: int) -> None:
    template, chunked = chunks(doc)
    assert template == "semantic"
    assert choose_template(doc, "auto").reason.startswith("auto: tables hold")
    parts = [c for c in chunked if "| Station " in c.text]
    table_chunks = [c for c in parts if not c.metadata.get("table_outline")]
    assert len(table_chunks) > 2  # the long table, split between its rows
    # and its outline, which names the rows
    assert any("Rows: Station 1; Station 2;" in c.text for c in parts if c not in table_chunks)
    for chunk in table_chunks:
        assert "| Station | Flow (l/s) | Operator |\n|---|---|---|\n| Station " in chunk.text
        assert chunk.token_count <= 256
    seen = {n for c in table_chunks for n in range(1, rows + 1) if f"| Station {n} |" in c.text}
    assert seen == set(range(1, rows + 1))


def test_xlsx_sheets_are_sections_of_tables(router, tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    first = book.active
    first.title = "Q1 2024"  # a sheet name that reads like a numbered question
    for row in _rows(60):
        first.append(row)
    second = book.create_sheet("Q2 2024")
    for row in _rows(3):
        second.append(row)
    path = tmp_path / "flows.xlsx"
    book.save(path)

    doc = parse_file(path, router).document
    assert headings(doc) == [(1, "Q1 2024"), (1, "Q2 2024")]
    tables = [e.table for _, e in doc.tables()]
    assert [(t.num_rows, t.num_cols, t.header_rows) for t in tables] == [(61, 3, 1), (4, 3, 1)]
    assert tables[1].grid()[3] == ["Station 3", "13", "Crew 3"]
    _assert_rows_chunked_with_their_header(doc, 60)


@pytest.mark.parametrize(("suffix", "delimiter"), [(".csv", ","), (".csv", ";"), (".tsv", "\t")])
def test_csv_is_one_table_whose_rows_are_chunked(router, tmp_path, suffix, delimiter):
    path = tmp_path / f"flows{suffix}"
    path.write_text("\n".join(delimiter.join(row) for row in _rows(60)) + "\n", encoding="utf-8")

    doc = parse_file(path, router).document
    [(_, element)] = doc.tables()
    assert [e.type for e in doc.elements] == ["table"]
    assert (element.table.num_rows, element.table.num_cols) == (61, 3)
    assert element.table.grid()[0] == ["Station", "Flow (l/s)", "Operator"]
    _assert_rows_chunked_with_their_header(doc, 60)


# --- AsciiDoc, ODT, EPUB ----------------------------------------------------------------------


def test_asciidoc_title_sections_and_table(router, tmp_path):
    path = tmp_path / "guide.adoc"
    path.write_text(
        "= Pump Guide\n\nWhat the guide covers.\n\n== Installation\n\nMount the pump level.\n\n"
        "=== Wiring\n\nUse a 16 A fuse.\n\n"
        '[options="header"]\n|===\n|Model |Power\n|P-100 |1.5 kW\n|P-200 |3 kW\n|===\n',
        encoding="utf-8",
    )
    doc = parse_file(path, router).document
    assert doc.title == "Pump Guide"
    assert doc.elements[0].type == "title"
    assert headings(doc) == [(1, "Pump Guide"), (2, "Installation"), (3, "Wiring")]
    [(_, table)] = doc.tables()
    assert table.table.grid() == [["Model", "Power"], ["P-100", "1.5 kW"], ["P-200", "3 kW"]]
    _, rows = chunks(doc)
    wiring = chunk_with(rows, "16 A fuse")
    assert wiring.headings[0] == "Pump Guide"
    assert wiring.text.index("## Installation") < wiring.text.index("### Wiring")
    assert wiring.text.index("### Wiring") < wiring.text.index("16 A fuse")


_ODT_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content
 xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">
<office:body><office:text>
<text:h text:outline-level="1">Pump Handbook</text:h>
<text:p>Read this before the first start.</text:p>
<text:h text:outline-level="2">Cleaning</text:h>
<text:p>Rinse the filter with clear water.</text:p>
<table:table table:name="Intervals">
<table:table-column table:number-columns-repeated="2"/>
<table:table-header-rows><table:table-row>
<table:table-cell><text:p>Part</text:p></table:table-cell>
<table:table-cell><text:p>Interval</text:p></table:table-cell>
</table:table-row></table:table-header-rows>
<table:table-row>
<table:table-cell><text:p>Filter</text:p></table:table-cell>
<table:table-cell><text:p>Weekly</text:p></table:table-cell>
</table:table-row>
</table:table>
</office:text></office:body></office:document-content>
"""
_ODT_MANIFEST = """<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"
 manifest:version="1.3">
<manifest:file-entry manifest:full-path="/"
 manifest:media-type="application/vnd.oasis.opendocument.text"/>
<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>
</manifest:manifest>
"""


def _zip(path: Path, mimetype: str, files: dict[str, str]) -> None:
    """A zip package as ODF and EPUB want it: `mimetype` first and uncompressed."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr(zipfile.ZipInfo("mimetype"), mimetype, zipfile.ZIP_STORED)
        for name, text in files.items():
            package.writestr(name, text)


def test_odt_headings_paragraphs_and_table(router, tmp_path):
    path = tmp_path / "handbook.odt"
    _zip(
        path,
        "application/vnd.oasis.opendocument.text",
        {"content.xml": _ODT_CONTENT, "META-INF/manifest.xml": _ODT_MANIFEST},
    )
    result = parse_file(path, router)
    doc = result.document
    assert result.choice.parser == "docling"
    assert headings(doc) == [(2, "Pump Handbook"), (3, "Cleaning")]
    assert any(e.type == "paragraph" and "clear water" in e.text for e in doc.elements)
    [(_, table)] = doc.tables()
    assert table.table.grid() == [["Part", "Interval"], ["Filter", "Weekly"]]
    _, rows = chunks(doc)
    weekly = chunk_with(rows, "| Filter | Weekly |")
    assert weekly.headings[0] == "Pump Handbook"
    assert weekly.text.index("### Cleaning") < weekly.text.index("| Filter | Weekly |")


_EPUB_CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/>
</rootfiles></container>
"""
_EPUB_OPF = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:identifier id="id">pump-stories</dc:identifier><dc:title>Pump Stories</dc:title>
<dc:language>en</dc:language></metadata>
<manifest>
<item id="one" href="one.xhtml" media-type="application/xhtml+xml"/>
<item id="two" href="two.xhtml" media-type="application/xhtml+xml"/>
</manifest>
<spine><itemref idref="one"/><itemref idref="two"/></spine>
</package>
"""


def _chapter(title: str, section: str, text: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head><body>'
        f"<h1>{title}</h1><h2>{section}</h2><p>{text}</p></body></html>"
    )


def test_epub_chapters_in_spine_order(router, tmp_path):
    path = tmp_path / "stories.epub"
    _zip(
        path,
        "application/epub+zip",
        {
            "META-INF/container.xml": _EPUB_CONTAINER,
            "OEBPS/book.opf": _EPUB_OPF,
            "OEBPS/two.xhtml": _chapter("The Flood", "Morning", "Water rose over the weir."),
            "OEBPS/one.xhtml": _chapter("The Well", "Digging", "They dug for three days."),
        },
    )
    doc = parse_file(path, router).document
    assert headings(doc) == [(1, "The Well"), (2, "Digging"), (1, "The Flood"), (2, "Morning")]
    _, rows = chunks(doc)
    assert chunk_with(rows, "weir").headings == ["The Flood", "Morning"]
    assert chunk_with(rows, "three days").headings == ["The Well", "Digging"]


# --- e-mail -------------------------------------------------------------------------------------


def test_eml_subject_is_the_title_and_headers_are_metadata(router, tmp_path):
    path = tmp_path / "notice.eml"
    path.write_bytes(
        b"From: Plant Office <office@example.com>\r\n"
        b"To: Crew <crew@example.com>\r\n"
        b"Subject: Pump station shutdown\r\n"
        b"Date: Tue, 04 Jun 2024 08:15:00 +0000\r\n"
        b"MIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n\r\n"
        b"The station stops on Friday at noon.\r\n\r\n"
        b"From: the maintenance plan, section 4.\r\n"
    )
    result = parse_file(path, router)
    doc = result.document
    assert result.choice.parser == "docling"
    assert doc.title == "Pump station shutdown"
    assert doc.elements[0].type == "title"
    assert doc.metadata["email"] == {
        "from": "Plant Office <office@example.com>",
        "to": "Crew <crew@example.com>",
        "date": "2024-06-04T08:15:00+00:00",
    }
    # The headers left the text; a body line that looks like one stays.
    assert [e.text for e in doc.elements[1:]] == [
        "The station stops on Friday at noon.",
        "From: the maintenance plan, section 4.",
    ]
    _, rows = chunks(doc)
    assert [row.headings for row in rows] == [["Pump station shutdown"]]


def test_utf16_eml_is_decoded(router, tmp_path):
    path = tmp_path / "wide.eml"
    text = "Subject: Grüße\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nDie Pumpe läuft.\r\n"
    path.write_bytes(text.encode("utf-16-le"))
    doc = parse_file(path, router).document
    assert doc.title == "Grüße"
    assert "Die Pumpe läuft." in doc.markdown


@pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason="../shared/corpus is absent")
def test_msg_subject_headers_and_body(router):
    path = SHARED_CORPUS / "docling/tests__data__email__sources__msg_simple.msg"
    doc = parse_file(path, router).document
    assert doc.title == "Simple Email"
    assert doc.metadata["email"]["from"] == "Alice Example <alice@example.com>"
    assert [e.text for e in doc.elements[1:]] == ["Hello Bob,", "This is a simple email body."]


# --- RTF ----------------------------------------------------------------------------------------


def test_rtf_heading_paragraph_and_table(router, tmp_path):
    path = tmp_path / "memo.rtf"
    row = r"{\trowd\cellx3000\cellx6000 \pard\intbl %s\cell %s\cell\row}"
    path.write_text(
        "{\\rtf1\\ansi\\deff0\n"
        "{\\pard \\outlinelevel0 \\b \\fs36 Valve Report\\par}\n"
        "{\\pard Two valves were replaced this week.\\par}\n"
        + "\n".join(row % cells for cells in [("Valve", "State"), ("V1", "new"), ("V2", "new")])
        + "\n}\n",
        encoding="ascii",
    )
    result = parse_file(path, router)
    doc = result.document
    assert result.choice.parser == "unstructured"
    assert headings(doc) == [(1, "Valve Report")]
    assert any(e.type == "paragraph" and "Two valves" in e.text for e in doc.elements)
    [(_, table)] = doc.tables()
    assert table.table.grid() == [["Valve", "State"], ["V1", "new"], ["V2", "new"]]
    _, rows = chunks(doc)
    assert all(row.headings == ["Valve Report"] for row in rows)


# --- images -------------------------------------------------------------------------------------


def _text_image(path: Path, lines: list[str]) -> None:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1400, 120 + 90 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=56)
    for n, line in enumerate(lines):
        draw.text((60, 60 + 90 * n), line, fill="black", font=font)
    image.save(path)


def test_image_is_read_by_ocr(router, tmp_path):
    path = tmp_path / "notice.png"
    _text_image(path, ["Pump station closed", "Open again on Monday"])
    result = parse_file(path, router)
    doc = result.document
    assert result.choice.parser == "pymupdf"
    assert result.parsed.file_format == "image"
    assert result.parsed.native["ocr_pages"] == [1]
    text = " ".join(doc.markdown.split()).lower()
    assert "pump station closed" in text
    assert "monday" in text
    _, rows = chunks(doc)
    assert rows and all(row.page_start == 1 for row in rows)


def test_images_mupdf_cannot_open_go_through_pillow(tmp_path):
    import pymupdf
    from PIL import Image

    path = tmp_path / "photo.webp"
    Image.new("RGB", (40, 30), "red").save(path)
    with pymupdf.open(stream=image_to_pdf(path), filetype="pdf") as pdf:
        assert pdf.page_count == 1
    broken = tmp_path / "broken.webp"
    broken.write_bytes(b"RIFF\x00\x00\x00\x00WEBPVP8 garbage")
    with pytest.raises(DocumentError, match="could not be read as an image"):
        image_to_pdf(broken)


# --- formats, routing, refusals ---------------------------------------------------------------


def test_formats_are_confirmed_by_content(tmp_path):
    cases = {
        "old.doc": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "needs LibreOffice"),
        "old.ppt": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "needs LibreOffice"),
        "old.xls": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "save it as .xlsx"),
        "locked.xlsx": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "password-protected"),
        "fake.pptx": (b"%PDF-1.4", "not a PowerPoint"),
        "fake.msg": (b"From: a\r\n", "not an Outlook message"),
        "fake.rtf": (b"hello", "does not start with"),
        "fake.png": (b"hello", "not an image"),
        "binary.csv": (b"\x00\x01\x02\x00\x00\x07", "binary"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DocumentError, match=message):
            detect_format(tmp_path / name)
    (tmp_path / "wide.csv").write_bytes("a,b\n1,2\n".encode("utf-16"))
    assert detect_format(tmp_path / "wide.csv") == "csv"


def test_routing_by_format():
    auto = ParserRouter()
    for file_format in ("pptx", "xlsx", "csv", "tsv", "asciidoc", "odt", "epub", "eml", "msg"):
        assert auto.choose(file_format).parser == "docling"
    assert auto.choose("rtf").parser == "unstructured"
    assert auto.choose("image").parser == "pymupdf"
    # A requested parser that does not read the format here: the one that does, said so.
    docling_for_rtf = ParserRouter("docling").choose("rtf")
    assert docling_for_rtf.parser == "unstructured"
    assert docling_for_rtf.fallbacks == ["docling does not read rtf here"]
    unstructured_for_xlsx = ParserRouter("unstructured").choose("xlsx")
    assert unstructured_for_xlsx.parser == "docling"
    assert unstructured_for_xlsx.fallbacks == ["unstructured does not read xlsx here"]
    assert ParserRouter("unstructured").choose("docx").parser == "unstructured"


# --- the corpus: every file of these kinds lands or fails with a one-line reason ----------------

# Images are left out: OCR takes seconds a file.
_READ_KINDS = {"asciidoc", "csv", "tsv", "eml", "msg", "epub", "odt", "pptx", "rtf", "xlsx"}
_CORPUS_KINDS = _READ_KINDS | {"doc", "ppt", "xls"}


def _corpus_files() -> list[tuple[str, str]]:
    if not SHARED_CORPUS.is_dir():
        return []
    rows = [
        line.split("\t") for line in (SHARED_CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]
    ]
    return [(row[7], row[0]) for row in rows if row[7] in _CORPUS_KINDS]


@pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason="../shared/corpus is absent")
def test_corpus_files_land_or_fail_in_one_line(router):
    outcomes: dict[str, str] = {}
    for kind, relative in _corpus_files():
        try:
            result: ParseResult = parse_file(SHARED_CORPUS / relative, router)
        except DocumentError as error:
            assert "\n" not in str(error), relative
            outcomes[relative] = "refused" if kind in ("doc", "ppt", "xls") else "failed"
            continue
        outcomes[relative] = "landed" if result.document.elements else "empty"
    assert len(outcomes) == 93
    assert [path for path, outcome in outcomes.items() if outcome == "refused"] == [
        path for kind, path in _corpus_files() if kind in ("doc", "ppt", "xls")
    ]  # every .doc, .ppt and .xls (10), for want of LibreOffice
    assert sorted(path for path, outcome in outcomes.items() if outcome in ("failed", "empty")) == [
        "unstructured/example-docs__eml__empty.eml",
        "unstructured/example-docs__empty.xlsx",
        "unstructured/example-docs__fake-encrypted.msg",  # its body is encrypted
        "unstructured/example-docs__password_protected.xlsx",
    ]
    assert sum(outcome == "landed" for outcome in outcomes.values()) == 79
