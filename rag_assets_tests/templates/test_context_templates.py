"""Ground truth for `context_text`, the text every template embeds and BM25 matches: the
document title and heading breadcrumb, then the chunk's own text, for each template.

Counts use ApproxTokenCounter (one token per word, punctuation run or CJK character).
"""

from __future__ import annotations

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.templates.base import TemplateOptions, contextualize
from rag_assets.templates.clauses import ClausesTemplate
from rag_assets.templates.fixed import FixedTemplate
from rag_assets.templates.qa_pairs import QAPairsOptions, QAPairsTemplate
from rag_assets.templates.references import cited_articles, cited_context
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.spec import SpecOptions, SpecTemplate
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import Item, assert_blocking_checks_pass, make_doc

APPROX = ApproxTokenCounter()
TITLE = "SD Host Controller"


def titled(items: list[Item]) -> StandardizedDocument:
    return make_doc(items).model_copy(update={"title": TITLE})


def contexts(rows: list[ChunkRow]) -> list[str]:
    return [row.context_text for row in rows]


# --- contextualize -------------------------------------------------------------------------


def test_contextualize_leaves_out_the_heading_the_text_opens_with() -> None:
    assert contextualize("T", ["A", "B"], "## B\n\nbody") == "T › A\n\n## B\n\nbody"
    # The own heading is kept when the text does not open with it (a Q&A pair).
    assert contextualize("T", ["A", "B"], "Q: why?") == "T › A › B\n\nQ: why?"
    # Whole words only: "1 Scope" does not open "1 Scopes".
    assert contextualize(None, ["1 Scope"], "1 Scopes differ") == "1 Scope\n\n1 Scopes differ"
    # A heading wrapped over lines, as clause titles are in extracted text.
    assert contextualize(None, ["A", "Article 5 Principles"], "Article 5\nPrinciples\n\nx") == (
        "A\n\nArticle 5\nPrinciples\n\nx"
    )
    # A title heading that is the document title is given once; nothing to add: the text.
    assert contextualize("Manual", ["Manual", "1 Scope"], "## 1 Scope\n\nx") == (
        "Manual\n\n## 1 Scope\n\nx"
    )
    assert contextualize(None, [], "x") == "x"
    assert contextualize("Manual", [], "# Manual\n\nPreface") == "# Manual\n\nPreface"


# --- semantic ------------------------------------------------------------------------------

SPEC_ITEMS: list[Item] = [
    ("title", "SD Host Controller", None, 1),
    ("paragraph", "Version 4.2 of the register interface, for host driver authors.", None, 1),
    ("heading", "# 7 Data transfer", 1, 2),
    ("heading", "## 7.4 Block operations", 2, 2),
    ("paragraph", "Alpha one two three. Beta one two three. Gamma one two three.", None, 2),
]


def test_semantic_breadcrumb_is_title_and_ancestors_then_the_text() -> None:
    doc = titled(SPEC_ITEMS)
    # Heading line 4 tokens, sentences 4 each: two sentences per chunk of 14.
    options = TemplateOptions(max_tokens=14, overlap_tokens=0, min_tokens=0)
    rows = SemanticTemplate(options).chunk(doc, APPROX)

    assert [row.text for row in rows] == [
        "# SD Host Controller\n\nVersion 4.2 of the register interface, for host driver authors.",
        "## 7.4 Block operations\n\nAlpha one two three. Beta one two three.",
        "## 7.4 Block operations\n\nGamma one two three.",
    ]
    assert contexts(rows) == [
        # The title section opens with the title: nothing to add.
        rows[0].text,
        # "7 Data transfer" has no chunk of its own; it lives on in the breadcrumb.
        f"{TITLE} › 7 Data transfer\n\n{rows[1].text}",
        f"{TITLE} › 7 Data transfer\n\n{rows[2].text}",
    ]
    # What a person reads, and the ids, come from `text` alone.
    assert [r.chunk_id for r in rows] == [
        chunk_id_for("doc-1", "semantic", r.chunk_index, r.text) for r in rows
    ]


# --- fixed ---------------------------------------------------------------------------------


def test_fixed_breadcrumb_is_where_the_window_starts() -> None:
    doc = titled(SPEC_ITEMS)
    rows = FixedTemplate(TemplateOptions(max_tokens=12, overlap_tokens=0)).chunk(doc, APPROX)

    assert [row.text for row in rows] == [
        "SD Host Controller\n\nVersion 4.2 of the register interface, for host driver",
        "authors.\n\n# 7 Data transfer\n\n## 7.4 Block operations\n\nAlpha one two",
        "three. Beta one two three. Gamma one two three.",
    ]
    assert contexts(rows) == [
        rows[0].text,  # it opens with the title
        f"{TITLE}\n\n{rows[1].text}",  # it starts in the preface, under the title
        f"{TITLE} › 7 Data transfer › 7.4 Block operations\n\n{rows[2].text}",
    ]
    # Provenance stays the baseline's: no headings of its own.
    assert {(row.header_path, tuple(row.headings)) for row in rows} == {("/", ())}


# --- clauses -------------------------------------------------------------------------------


def test_clauses_breadcrumb_is_chapter_and_section_above_the_clause() -> None:
    doc = titled(
        [
            ("heading", "# 物业管理条例", 1, 1),
            ("paragraph", "2020年1月1日通过", None, 1),
            ("heading", "## 第二章 管理", 2, 1),
            ("heading", "### 第一节 一般规定", 3, 1),
            ("paragraph", "第三条 管理机构应当：", None, 1),
            ("paragraph", "（一）登记；", None, 1),
            ("paragraph", "（二）备案。", None, 1),
        ]
    ).model_copy(update={"title": "物业管理条例"})
    options = TemplateOptions(max_tokens=16, overlap_tokens=0)
    rows = ClausesTemplate(options).chunk(doc, APPROX)
    assert_blocking_checks_pass(rows, doc, headings_from_text=True)

    assert [(row.text, row.context_text) for row in rows] == [
        # The preamble is sized with the title crumb before it (21 tokens, over 16): the
        # title heading alone is no chunk, and lives on in the breadcrumb.
        ("2020年1月1日通过", "物业管理条例\n\n2020年1月1日通过"),
        (
            "第三条 管理机构应当：",
            "物业管理条例 › 第二章 管理 › 第一节 一般规定\n\n第三条 管理机构应当：",
        ),
        # A later chunk of the clause repeats its heading line: still not in the breadcrumb.
        (
            "第三条\n\n（一）登记；\n\n（二）备案。",
            "物业管理条例 › 第二章 管理 › 第一节 一般规定\n\n第三条\n\n（一）登记；\n\n（二）备案。",
        ),
    ]


# --- qa_pairs ------------------------------------------------------------------------------


def test_qa_breadcrumb_names_part_and_topic_above_the_question() -> None:
    doc = titled(
        [
            ("heading", "## 備用問答", 2, 1),
            ("heading", "### (A) 排水系統", 3, 1),
            ("paragraph", "問 A1：容量是否足夠？", None, 1),
            ("paragraph", "答 A1：足夠。", None, 1),
            ("heading", "## 背景", 2, 2),
            ("paragraph", "工程於二零二零年展開。", None, 2),
        ]
    )
    options = QAPairsOptions(max_tokens=64, overlap_tokens=0, llm_structure="off")
    rows = QAPairsTemplate(options).chunk(doc, APPROX)
    assert_blocking_checks_pass(rows, doc, headings_from_text=True)

    assert contexts(rows) == [
        # A pair's text is the question: the topic it sits under is in the breadcrumb.
        f"{TITLE} › 備用問答 › (A) 排水系統\n\n問 A1：容量是否足夠？\n\n答 A1：足夠。",
        # A narrative section opens with its heading line; an H2 ranks as a topic, so it
        # sits in the part above it.
        f"{TITLE} › 備用問答\n\n背景\n\n工程於二零二零年展開。",
    ]


# --- spec ----------------------------------------------------------------------------------

TABLE = "| Offset | Name |\n|---|---|\n| 0x04 | Host Control |\n| 0x08 | Power Control |"


def test_spec_table_rows_and_terms_carry_the_sections_above_them() -> None:
    doc = titled(
        [
            ("heading", "# 4 Registers", 1, 1),
            ("heading", "## 4.2 Control", 2, 1),
            ("paragraph", "The control registers set up every transfer of the host.", None, 1),
            ("caption", "Table 3: Control Registers", None, 1),
            ("table", TABLE, None, 1),
            ("heading", "## 4.3 Power", 2, 2),
            ("table", "| Offset | Name |\n|---|---|\n| 0x0C | Power State |", None, 2),
            ("heading", "# 5 Glossary", 1, 3),
            ("paragraph", "ADMA: Advanced DMA.", None, 3),
        ]
    )
    rows = SpecTemplate(SpecOptions(min_tokens=0)).chunk(doc, APPROX)
    assert_blocking_checks_pass(rows, doc)
    by_text = {row.text: row.context_text for row in rows}

    sections = f"{TITLE} › 4 Registers"
    row = "[Table 3: Control Registers] Offset: 0x04 | Name: Host Control"
    assert by_text[row] == f"{sections} › 4.2 Control\n\n{row}"
    # Without a caption the table is named by its section: not given twice.
    uncaptioned = "[4.3 Power] Offset: 0x0C | Name: Power State"
    assert by_text[uncaptioned] == f"{sections}\n\n{uncaptioned}"
    assert by_text["ADMA: Advanced DMA."] == f"{TITLE} › 5 Glossary\n\nADMA: Advanced DMA."
    body = "## 4.2 Control\n\nThe control registers set up every transfer of the host."
    assert by_text[body] == f"{sections}\n\n{body}"


# --- cited articles ------------------------------------------------------------------------

POLICY_ITEMS: list[Item] = [
    ("heading", "## 第三章 工作要求", 2, 1),
    ("paragraph", "第八条 员工须通过公司 VPN 访问内部系统，不得使用公共无线网络处理机密资料。", None, 1),
    ("paragraph", "第九条 公司配发的笔记本电脑须开启全盘加密，锁屏时间不得超过五分钟。", None, 1),
    ("heading", "## 第五章 附则", 2, 1),
    ("paragraph", "第十二条 违反本办法第八条或第九条的，公司可以暂停其远程办公资格三个月。", None, 1),
]  # fmt: skip
ARTICLE_8 = "第八条 员工须通过公司 VPN 访问内部系统，不得使用公共无线网络处理机密资料。"
ARTICLE_9 = "第九条 公司配发的笔记本电脑须开启全盘加密，锁屏时间不得超过五分钟。"
PENALTY = "第十二条 违反本办法第八条或第九条的，公司可以暂停其远程办公资格三个月。"


def test_cited_articles_are_those_of_this_document() -> None:
    assert cited_articles(PENALTY) == [8, 9]
    assert cited_articles("依照本法第四十六条、第四十七条第二款规定") == [46, 47]
    assert cited_articles("as set out in Articles 5, 6 and 9 of this Regulation") == [5, 6, 9]
    assert cited_articles("Article 83(4) of this Regulation applies") == [83]
    # Another act's articles, or a bare number that may be one: nothing to look up.
    assert cited_articles("Article 6(1) of Directive 95/46/EC and Article 9") == []
    assert cited_articles("依照《劳动法》第八条") == []


def test_a_short_chunk_citing_articles_has_their_openings_in_its_context() -> None:
    doc = titled(POLICY_ITEMS)
    for template in (SemanticTemplate(), ClausesTemplate()):
        penalty = next(row for row in template.chunk(doc, APPROX) if PENALTY in row.text)
        # What a question about public Wi-Fi matches: the rule the penalty names by number.
        assert penalty.context_text.endswith(f"{PENALTY}\n\n{ARTICLE_8}\n\n{ARTICLE_9}")
        assert ARTICLE_8 not in penalty.text  # what a person reads is unchanged
    # The baseline knows no articles; a chunk holding the cited article adds nothing.
    assert all(row.context_text.count(ARTICLE_8) <= 1 for row in FixedTemplate().chunk(doc, APPROX))
    # An article the chunk holds itself is not repeated.
    openings = {8: ARTICLE_8, 9: ARTICLE_9}
    assert cited_context(f"{ARTICLE_8}\n\n{PENALTY}", openings) == [ARTICLE_9]


def test_a_long_chunk_cites_nothing_more() -> None:
    # Over half the limit, a chunk has words enough of its own.
    doc = titled(POLICY_ITEMS)
    rows = ClausesTemplate(TemplateOptions(max_tokens=60, overlap_tokens=0)).chunk(doc, APPROX)
    penalty = next(row for row in rows if PENALTY in row.text)
    assert penalty.token_count > 30 and ARTICLE_8 not in penalty.context_text
