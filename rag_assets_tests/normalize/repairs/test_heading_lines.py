"""Numbered heading lines inside paragraphs become headings: text files the tests write (an
English regulation, a Chinese policy, a numbered manual) through the plain-text parser, and
the negatives that must stay text (numbered lists, cross-references, a contents page)."""

from __future__ import annotations

from pathlib import Path

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.normalize.adapt import to_ir
from rag_assets.normalize.repairs.heading_lines import split_heading_lines
from rag_assets.parsers.plaintext import PlainTextParser
from rag_assets.templates.base import heading_title
from rag_assets.templates.registry import build_template
from rag_assets.templates.tokens import ApproxTokenCounter

REGULATION = """\
REGULATION ON THE CARE OF SHARED GARDENS

HAVE ADOPTED THIS REGULATION:
CHAPTER I
General provisions
Article 1
Subject-matter
1. This Regulation lays down rules for the care of shared gardens and applies together with
Article 8(1) of the Charter and the rules in
Article 16 TFEU.
2. Gardens shall be open to every member of the association.
Article 2
Definitions and scope of the rules that apply to members of the
association
For the purposes of this Regulation, a plot is the part of a garden given to one member.
CHAPTER II
Duties of members
Article 3 Watering
Members shall water their plots at least twice a week between May and September.
Article 4 Compost
Compost shall be turned every month and kept away from the fences.
"""

POLICY_ZH = """\
远程办公管理办法

第一章
总则
第一条 目的
为规范远程办公，制定本办法。
第二条 适用范围
本办法适用于公司全体正式员工。
第三条 员工应当遵守本办法，不得泄露公司机密。
第二章 审批
第四条 申请
员工应当提前两个工作日提交申请。
"""

MANUAL = """\
Pump Operator Manual

1. Introduction
This manual covers the P-200 pump.
1.1 Scope
It applies to installation and routine care.
1.2 Conventions
Values are given in metric units.
2. Installation
Mount the pump on a level base.
2.1 Requirements
A 230 V supply and a drain are needed.
To clean the filter:
1. Open the lid
2. Remove the filter
3. Rinse it under water
"""

LIST_ONLY = """\
Cleaning the filter

1. Open the lid
Lift it gently with both hands.
2. Remove the filter
Pull it straight out.
3. Rinse the filter
Use cold water only.
"""

CONTENTS_THEN_BODY = """\
Contents
Article 1 Scope
Article 2 Terms
Article 3 Fees

Article 1
Scope
This agreement covers the lease of the hall.
Article 2
Terms
The lease runs for one year.
Article 3
Fees
The fee is due on the first day of each month.
"""


def _ir(tmp_path: Path, text: str) -> StandardizedDocument:
    path = tmp_path / "doc.txt"
    path.write_text(text, encoding="utf-8")
    return to_ir(PlainTextParser().parse(path, "txt"), doc_id="d", source_sha256="x")


def _headings(doc: StandardizedDocument) -> list[tuple[int | None, str]]:
    return [(e.level, heading_title(e)) for e in doc.headings()]


def test_a_regulations_chapters_and_articles_become_headings(tmp_path: Path) -> None:
    doc = _ir(tmp_path, REGULATION)
    assert _headings(doc) == [
        (1, "CHAPTER I General provisions"),
        (2, "Article 1 Subject-matter"),
        # A title wrapped over lines is joined; its first line reads as a title.
        (
            2,
            "Article 2 Definitions and scope of the rules that apply to members of the association",
        ),
        (1, "CHAPTER II Duties of members"),
        (2, "Article 3 Watering"),
        (2, "Article 4 Compost"),
    ]
    assert doc.metadata["repairs"]["heading_lines_split"] == 6
    # Cross-references at a line start stay in their paragraph, as do its numbered points.
    article_1 = next(e for e in doc.elements if e.text.startswith("1. This Regulation"))
    assert "Article 8(1) of the Charter" in article_1.text
    assert "Article 16 TFEU." in article_1.text
    assert "2. Gardens shall be open" in article_1.text


def test_every_template_sees_the_articles(tmp_path: Path) -> None:
    doc = _ir(tmp_path, REGULATION)
    options = {"max_tokens": 64, "overlap_tokens": 8, "min_tokens": 0}
    rows = build_template("semantic", options).chunk(doc, ApproxTokenCounter())
    watering = next(r for r in rows if "twice a week" in r.text)
    assert watering.headings == ["CHAPTER II Duties of members", "Article 3 Watering"]
    assert watering.text.startswith("## Article 3 Watering")
    # No chunk is a heading alone: CHAPTER II has no text of its own.
    assert all(r.text.split("\n\n", 1)[1:] for r in rows if r.headings)
    assert not any(r.text.strip() == "# CHAPTER II Duties of members" for r in rows)
    clauses = build_template("clauses", options).chunk(doc, ApproxTokenCounter())
    units = [r.logical_unit for r in clauses if r.chunk_type == "clause"]
    assert "Article 3 Watering" in units and "Article 4 Compost" in units


def test_chinese_chapters_and_titled_articles_become_headings(tmp_path: Path) -> None:
    doc = _ir(tmp_path, POLICY_ZH)
    assert _headings(doc) == [
        (1, "第一章 总则"),
        (2, "第一条 目的"),
        (2, "第二条 适用范围"),
        (1, "第二章 审批"),
        (2, "第四条 申请"),
    ]
    # An article whose text runs on after its number is a sentence: it stays in its paragraph.
    assert any(e.type == "paragraph" and "\n第三条 员工应当" in e.text for e in doc.elements)


def test_a_numbered_manual_gets_its_sections_and_keeps_its_list(tmp_path: Path) -> None:
    doc = _ir(tmp_path, MANUAL)
    assert _headings(doc) == [
        (1, "1. Introduction"),
        (2, "1.1 Scope"),
        (2, "1.2 Conventions"),
        (1, "2. Installation"),
        (2, "2.1 Requirements"),
    ]
    last = doc.elements[-1]
    assert last.type == "paragraph"
    assert last.text.endswith("1. Open the lid\n2. Remove the filter\n3. Rinse it under water")


def test_a_numbered_list_in_prose_stays_text(tmp_path: Path) -> None:
    # Single numbers only, each item with a line under it: a list, not sections.
    doc = _ir(tmp_path, LIST_ONLY)
    assert doc.headings() == []
    assert doc.metadata["repairs"]["heading_lines_split"] == 0


def test_a_contents_page_stays_text_and_the_body_is_found(tmp_path: Path) -> None:
    doc = _ir(tmp_path, CONTENTS_THEN_BODY)
    assert _headings(doc) == [
        (1, "Article 1 Scope"),
        (1, "Article 2 Terms"),
        (1, "Article 3 Fees"),
    ]
    assert doc.elements[0].type == "paragraph"
    assert doc.elements[0].text.startswith("Contents\nArticle 1 Scope")


def test_numbers_that_do_not_count_on_are_no_headings(tmp_path: Path) -> None:
    text = (
        "Notes\n\nArticle 7\nRepealed provisions\nSee the annex.\n\nArticle 31\nOther rules\nNone."
    )
    doc = _ir(tmp_path, text)
    assert doc.headings() == []


def test_a_paragraph_spanning_pages_is_left_whole() -> None:
    text = "Article 1\nScope\nThe rules apply.\nArticle 2\nTerms\nOne year."
    spanning = DocumentElement(type="paragraph", text=text, page_start=3, page_end=4)
    one_page = spanning.model_copy(update={"page_start": 4})
    assert split_heading_lines([spanning]) == ([spanning], 0)
    elements, made = split_heading_lines([one_page])
    assert made == 2
    assert [(e.type, e.page_start) for e in elements] == [
        ("heading", 4),
        ("paragraph", 4),
        ("heading", 4),
        ("paragraph", 4),
    ]
