"""Ground truth for the `clauses` template and its numbering helpers.

Hand-built IR documents pin exact chunks; the real statutes in ../shared/fixtures/legal go
through the real IR (Docling + adapter). Counts use ApproxTokenCounter (one token per word,
punctuation run or CJK character), so limits can be worked out by hand.

Pinned counts, counted from the files themselves:
- 劳动合同法(2012-12-28).md: 98 articles, 第一条..第九十八条, each opening a paragraph line
  (`^第[一二…]+条 `); the MANIFEST's "126 articles" is wrong.
- gdpr_eurlex_pdf_extracted.txt: 99 `Article N` headings, alone on their line and followed
  by a title line, numbered 1..99. The MANIFEST's 128 counts every line that starts with
  `Article N`, including 29 references (`Article 8(1) of the ...`, `Article 263 TFEU.`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.normalize.docling_adapter import docling_to_ir
from rag_assets.normalize.markdown import assemble_markdown
from rag_assets.parsers.docling import DoclingParser
from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.clauses import ClausesTemplate
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets.text.numbering import (
    chinese_numeral_value,
    find_markers,
    marker_at,
    roman_numeral_value,
)
from rag_assets_tests.support.builders import assert_blocking_checks_pass
from rag_assets_tests.support.metadata import own_metadata

APPROX = ApproxTokenCounter()
LAW = "legal/劳动合同法(2012-12-28).md"
GDPR = "legal/gdpr_eurlex_pdf_extracted.txt"
LAW_ARTICLES = 98
GDPR_ARTICLES = 99

Item = tuple[str, str, int | None]  # (type, text, level)


def make_doc(items: list[Item], doc_id: str = "doc-1") -> StandardizedDocument:
    elements = [DocumentElement(type=kind, text=text, level=level) for kind, text, level in items]
    markdown, placed = assemble_markdown(elements)
    return StandardizedDocument(
        doc_id=doc_id,
        source_path="inbox/statute.md",
        source_sha256="ab" * 32,
        parser="test",
        parser_version="0",
        markdown=markdown,
        elements=placed,
    )


def clauses(doc: StandardizedDocument, max_tokens: int = 512, overlap: int = 0) -> list[ChunkRow]:
    options = TemplateOptions(max_tokens=max_tokens, overlap_tokens=overlap)
    rows = ClausesTemplate(options).chunk(doc, APPROX)
    assert_blocking_checks_pass(rows, doc, headings_from_text=True)
    return rows


def clause_rows(rows: list[ChunkRow]) -> list[ChunkRow]:
    return [r for r in rows if r.chunk_type == "clause"]


def units(rows: list[ChunkRow]) -> list[str]:
    """Clause units in order: the logical units of the clause chunks, each once."""
    return list(dict.fromkeys(r.logical_unit or "" for r in clause_rows(rows)))


# --- numerals and markers -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("一", 1),
        ("十", 10),
        ("十二", 12),
        ("二十", 20),
        ("三十九", 39),
        ("一百", 100),
        ("一百零六", 106),
        ("一百二十六", 126),
        ("两千零一", 2001),
        ("一万二千", 12000),
        ("二〇〇八", 2008),  # digit by digit, as in years
        ("〇", 0),
        ("12", 12),
        ("１２", 12),  # full-width digits
    ],
)
def test_chinese_numeral_value(text: str, value: int) -> None:
    assert chinese_numeral_value(text) == value


@pytest.mark.parametrize(
    ("text", "value"), [("I", 1), ("IV", 4), ("IX", 9), ("XI", 11), ("XIV", 14)]
)
def test_roman_numeral_value(text: str, value: int) -> None:
    assert roman_numeral_value(text) == value


@pytest.mark.parametrize("text", ["", "条"])
def test_chinese_numeral_value_rejects_other_text(text: str) -> None:
    with pytest.raises(ValueError):
        chinese_numeral_value(text)


@pytest.mark.parametrize("text", ["", "IIZ"])
def test_roman_numeral_value_rejects_other_text(text: str) -> None:
    with pytest.raises(ValueError):
        roman_numeral_value(text)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("第三十九条 劳动者有下列情形之一的", ("article", "第三十九条", (39,))),
        ("第一百二十六条\u3000本法自公布之日起施行。", ("article", "第一百二十六条", (126,))),
        ("第十条之一 新增条文", ("article", "第十条之一", (10,))),
        ("第五章 特别规定", ("chapter", "第五章", (5,))),
        ("第一节 集体合同", ("section", "第一节", (1,))),
        ("第三十九条", ("article", "第三十九条", (39,))),
        ("Article 5", ("article", "Article 5", (5,))),
        ("Article 5 Principles relating to processing", ("article", "Article 5", (5,))),
        ("Article 7 \u2013 Term", ("article", "Article 7", (7,))),
        ("ARTICLE 5 DEFINITIONS", ("article", "ARTICLE 5", (5,))),
        ("CHAPTER IV", ("chapter", "CHAPTER IV", (4,))),
        ("CHAPTE R IX", ("chapter", "CHAPTE R IX", (9,))),  # PDF extraction noise
        ("Chapter 3 Scope", ("chapter", "Chapter 3", (3,))),
        ("Section 2.1 Scope", ("section", "Section 2.1", (2, 1))),
        ("1.1 The policy applies.", ("decimal", "1.1", (1, 1))),
        ("2. Scope", ("decimal", "2.", (2,))),
    ],
)
def test_marker_at_recognises_headings(line: str, expected: tuple) -> None:
    marker = marker_at(line, 0)
    assert marker is not None
    assert (marker.kind, marker.label, marker.number) == expected


@pytest.mark.parametrize(
    "line",
    [
        "第三十九条和第四十条第一项规定的情形",  # references run on without a space
        "第十四条第二款第三项规定",
        "Article 8(1) of the Charter",
        "Article 16 TFEU",  # a capitals word after a mixed-case keyword: a treaty reference
        "Article 5 thereof, shall apply .",
        "Article 51; 4.5.2016 L 119/34",
        "Articles 15 to 20 shall not apply",
        "Chapt er VII.",
        "Chapt er IX (specif ic data processing situations)",
        "Section 2 of Chapter IV",
        "2016/679 OF THE EUROPEAN PARLIAMENT",
        "12 months",
    ],
)
def test_marker_at_rejects_references(line: str) -> None:
    assert marker_at(line, 0) is None


def test_find_markers_in_a_joined_line_skips_references() -> None:
    line = (
        "HAVE ADOPTED THIS REGULATION: CHAPTER I General provisions Article 1 Subject-matter "
        "pursuant to Article 8(1) of the Charter 依照本法第三十九条规定"
    )
    assert [(m.label, line[m.start : m.end]) for m in find_markers(line)] == [
        ("CHAPTER I", "CHAPTER I"),
        ("Article 1", "Article 1"),
    ]


# --- hand-built statutes --------------------------------------------------------------------

CN_STATUTE: list[Item] = [
    ("heading", "# 某市物业管理条例", 1),
    ("paragraph", "2020年1月1日通过", None),
    ("heading", "## 第一章 总则", 2),
    ("paragraph", "第一条 为了规范物业管理，制定本条例。", None),
    ("paragraph", "第二条 本条例适用于本市。依照本条例第一条的规定执行。", None),
    # A paragraph opening with a cross-reference stays in the clause it belongs to.
    ("paragraph", "第一条和第二条另有规定的除外。", None),
    ("heading", "## 第二章 管理", 2),
    ("heading", "### 第一节 一般规定", 3),
    ("paragraph", "第三条 管理机构应当：", None),
    ("paragraph", "（一）登记；", None),
    ("paragraph", "（二）备案。", None),
    ("heading", "### 第二节 附则", 3),
    ("paragraph", "第一百二十六条 本条例自公布之日起施行。", None),
]


def test_chinese_statute_one_unit_per_article_with_chapter_and_section() -> None:
    doc = make_doc(CN_STATUTE)
    rows = clauses(doc)

    chapter2, section1 = "第二章 管理", "第一节 一般规定"
    assert [(r.chunk_type, r.header_path, r.headings, r.logical_unit, r.text) for r in rows] == [
        ("text", "/", [], None, "# 某市物业管理条例\n\n2020年1月1日通过"),
        (
            "clause",
            "/第一章 总则/",
            ["第一章 总则", "第一条"],
            "第一条",
            "第一条 为了规范物业管理，制定本条例。",
        ),
        (
            "clause",
            "/第一章 总则/",
            ["第一章 总则", "第二条"],
            "第二条",
            "第二条 本条例适用于本市。依照本条例第一条的规定执行。\n\n"
            "第一条和第二条另有规定的除外。",
        ),
        (
            "clause",
            f"/{chapter2}/{section1}/",
            [chapter2, section1, "第三条"],
            "第三条",
            "第三条 管理机构应当：\n\n（一）登记；\n\n（二）备案。",
        ),
        (
            "clause",
            f"/{chapter2}/第二节 附则/",
            [chapter2, "第二节 附则", "第一百二十六条"],
            "第一百二十六条",
            "第一百二十六条 本条例自公布之日起施行。",
        ),
    ]
    assert own_metadata(rows[3]) == {
        "clause_number": "第三条",
        "clause_index": 3,
        "chapter": chapter2,
        "section": section1,
    }
    assert rows[4].metadata["clause_index"] == 126
    assert own_metadata(rows[1]) == {
        "clause_number": "第一条",
        "clause_index": 1,
        "chapter": "第一章 总则",
    }
    # Offsets point at the clause's own text in the markdown.
    assert [doc.markdown[r.start_char : r.end_char] for r in rows[:2]] == [r.text for r in rows[:2]]
    assert doc.markdown[rows[3].start_char : rows[3].end_char].startswith("第三条 管理机构应当")


def test_long_clause_splits_with_its_heading_repeated() -> None:
    rows = clauses(make_doc(CN_STATUTE), max_tokens=16)
    third = [r for r in rows if r.logical_unit == "第三条"]

    # Heading "第三条" is 3 tokens; the opening sentence 10, each item 6: 3 + 10 + 6 > 16.
    assert [r.text for r in third] == [
        "第三条 管理机构应当：",
        "第三条\n\n（一）登记；\n\n（二）备案。",
    ]
    assert {(r.chunk_type, r.header_path, tuple(r.headings)) for r in third} == {
        ("clause", "/第二章 管理/第一节 一般规定/", ("第二章 管理", "第一节 一般规定", "第三条"))
    }
    assert all(r.token_count <= 16 for r in rows)


def test_chapter_text_of_its_own_is_kept_and_an_empty_chapter_gives_no_chunk() -> None:
    doc = make_doc(
        [
            ("heading", "## 第一章 总则", 2),
            ("paragraph", "本章规定一般原则。", None),
            ("paragraph", "第一条 本条例适用于本市。", None),
            ("heading", "## 第二章 废止", 2),  # nothing under it: a heading alone, no chunk
            ("heading", "## 第三章 附则", 2),
            ("paragraph", "第二条 本条例自公布之日起施行。", None),
        ]
    )
    rows = clauses(doc)

    assert [(r.chunk_type, r.headings, r.logical_unit, own_metadata(r), r.text) for r in rows] == [
        (
            "text",
            ["第一章 总则"],
            "第一章 总则",
            {"chapter": "第一章 总则"},
            "第一章 总则\n\n本章规定一般原则。",
        ),
        (
            "clause",
            ["第一章 总则", "第一条"],
            "第一条",
            {"clause_number": "第一条", "clause_index": 1, "chapter": "第一章 总则"},
            "第一条 本条例适用于本市。",
        ),
        (
            "clause",
            ["第三章 附则", "第二条"],
            "第二条",
            {"clause_number": "第二条", "clause_index": 2, "chapter": "第三章 附则"},
            "第二条 本条例自公布之日起施行。",
        ),
    ]


# An English regulation as extracted from a PDF: headings on lines of their own.
EN_LINES = [
    "REGULATION (EU) 2099/1",
    "Whereas:",
    "(1) Article 8(1) of the Charter protects personal data.",
    "(2) The Board may refer to Article 7 Guidelines in that case.",
    "HAVE ADOPTED THIS REGULATION:",
    "CHAPTER I",
    "General provisions",
    "Article 1",
    "Subject-matter and",
    "objectives",
    "1. This Regulation lays down rules.",
    "Article 2",
    "Scope",
    "Article 16 TFEU applies.",
    "Article 5 of Directive 95/46/EC is repealed.",
    "Section 1",
    "Transparency",
    "Article 3",
    "Transparent information",
    "The controller shall inform.",
]


@pytest.mark.parametrize("joined", [False, True], ids=["lines", "lines-joined"])
def test_english_articles_whether_lines_survive_or_are_joined(joined: bool) -> None:
    # Docling reads extracted text as Markdown and joins its lines with spaces; the markers
    # inside a line still count when a title follows and the number is next in sequence.
    text = (" " if joined else "\n").join(EN_LINES)
    doc = make_doc([("paragraph", text, None)])
    rows = clauses(doc)

    chapter = "CHAPTER I General provisions"
    section = "Section 1 Transparency"
    assert [(r.chunk_type, r.header_path, own_metadata(r)) for r in rows] == [
        ("text", "/", {}),
        (
            "clause",
            f"/{chapter}/",
            {"clause_number": "Article 1", "clause_index": 1, "chapter": chapter},
        ),
        (
            "clause",
            f"/{chapter}/",
            {"clause_number": "Article 2", "clause_index": 2, "chapter": chapter},
        ),
        (
            "clause",
            f"/{chapter}/{section}/",
            {
                "clause_number": "Article 3",
                "clause_index": 3,
                "chapter": chapter,
                "section": section,
            },
        ),
    ]
    # References (Article 8(1), Article 7 out of sequence, Article 16 TFEU, Article 5 of)
    # stay in the text around them.
    assert "Article 7 Guidelines" in rows[0].text and "Article 8(1)" in rows[0].text
    assert "Article 16 TFEU applies." in rows[2].text
    assert "Article 5 of Directive" in rows[2].text
    assert [r.text.split()[:2] for r in rows[1:]] == [["Article", str(n)] for n in (1, 2, 3)]
    # With its lines joined, a title runs into the clause text; only a title that ends its
    # line (or meets the next marker) is still recognised.
    titles = (
        ["Article 1", "Article 2", "Article 3"]
        if joined
        else [
            "Article 1 Subject-matter and objectives",
            "Article 2 Scope",
            "Article 3 Transparent information",
        ]
    )
    assert [r.logical_unit for r in rows[1:]] == titles
    assert [r.headings[-1] for r in rows[1:]] == titles


def test_policy_decimal_numbering_through_the_real_ir(
    tmp_path: Path, parser: DoclingParser
) -> None:
    source = tmp_path / "policy.md"
    source.write_text(
        "# Acceptable Use Policy\n\nThis policy applies to all staff.\n\n"
        "## 1. Purpose\n\n1.1 This policy protects company data.\n\n"
        "1.2 It follows ISO 27001 and section 3.2 of the handbook.\n\n"
        "## 2. Scope\n\nAll systems are in scope.\n\n"
        "## 3. Passwords\n\nStaff must:\n\n1. use a password manager;\n2. never share one.\n\n"
        "3.1 Length\n\nPasswords have at least 12 characters.\n\n"
        "3.2 Rotation\n\nPasswords change after a breach.\n",
        encoding="utf-8",
    )
    doc = docling_to_ir(parser.parse(source, "md"), doc_id="policy", source_sha256="0" * 64)
    rows = clauses(doc)

    purpose, passwords = "1. Purpose", "3. Passwords"
    assert [(r.chunk_type, r.header_path, r.headings, r.text) for r in rows] == [
        ("text", "/", [], "# Acceptable Use Policy\n\nThis policy applies to all staff."),
        ("clause", "/1. Purpose/", [purpose, "1.1"], "1.1 This policy protects company data."),
        (
            "clause",
            "/1. Purpose/",
            [purpose, "1.2"],
            "1.2 It follows ISO 27001 and section 3.2 of the handbook.",
        ),
        # `2.` has no `2.1`-style clauses under it: it is a clause itself.
        ("clause", "/", ["2. Scope"], "2. Scope\n\nAll systems are in scope."),
        # `3.` heads clauses; its own text (with a numbered list that starts nothing) is
        # a text chunk of the section.
        (
            "text",
            "/",
            [passwords],
            "3. Passwords\n\nStaff must:\n\n1. use a password manager;\n2. never share one.",
        ),
        (
            "clause",
            "/3. Passwords/",
            [passwords, "3.1 Length"],
            "3.1 Length\n\nPasswords have at least 12 characters.",
        ),
        (
            "clause",
            "/3. Passwords/",
            [passwords, "3.2 Rotation"],
            "3.2 Rotation\n\nPasswords change after a breach.",
        ),
    ]
    assert [own_metadata(r) for r in clause_rows(rows)] == [
        {"clause_number": "1.1", "clause_index": 1, "section": purpose},
        {"clause_number": "1.2", "clause_index": 2, "section": purpose},
        {"clause_number": "2.", "clause_index": 2},
        {"clause_number": "3.1", "clause_index": 1, "section": passwords},
        {"clause_number": "3.2", "clause_index": 2, "section": passwords},
    ]


def test_document_without_markers_becomes_text_chunks() -> None:
    doc = make_doc(
        [
            ("heading", "# Notes", 1),
            ("paragraph", "Nothing here is numbered.", None),
            ("table", "| a | b |\n|---|---|\n| 1 | 2 |", None),
        ]
    )
    rows = clauses(doc)

    assert [(r.chunk_type, r.header_path, r.headings, r.text) for r in rows] == [
        ("text", "/", [], "# Notes\n\nNothing here is numbered.\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    ]
    assert clauses(make_doc([])) == []


def test_chunk_ids_are_deterministic() -> None:
    doc = make_doc(CN_STATUTE)
    first, second = clauses(doc, max_tokens=16), clauses(doc, max_tokens=16)

    assert [r.chunk_id for r in first] == [r.chunk_id for r in second]
    assert [r.chunk_index for r in first] == list(range(len(first)))


# --- the real statutes through the real IR -----------------------------------------------------


@pytest.fixture(scope="module")
def parser() -> DoclingParser:
    return DoclingParser()


@pytest.fixture(scope="module")
def law(shared_fixtures: Path, parser: DoclingParser) -> StandardizedDocument:
    return docling_to_ir(
        parser.parse(shared_fixtures / LAW, "md"), doc_id="law", source_sha256="0" * 64
    )


@pytest.fixture(scope="module")
def gdpr(shared_fixtures: Path, parser: DoclingParser) -> StandardizedDocument:
    return docling_to_ir(
        parser.parse(shared_fixtures / GDPR, "txt"), doc_id="gdpr", source_sha256="0" * 64
    )


@pytest.fixture(scope="module")
def gdpr_lines(shared_fixtures: Path) -> StandardizedDocument:
    """The same text with its lines kept: one paragraph per blank-line block."""
    text = (shared_fixtures / GDPR).read_text(encoding="utf-8")
    blocks = [block.strip("\n") for block in text.split("\n\n") if block.strip()]
    return make_doc([("paragraph", block, None) for block in blocks], doc_id="gdpr-lines")


CN_ARTICLE_LINE = re.compile(r"^(第[一二三四五六七八九十百]+条)\s", re.MULTILINE)


def test_law_every_article_is_one_unit_and_cross_references_start_nothing(
    shared_fixtures: Path, law: StandardizedDocument
) -> None:
    expected = CN_ARTICLE_LINE.findall((shared_fixtures / LAW).read_text(encoding="utf-8"))
    assert len(expected) == LAW_ARTICLES
    # The document holds many more 第X条 that are references: 依照本法第三十九条...
    assert len(re.findall(r"第[一二三四五六七八九十百]+条", law.markdown)) > LAW_ARTICLES + 20

    whole = clauses(law, max_tokens=4096)  # large enough for every article to fit one chunk
    assert [r.logical_unit for r in clause_rows(whole)] == expected
    assert [r.metadata["clause_index"] for r in clause_rows(whole)] == list(range(1, 99))
    assert [r.chunk_type for r in whole].count("text") == 1  # title and adoption dates
    assert whole[0].text.startswith("# 中华人民共和国劳动合同法")
    article_14 = clause_rows(whole)[13]
    assert article_14.text.startswith("第十四条 ") and "本法第三十九条和第四十条" in article_14.text
    chapters = list(dict.fromkeys(r.metadata["chapter"] for r in clause_rows(whole)))
    assert chapters == [
        "第一章 总则",
        "第二章 劳动合同的订立",
        "第三章 劳动合同的履行和变更",
        "第四章 劳动合同的解除和终止",
        "第五章 特别规定",
        "第六章 监督检查",
        "第七章 法律责任",
        "第八章 附则",
    ]
    article_51 = clause_rows(whole)[50]
    assert (article_51.logical_unit, article_51.header_path) == (
        "第五十一条",
        "/第五章 特别规定/第一节 集体合同/",
    )
    assert article_51.metadata["section"] == "第一节 集体合同"

    split = clauses(law, max_tokens=128)  # long articles split, their number repeated
    assert units(split) == expected
    for row in clause_rows(split):
        assert row.text.startswith(f"{row.logical_unit} ") or row.text.startswith(
            f"{row.logical_unit}\n\n"
        )
    assert len(clause_rows(split)) > LAW_ARTICLES


def test_gdpr_every_article_heading_is_one_unit(
    shared_fixtures: Path, gdpr: StandardizedDocument, gdpr_lines: StandardizedDocument
) -> None:
    text = (shared_fixtures / GDPR).read_text(encoding="utf-8")
    headings = re.findall(r"^Article (\d+) *$", text, re.MULTILINE)
    assert [int(n) for n in headings] == list(range(1, GDPR_ARTICLES + 1))
    assert len(re.findall(r"^Article \d+", text, re.MULTILINE)) == 128  # the MANIFEST's count

    # Docling joins the extracted lines into paragraphs: markers sit inside lines.
    assert "Gener al provisions Article 1 Subject-matter" in gdpr.markdown
    joined = clauses(gdpr, max_tokens=100_000)
    kept = clauses(gdpr_lines, max_tokens=100_000)
    for rows in (joined, kept):
        assert [r.metadata["clause_index"] for r in rows[1:]] == list(range(1, GDPR_ARTICLES + 1))
        assert [r.chunk_type for r in rows] == ["text"] + ["clause"] * GDPR_ARTICLES
        # Recitals, with their references (Article 8(1) of the Charter, Article 16 TFEU).
        assert "Article 8(1) of the Char ter" in rows[0].text and "Article 16(1)" in rows[0].text
        assert rows[0].text.rstrip().endswith("HAVE ADOPTED THIS REGUL ATION:")
        assert len({r.metadata["chapter"] for r in rows[1:]}) == 11
        sections = {
            (r.metadata["chapter"], r.metadata["section"])
            for r in rows[1:]
            if "section" in r.metadata
        }
        assert len(sections) == 15
        article_5, article_12 = rows[5], rows[12]
        assert (
            article_5.logical_unit == "Article 5 Principles relating to processing of personal data"
        )
        assert article_5.header_path == "/CHAPTER II Principles/"
        assert article_12.header_path == (
            "/CHAPTER III Rights of the data subject/Section 1 Transparency and modalities/"
        )
        assert rows[-1].metadata["chapter"] == "CHAPTE R XI Final provision s"

    # With the lines kept every title is found, wrapped ones included; joined, a title that
    # runs into the article's text cannot be told apart from it and the unit is `Article N`.
    assert kept[12].logical_unit == (
        "Article 12 Transparent information, communication and modalities for the exercise "
        "of the rights of the data subject"
    )
    bare = [r.logical_unit for r in joined[1:] if r.logical_unit == r.metadata["clause_number"]]
    assert len(bare) == 17
    for mine, full in zip(joined[1:], kept[1:], strict=True):
        assert mine.logical_unit in (full.logical_unit, full.metadata["clause_number"])


def test_gdpr_split_articles_repeat_their_heading(gdpr: StandardizedDocument) -> None:
    rows = clauses(gdpr, max_tokens=256, overlap=32)

    assert len(units(rows)) == GDPR_ARTICLES
    for row in clause_rows(rows):
        assert row.text.startswith(row.logical_unit or "")
        assert row.token_count <= 256
