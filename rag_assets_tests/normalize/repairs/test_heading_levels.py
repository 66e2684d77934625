"""Heading levels recovered from numbering on hand-built IR: stated levels are kept, guessed ones
follow the numbering."""

from __future__ import annotations

from rag_assets.contracts.ir import (
    DocumentElement,
)
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED, recover_heading_levels
from rag_assets_tests.support.builders import (
    heading,
    levels,
)


def test_flat_decimal_levels_follow_numbering_below_the_title() -> None:
    title = DocumentElement(type="title", text="# Widget Handbook", level=1)
    flat = [
        title,
        heading("1 Introduction"),
        heading("1.1 Scope"),
        heading("1.1.1 Terms"),
        heading("Notes"),
        heading("2 Use"),
        heading("References"),
    ]
    out, changed = recover_heading_levels(flat)
    assert levels(out) == [
        (2, "## 1 Introduction"),
        (3, "### 1.1 Scope"),
        (4, "#### 1.1.1 Terms"),
        (5, "##### Notes"),
        (2, "## 2 Use"),
        (2, "## References"),
    ]
    assert changed == 3
    assert out[0] == title


def test_without_a_title_7_is_level_1_and_7_4_1_level_3() -> None:
    out, changed = recover_heading_levels(
        [heading("7 Parking"), heading("7.4 Sizes"), heading("7.4.1 Lanes"), heading("7.5 Signs")]
    )
    assert [e.level for e in out] == [1, 2, 3, 2]
    assert changed == 2  # 7.4 and 7.5 were at level 2 already
    # A page of sections 7.4 ... with no bare 7: depth still decides.
    out, _ = recover_heading_levels(
        [heading("7.4 Sizes", 1), heading("7.4.1 Lanes", 1), heading("7.5 Signs", 1)]
    )
    assert [e.level for e in out] == [2, 3, 2]


def test_cjk_chapter_section_article() -> None:
    out, _ = recover_heading_levels(
        [
            heading("第一章 总则"),
            heading("第一节 范围"),
            heading("第一条 目的"),
            heading("第二条 定义"),
            heading("第二节 术语"),
            heading("第三条 用语"),
            heading("第二章 附则"),
        ]
    )
    assert [e.level for e in out] == [1, 2, 3, 3, 2, 3, 1]


def test_a_filings_items_are_siblings_under_its_parts() -> None:
    # Font sizes gave the first item of each part a larger heading than the others, which
    # put every later item and its sections under `Item 5`.
    title = DocumentElement(type="title", text="# FORM 10-K", level=1)
    guessed = [
        title,
        heading("PART I", 2),
        heading("ITEM 1. BUSINESS", 2),
        heading("Overview", 3),
        heading("Item 1A. Risk Factors", 3),
        heading("PART II", 2),
        heading("ITEM 5. MARKET FOR REGISTRANT'S COMMON EQUITY", 2),
        heading("ITEM 7A. QUANTITATIVE AND QUALITATIVE DISCLOSURES", 3),
        heading("ITEM 8. FINANCIAL STATEMENTS", 3),
        heading("CONSOLIDATED BALANCE SHEETS", 3),
        heading("ITEMS 10, 11 and 12. DIRECTORS", 3),
        heading("Item 2.02 Results of Operations and Financial Condition", 3),
    ]
    out, _ = recover_heading_levels(guessed)
    assert [e.level for e in out[1:]] == [2, 3, 4, 3, 2, 3, 3, 3, 4, 3, 3]


def test_a_covers_headings_stand_beside_the_first_item_not_above_every_item() -> None:
    # `PART I` and `PART II` were read as running text: the cover's last line would have
    # parented Items 1 to 9; `PART III` still ranks above its items.
    title = DocumentElement(type="title", text="# UNITED STATES SECURITIES AND EXCHANGE", level=1)
    guessed = [
        title,
        heading("FORM 10-K", 2),
        heading("Documents Incorporated By Reference:", 2),
        heading("Item 1. Business", 3),
        heading("General", 4),
        heading("Item 7. Management's Discussion and Analysis", 3),
        heading("PART III", 2),
        heading("Item 10. Directors", 3),
    ]
    out, _ = recover_heading_levels(guessed)
    assert [e.level for e in out[1:]] == [3, 3, 3, 4, 3, 2, 3]
    # Before a decimal section the cover stays on top: `Introduction` may hold `1.1`.
    spec = [heading("Introduction"), heading("1.1 Scope"), heading("1.2 Terms"), heading("2 Use")]
    assert [e.level for e in recover_heading_levels(spec)[0]] == [1, 2, 2, 1]


def test_chapter_section_article_order_comes_from_the_document() -> None:
    gdpr = [
        heading("CHAPTER I General"),
        heading("Article 1 Subject"),
        heading("CHAPTER III Rights"),
        heading("Section 1 Transparency"),
        heading("Article 12 Information"),
        heading("Section 2 Access"),
        heading("Article 15 Right of access"),
    ]
    assert [e.level for e in recover_heading_levels(gdpr)[0]] == [1, 3, 1, 2, 3, 2, 3]
    constitution = [
        heading("Article I Legislature"),
        heading("Section 1 Powers"),
        heading("Section 2 House"),
        heading("Article II Executive"),
        heading("Section 1 President"),
    ]
    assert [e.level for e in recover_heading_levels(constitution)[0]] == [1, 2, 2, 1, 2]


def test_topic_letters_above_numbered_questions() -> None:
    paren = [
        heading("(A) Background"),
        heading("(1) Why now?"),
        heading("(2) Who pays?"),
        heading("(B) Funding"),
        heading("(1) How much?"),
    ]
    assert [e.level for e in recover_heading_levels(paren)[0]] == [1, 2, 2, 1, 2]
    dotted = [heading("A. Policy"), heading("1. Scope"), heading("2. Cost"), heading("B. Review")]
    assert [e.level for e in recover_heading_levels(dotted)[0]] == [1, 2, 2, 1]


def test_chapter_stands_for_the_first_decimal_depth() -> None:
    out, _ = recover_heading_levels(
        [
            heading("Chapter 3 Design"),
            heading("3.1 Layout"),
            heading("3.1.1 Grid"),
            heading("Chapter 4 Build"),
        ]
    )
    assert [e.level for e in out] == [1, 2, 3, 1]


def test_number_only_heading_front_matter_and_repeated_titles() -> None:
    out, _ = recover_heading_levels(
        [
            heading("Security Guide"),
            heading("Contents"),
            heading("1"),
            heading("Securing data"),
            heading("1.1 Basics"),
            heading("Column mask"),
            heading("2 Roles"),
            heading("Security Guide"),
            heading("About us"),
        ]
    )
    assert [e.level for e in out] == [1, 1, 1, 1, 2, 3, 1, 1, 2]


def test_section_numbers_printed_after_the_title() -> None:
    out, _ = recover_heading_levels(
        [
            heading("이슈와 논점"),
            heading("들어가며 1"),
            heading("현황 2"),
            heading("(1) 법률 개정"),
            heading("(2) 약관"),
            heading("문제점 3"),
            heading("(1) 해석"),
            heading("4"),
            heading("맺으며"),
        ]
    )
    assert [e.level for e in out] == [1, 1, 1, 2, 2, 1, 2, 1, 1]


def test_levels_that_agree_with_numbering_are_left_alone() -> None:
    docx = [
        DocumentElement(type="title", text="# Test Document", level=1),
        heading("1 Section", 2),
        heading("1.1 Section", 3),
        heading("1.2.1 Section", 4),
        heading("REFERENCES", 3),
    ]
    assert recover_heading_levels(docx) == (docx, 0)
    one_style = [heading("1 Intro"), heading("Background"), heading("2 Method")]
    assert recover_heading_levels(one_style) == (one_style, 0)
    unnumbered = [heading("Deployment", 1), heading("Running it", 2)]
    assert recover_heading_levels(unnumbered) == (unnumbered, 0)
    # A lone line that looks numbered ("3.11." from a date) is no numbering pattern.
    stray = [
        heading("(1) Scope", 1),
        heading("3.11. declared a pandemic", 1),
        heading("(2) Cost", 1),
    ]
    assert recover_heading_levels(stray) == (stray, 0)


def test_stated_levels_are_never_changed_guessed_ones_are_filled() -> None:
    """Markup states levels ("Header 2" is no section number); a flat PDF guess is filled in."""
    stated = [
        heading("Header 1", 1).model_copy(update={"metadata": {LEVEL_STATED: True}}),
        heading("Header 2", 2).model_copy(update={"metadata": {LEVEL_STATED: True}}),
        heading("Header 3", 3).model_copy(update={"metadata": {LEVEL_STATED: True}}),
    ]
    assert recover_heading_levels(stated) == (stated, 0)
    mixed = [
        heading("Chapter 1 Intro", 1).model_copy(update={"metadata": {LEVEL_STATED: True}}),
        heading("1.1 Foo", 1),
        heading("1.1.1 Bar", 1),
        heading("Chapter 2 Scope", 2).model_copy(update={"metadata": {LEVEL_STATED: True}}),
    ]
    out, changed = recover_heading_levels(mixed)
    assert ([e.level for e in out], changed) == ([1, 2, 3, 2], 2)


def test_trailing_numbers_count_only_from_one() -> None:
    products = [heading("Overview"), heading("Windows 10"), heading("Windows 11"), heading("Notes")]
    assert recover_heading_levels(products) == (products, 0)
