"""Ground truth for `qa_pairs`: hand-built IR, a generated LegCo paper through PyMuPDF, and
the FAQ fixtures through Docling. Every chunk set must pass the blocking chunk checks.

Hand-built tests count with ApproxTokenCounter (one token per word, punctuation run or
CJK character), so limits can be worked out by hand.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest
from pydantic import ValidationError

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.parsers.base import ParsedDocument
from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.qa_pairs import FALLBACK_NOTE, QAPairsOptions, QAPairsTemplate
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support import builders
from rag_assets_tests.support import legco_paper as paper
from rag_assets_tests.support.builders import Item, assert_blocking_checks_pass

make_doc = partial(builders.make_doc, doc_id="paper", source_path="inbox/paper.pdf")
APPROX = ApproxTokenCounter()


def chunk(
    doc: StandardizedDocument, max_tokens: int = 512, overlap: int = 0, notes: str = "keep"
) -> list[ChunkRow]:
    options = QAPairsOptions(max_tokens=max_tokens, overlap_tokens=overlap, internal_notes=notes)
    rows = QAPairsTemplate(options).chunk(doc, APPROX)
    assert_blocking_checks_pass(rows, doc, headings_from_text=True)
    return rows


def pairs(rows: list[ChunkRow]) -> list[ChunkRow]:
    return [r for r in rows if r.metadata["section_type"] == "qa"]


def squash(text: str) -> str:
    """Text without whitespace: PyMuPDF puts a space where a CJK line wrapped."""
    return "".join(text.split())


# --- question and answer markers ---------------------------------------------------------


def test_chinese_markers_with_every_colon_and_spacing() -> None:
    doc = make_doc(
        [
            ("heading", "## 備用問答", 2, 1),
            ("heading", "### (A) 排水系統", 3, 1),
            ("paragraph", "問 A1：容量是否足夠？", None, 1),
            ("paragraph", "答 A1：足夠。", None, 1),
            ("paragraph", "問A2︰何時完成？ 答A2︰明年完成。", None, 1),  # one paragraph
            # One paragraph, two lines.
            ("paragraph", "問 A3:費用多少？\n答 A3: 二十億元。", None, 1),
            ("paragraph", "問 ：誰負責？", None, 2),  # no id: numbered after A1-A3
            ("paragraph", "答 ︰渠務署。", None, 2),
        ]
    )
    rows = chunk(doc)

    assert [r.text for r in rows] == [
        "問 A1：容量是否足夠？\n\n答 A1：足夠。",
        "問A2︰何時完成？\n\n答A2︰明年完成。",
        "問 A3:費用多少？\n\n答 A3: 二十億元。",
        "問 ：誰負責？\n\n答 ︰渠務署。",
    ]
    assert [
        (r.logical_unit, r.metadata["question_id"], r.metadata["question_index"]) for r in rows
    ] == [("A1", "A1", 0), ("A2", "A2", 1), ("A3", "A3", 2), ("A4", "A4", 3)]
    assert [r.metadata["question_text"] for r in rows] == [
        "容量是否足夠？",
        "何時完成？",
        "費用多少？",
        "誰負責？",
    ]
    assert {(r.chunk_type, r.header_path, tuple(r.headings)) for r in rows} == {
        ("qa", "/備用問答/", ("備用問答", "(A) 排水系統"))
    }
    assert rows[3].metadata["source_page_range"] == [2, 2]


def test_question_runs_to_its_answer_and_answer_to_the_next_boundary() -> None:
    doc = make_doc(
        [
            ("paragraph", "備用問答", None, 1),  # part and topic as plain text lines
            ("paragraph", "(A) 排水系統", None, 1),
            ("paragraph", "問 A1：第一行問題，", None, 1),
            ("paragraph", "第二行問題？", None, 1),
            ("paragraph", "答 A1：答案。", None, 1),
            ("paragraph", "(1) 答案內的列舉", None, 1),  # inside an answer: not a heading
            ("paragraph", "- (B) 交通配套", None, 2),  # a topic, as PyMuPDF writes it in a list
            ("paragraph", "問 B1：交通？", None, 2),
            ("paragraph", "答 B1：會改道。", None, 2),
            ("heading", "## 備用問題", 2, 2),
            ("paragraph", "問 C1：其後？", None, 2),
            ("paragraph", "答 C1：完。", None, 2),
        ]
    )
    rows = chunk(doc)

    assert [(r.logical_unit, r.headings, r.text) for r in rows] == [
        (
            "A1",
            ["備用問答", "(A) 排水系統"],
            "問 A1：第一行問題，\n\n第二行問題？\n\n答 A1：答案。\n\n(1) 答案內的列舉",
        ),
        ("B1", ["備用問答", "(B) 交通配套"], "問 B1：交通？\n\n答 B1：會改道。"),
        ("C1", ["備用問題"], "問 C1：其後？\n\n答 C1：完。"),
    ]
    assert rows[0].metadata["question_text"] == "第一行問題， 第二行問題？"
    assert [r.header_path for r in rows] == ["/備用問答/", "/備用問答/", "/"]


def test_a_question_without_its_answer_marker_is_its_first_line() -> None:
    doc = make_doc(
        [
            ("paragraph", "問 A1：沒有答的標記？", None, 1),
            ("paragraph", "這一段就是答案。", None, 1),
            ("paragraph", "問 A2：下一題？", None, 1),
        ]
    )
    rows = chunk(doc)

    assert [r.text for r in rows] == [
        "問 A1：沒有答的標記？\n\n這一段就是答案。",
        "問 A2：下一題？",
    ]


def test_english_numbered_questions_answer_until_the_next_question_or_topic() -> None:
    items: list[Item] = [("heading", "## Supplementary Questions", 2, 1)]
    for n in range(1, 25):
        if n == 13:
            items.append(("paragraph", "(B) Transport", None, 2))
        items.append(("paragraph", f"Q{n} Will item {n} go ahead?", None, 1 if n < 13 else 2))
        items.append(("paragraph", f"Yes, item {n} goes ahead.", None, 1 if n < 13 else 2))
        if n % 2:
            items.append(("paragraph", f"Item {n} is funded.", None, 1 if n < 13 else 2))
    rows = chunk(make_doc(items))

    assert len(rows) == 24
    assert [r.metadata["question_id"] for r in rows] == [f"Q{n}" for n in range(1, 25)]
    assert (
        rows[0].text == "Q1 Will item 1 go ahead?\n\nYes, item 1 goes ahead.\n\nItem 1 is funded."
    )
    assert rows[11].text == "Q12 Will item 12 go ahead?\n\nYes, item 12 goes ahead."
    assert rows[0].metadata["question_text"] == "Will item 1 go ahead?"
    assert {r.metadata["section_heading"] for r in rows[:12]} == {"Supplementary Questions"}
    assert {tuple(r.headings) for r in rows[12:]} == {("Supplementary Questions", "(B) Transport")}


def test_others_part_without_markers() -> None:
    doc = make_doc(
        [
            ("heading", "## Others", 2, 1),
            ("paragraph", "以下為其他問題。", None, 1),
            ("paragraph", "租金如何釐定？", None, 1),
            ("paragraph", "參照同區公屋。", None, 1),
            ("paragraph", "每兩年檢討。", None, 1),
            ("paragraph", "[如被追問：會否加租？視乎檢討結果。]", None, 1),
            ("paragraph", "會否影響農地？", None, 2),
            ("paragraph", "不涉及農地。", None, 2),
        ]
    )
    rows = chunk(doc)

    assert [(r.metadata["section_type"], r.logical_unit, r.text) for r in rows] == [
        ("narrative", None, "Others\n\n以下為其他問題。"),
        (
            "qa",
            "O1",
            "租金如何釐定？\n\n參照同區公屋。\n\n每兩年檢討。\n\n[如被追問：會否加租？視乎檢討結果。]",
        ),
        ("qa", "O2", "會否影響農地？\n\n不涉及農地。"),
    ]
    assert [r.page_start for r in rows] == [1, 1, 2]


# --- inside answers ------------------------------------------------------------------------

NOTES_DOC: list[Item] = [
    ("paragraph", "問 A1：預算多少？", None, 1),
    ("paragraph", "答 A1：約二十億元。[內部參考：見附件[2]。] 尚待批核。", None, 1),
    ("paragraph", "[內部補充資料：", None, 1),  # a note over three paragraphs
    ("paragraph", "截至四月，已登記三百戶。", None, 1),
    ("paragraph", "]", None, 1),
    ("paragraph", "[如追問：會否超支？不會。]", None, 1),
    ("table", "| 項目 | 金額 |\n|---|---|\n| 工程 | 20 |", None, 1),
]


def test_internal_notes_kept_by_default() -> None:
    [row] = chunk(make_doc(NOTES_DOC))

    assert row.text == (
        "問 A1：預算多少？\n\n答 A1：約二十億元。[內部參考：見附件[2]。] 尚待批核。\n\n"
        "[內部補充資料：\n\n截至四月，已登記三百戶。\n\n]\n\n[如追問：會否超支？不會。]\n\n"
        "| 項目 | 金額 |\n|---|---|\n| 工程 | 20 |"
    )
    assert row.metadata["contains_internal_note"] is True
    assert row.metadata["answer_contains_table"] is True


def test_internal_notes_dropped_by_option_follow_ups_stay() -> None:
    doc = make_doc(NOTES_DOC)
    [row] = chunk(doc, notes="drop")

    assert row.text == (
        "問 A1：預算多少？\n\n答 A1：約二十億元。\n\n尚待批核。\n\n[如追問：會否超支？不會。]\n\n"
        "| 項目 | 金額 |\n|---|---|\n| 工程 | 20 |"
    )
    assert row.metadata["contains_internal_note"] is False
    # Offsets still span the whole pair in the markdown.
    assert doc.markdown[row.start_char : row.end_char].endswith("| 工程 | 20 |")


def test_a_follow_up_holding_question_markers_stays_in_its_answer() -> None:
    follow_up = "[如被追問：\n問：會否延期？\n答：不會延期。]"
    doc = make_doc(
        [
            ("paragraph", "問 A1：何時完成？", None, 1),
            ("paragraph", "答 A1：明年。", None, 1),
            ("paragraph", follow_up, None, 1),
            ("paragraph", "問 A2：費用？", None, 1),
            ("paragraph", "答 A2：二十億元。", None, 1),
        ]
    )
    rows = chunk(doc)

    assert [r.text for r in rows] == [
        f"問 A1：何時完成？\n\n答 A1：明年。\n\n{follow_up}",
        "問 A2：費用？\n\n答 A2：二十億元。",
    ]


def test_page_furniture_inside_paragraphs_is_stripped() -> None:
    doc = make_doc(
        [
            ("page_header", "(E)", None, 1),
            ("paragraph", "問 A1：工程會否延誤？", None, 1),
            ("paragraph", "答 A1：承建商會加派人手。\nE-2\n2026-05-15\n工程會如期完成。", None, 2),
            ("paragraph", "(E)\n2026年5月15日\n問 A2：費用？", None, 2),
            ("paragraph", "答 A2：二十億元。\nE-3 15 May 2026", None, 3),
            ("page_footer", "E-3", None, 3),
        ]
    )
    rows = chunk(doc)

    assert [r.text for r in rows] == [
        # The answer's lines either side of the footer stay apart.
        "問 A1：工程會否延誤？\n\n答 A1：承建商會加派人手。\n\n工程會如期完成。",
        "問 A2：費用？\n\n答 A2：二十億元。",
    ]
    assert [(r.page_start, r.page_end) for r in rows] == [(1, 2), (2, 3)]


def test_oversized_answer_splits_with_the_question_on_every_piece() -> None:
    answer = "答 A1：第一句話。第二句話。第三句話。第四句話。"
    doc = make_doc(
        [
            ("paragraph", "問 A1：怎樣？", None, 1),
            ("paragraph", answer, None, 2),
            ("paragraph", "補充一。", None, 3),
        ]
    )
    # Question 6 tokens; sentences 10 (with 答 A1：), 5, 5, 5; the addendum 4.
    rows = chunk(doc, max_tokens=18)

    assert [r.text for r in rows] == [
        "問 A1：怎樣？\n\n答 A1：第一句話。",
        "問 A1：怎樣？\n\n第二句話。第三句話。",
        "問 A1：怎樣？\n\n第四句話。\n\n補充一。",
    ]
    assert all(r.token_count <= 18 for r in rows)
    assert {(r.logical_unit, r.metadata["question_index"]) for r in rows} == {("A1", 0)}
    # Every piece cites the question's page and starts at the question in the markdown.
    assert [(r.page_start, r.page_end) for r in rows] == [(1, 2), (1, 2), (1, 3)]
    assert {r.start_char for r in rows} == {0}
    assert {tuple(r.metadata["source_page_range"]) for r in rows} == {(1, 3)}


# --- speaking notes and narrative ----------------------------------------------------------


def test_speaking_notes_one_chunk_per_bullet_with_its_topic() -> None:
    doc = make_doc(
        [
            ("heading", "## 發言要點", 2, 1),
            ("paragraph", "主席，多謝委員。", None, 1),  # before any bullet: narrative
            ("paragraph", "(A) 排水系統", None, 1),
            ("paragraph", "⚫ 渠務署已完成檢討：", None, 1),
            ("paragraph", "➢ 第一階段明年完成；", None, 1),  # nested under the ⚫ bullet
            ("paragraph", "➢ 第二階段後年完成。", None, 1),
            ("paragraph", "⚫ 工程費用約二十億元，", None, 1),
            ("paragraph", "並已諮詢區議會。", None, 1),  # a continuation line
            ("paragraph", "(B) 安置", None, 2),
            ("list", "- 合資格住戶可獲安置。\n- 清拆前三個月通知。", None, 2),
            ("paragraph", "i. 先登記；", None, 2),
            ("paragraph", "ii. 後配屋。", None, 2),
        ]
    )
    rows = chunk(doc)

    assert [(r.metadata["section_type"], r.headings[-1], r.text) for r in rows] == [
        ("narrative", "發言要點", "發言要點\n\n主席，多謝委員。"),
        (
            "speaking_notes",
            "(A) 排水系統",
            "(A) 排水系統\n\n⚫ 渠務署已完成檢討：\n\n➢ 第一階段明年完成；\n\n➢ 第二階段後年完成。",
        ),
        (
            "speaking_notes",
            "(A) 排水系統",
            "(A) 排水系統\n\n⚫ 工程費用約二十億元，\n\n並已諮詢區議會。",
        ),
        ("speaking_notes", "(B) 安置", "(B) 安置\n\n- 合資格住戶可獲安置。"),
        (
            "speaking_notes",
            "(B) 安置",
            "(B) 安置\n\n- 清拆前三個月通知。\n\ni. 先登記；\n\nii. 後配屋。",
        ),
    ]
    assert {r.chunk_type for r in rows} == {"text"}
    assert [r.header_path for r in rows] == [
        "/",
        "/發言要點/",
        "/發言要點/",
        "/發言要點/",
        "/發言要點/",
    ]
    # A bullet cites its own place, not its topic's.
    assert doc.markdown[rows[2].start_char : rows[2].end_char].startswith("⚫ 工程費用")


def test_narrative_sections_chunk_by_heading() -> None:
    doc = make_doc(
        [
            ("title", "# 立法會簡報", None, 1),
            ("paragraph", "發言要點", None, 1),
            ("paragraph", "⚫ 要點。", None, 1),
            ("paragraph", "(1) 住戶的安置補償", None, 1),
            ("paragraph", "住戶可選擇安置或津貼。", None, 1),
            ("table", "| 選項 | 說明 |\n|---|---|\n| 安置 | 公屋 |", None, 2),
            ("paragraph", "(2) 商戶的補償", None, 2),
            ("paragraph", "商戶可獲特惠津貼。", None, 2),
            ("paragraph", "備用問答", None, 3),
            ("paragraph", "問 A1：何時？", None, 3),
            ("paragraph", "答 A1：明年。", None, 3),
        ]
    )
    rows = chunk(doc)

    narrative = [r for r in rows if r.metadata["section_type"] == "narrative"]
    assert [(r.logical_unit, r.headings, r.text) for r in narrative] == [
        (
            "1",
            ["發言要點", "(1) 住戶的安置補償"],
            "(1) 住戶的安置補償\n\n住戶可選擇安置或津貼。\n\n| 選項 | 說明 |\n|---|---|\n| 安置 | 公屋 |",
        ),
        ("2", ["發言要點", "(2) 商戶的補償"], "(2) 商戶的補償\n\n商戶可獲特惠津貼。"),
    ]
    assert narrative[0].metadata["contains_table"] is True
    assert narrative[0].metadata["source_page_range"] == [1, 2]
    # The first chunk of a section covers its heading line.
    assert doc.markdown[narrative[0].start_char :].startswith("(1) 住戶的安置補償")
    assert [r.metadata["section_type"] for r in rows] == [
        "speaking_notes",
        "narrative",
        "narrative",
        "qa",
    ]


# --- fallback, determinism, options --------------------------------------------------------

TABLES_ONLY: list[Item] = [
    ("heading", "## 附表", 2, 1),
    ("table", "| 區 | 戶數 |\n|---|---|\n| 北 | 320 |\n| 南 | 210 |", None, 1),
    ("page_footer", "E-1", None, 1),
    ("table", "| 年 | 金額 |\n|---|---|\n| 2027 | 20 |", None, 2),
]


def test_document_without_questions_falls_back_to_semantic() -> None:
    doc = make_doc(TABLES_ONLY)
    options = TemplateOptions(max_tokens=512, overlap_tokens=0)
    rows = chunk(doc)
    semantic = SemanticTemplate(options).chunk(doc, APPROX)

    assert [r.text for r in rows] == [r.text for r in semantic]
    assert [r.headings for r in rows] == [r.headings for r in semantic]
    assert {r.template for r in rows} == {"qa_pairs"}
    assert [r.metadata for r in rows] == [
        {**r.metadata, "template_fallback": FALLBACK_NOTE} for r in semantic
    ]
    assert [r.chunk_id for r in rows] == [
        chunk_id_for("paper", "qa_pairs", r.chunk_index, r.text) for r in rows
    ]
    assert chunk(make_doc([])) == []


def test_chunk_ids_are_deterministic() -> None:
    doc = make_doc(NOTES_DOC)
    first, second = chunk(doc, max_tokens=20), chunk(doc, max_tokens=20)

    assert len(first) > 1
    assert [r.chunk_id for r in first] == [r.chunk_id for r in second]
    assert [r.chunk_index for r in first] == list(range(len(first)))


def test_options() -> None:
    template = QAPairsTemplate(TemplateOptions(max_tokens=100, overlap_tokens=10))
    assert template.options == QAPairsOptions(max_tokens=100, overlap_tokens=10)
    assert template.options.internal_notes == "keep"
    assert QAPairsTemplate.options_class is QAPairsOptions
    with pytest.raises(ValidationError):
        QAPairsOptions(internal_notes="hide")
    with pytest.raises(ValidationError):
        QAPairsOptions(internal_note="drop")


CONTINUATIONS = [
    # (how the parser set the answer's continuation on the next page, its text in the chunk)
    ("paragraph", "運輸署會審批交通安排。[內部參考：預算約為三千萬元。]"),
    ("heading", "運輸署會審批交通安排。[內部參考：預算約為三千萬元。]"),
    ("heading", "[如被追問：若工程延誤？政府可追討賠償。]"),
    ("heading", "[內部參考：預算約為三千萬元]"),
    (
        "heading",
        "運輸署會在實施前最少兩星期公布所有臨時交通安排的詳情，並以書面通知區內所有受影響的居民及商戶",
    ),
    ("list", "- 運輸署會審批交通安排。[如被追問：若延誤？可追討。]"),
    ("caption", "運輸署會審批交通安排。[內部參考：預算。]"),
]


@pytest.mark.parametrize(("kind", "continuation"), CONTINUATIONS)
@pytest.mark.parametrize("last", [False, True])
def test_an_answer_keeps_its_continuation_after_the_page_footer(
    kind: str, continuation: str, last: bool
) -> None:
    """Every line between a question and the next question belongs to its pair."""
    level = 2 if kind == "heading" else None
    text = f"## {continuation}" if kind == "heading" else continuation
    after: list[Item] = (
        [("paragraph", "運輸署會通知居民。", None, 3)]
        if last
        else [
            ("paragraph", "問 A4：何時完成？", None, 3),
            ("paragraph", "答 A4：明年。", None, 3),
        ]
    )
    doc = make_doc(
        [
            ("heading", "# 備用問答", 1, 2),
            ("paragraph", "問 A3：工程期間會否影響交通？", None, 2),
            ("paragraph", "答 A3：承建商會實施臨時交通安排，", None, 2),
            ("page_footer", "E-2", None, 2),
            ("page_footer", "2026年5月15日", None, 2),
            (kind, text, level, 3),
            *after,
        ]
    )
    rows = chunk(doc)
    assert [(r.chunk_type, r.logical_unit) for r in rows] == [("qa", "A3")] + (
        [] if last else [("qa", "A4")]
    )
    a3 = rows[0]
    assert a3.text.endswith(continuation + ("\n\n運輸署會通知居民。" if last else ""))
    assert (a3.page_start, a3.page_end, a3.metadata["source_page_range"]) == (2, 3, [2, 3])


def test_a_heading_after_an_answer_still_opens_a_section() -> None:
    doc = make_doc(
        [
            ("heading", "# 備用問答", 1, 1),
            ("paragraph", "問 A1：何時完成？", None, 1),
            ("paragraph", "答 A1：明年。", None, 1),
            ("heading", "## Background", 2, 2),
            ("paragraph", "The works began in 2025.", None, 2),
        ]
    )
    rows = chunk(doc)
    assert [(r.chunk_type, r.headings) for r in rows] == [
        ("qa", ["備用問答"]),
        ("text", ["備用問答", "Background"]),
    ]


# --- a LegCo paper through PyMuPDF ------------------------------------------------------------


@pytest.fixture(scope="module")
def legco_parsed(tmp_path_factory: pytest.TempPathFactory) -> ParsedDocument:
    from rag_assets.parsers.pymupdf import PyMuPDFParser

    path = tmp_path_factory.mktemp("legco") / "paper.pdf"
    paper.build_legco_paper(path)
    return PyMuPDFParser(ocr=False).parse(path)


# The adapter's own IR, and the IR the pipeline chunks: the adapter's after the shared repairs.
@pytest.fixture(scope="module", params=["adapter", "repaired"])
def legco(request: pytest.FixtureRequest, legco_parsed: ParsedDocument) -> StandardizedDocument:
    from rag_assets.normalize.adapt import to_ir
    from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir

    adapt = pymupdf_to_ir if request.param == "adapter" else to_ir
    return adapt(legco_parsed, doc_id="legco-paper", source_sha256="0" * 64)


def test_legco_paper_structure(legco: StandardizedDocument) -> None:
    rows = chunk(legco)

    assert [
        (r.metadata["section_type"], r.logical_unit, r.headings, r.page_start, r.page_end)
        for r in rows
    ] == [
        ("speaking_notes", None, ["發言要點"], 1, 1),
        ("speaking_notes", None, ["發言要點"], 1, 1),
        ("speaking_notes", None, ["發言要點"], 1, 1),
        ("narrative", "1", ["發言要點", paper.NARRATIVE_HEADING], 1, 1),
        ("qa", "A1", ["備用問答", "(A) 排水系統"], 2, 2),
        ("qa", "A2", ["備用問答", "(A) 排水系統"], 2, 2),
        ("qa", "A3", ["備用問答", "(A) 排水系統"], 2, 3),  # crosses the page break
        ("qa", "B1", ["備用問答", "(B) 安置安排"], 3, 3),
        ("qa", "O1", ["Others"], 4, 4),
        ("qa", "O2", ["Others"], 4, 4),
        ("qa", "O3", ["Others"], 4, 4),
        ("qa", "O4", ["Others"], 4, 4),
        ("qa", "Q1", ["Supplementary Questions"], 4, 4),
        ("qa", "Q2", ["Supplementary Questions"], 4, 4),
        ("qa", "Q3", ["Supplementary Questions"], 4, 4),
    ]
    qa = pairs(rows)
    assert [r.metadata["question_index"] for r in qa] == list(range(11))
    assert [squash(r.metadata["question_text"]) for r in qa[:4]] == [
        "現時新界北的排水系統容量是否足夠應付極端天氣？",
        "改善工程的時間表為何？",
        "工程期間會否影響交通？",
        "受影響住戶何時可獲安置？",
    ]
    assert [r.metadata["question_text"] for r in qa[4:8]] == [q for q, _ in paper.OTHERS]
    assert [r.metadata["question_text"] for r in qa[8:]] == [
        q.split(" ", 1)[1] for q, _ in paper.ENGLISH
    ]
    assert [r.metadata["source_page_range"] for r in qa[:4]] == [[2, 2], [2, 2], [2, 3], [3, 3]]
    assert [r.metadata["answer_contains_table"] for r in qa] == [False, True] + [False] * 9


def test_legco_paper_texts(legco: StandardizedDocument) -> None:
    rows = chunk(legco)
    texts = [squash(r.text) for r in rows]

    # A bullet with its ➢ sub-bullets, its topic first. pymupdf4llm keeps ⚫ and ➢ in the
    # text but reads the fallback bullets ● and ◆ as list markers.
    marks = {paper.BULLET, paper.SUB_BULLET} if paper.BULLET_FONT else set()
    bullets = [(mark if mark in marks else "", text) for mark, text in paper.SPEAKING_NOTES]
    assert texts[1] == squash("發言要點" + "".join(f"-{m}{text}" for m, text in bullets[1:4]))
    assert texts[3] == squash(paper.NARRATIVE_HEADING + "".join(paper.NARRATIVE))
    assert texts[4] == squash(paper.A1_QUESTION + paper.A1_ANSWER + paper.A1_NOTE)
    header, *body = ["|" + "|".join(row) + "|" for row in paper.A2_TABLE]
    table = header + "|---|---|---|" + "".join(body)
    assert texts[5] == squash(paper.A2_QUESTION + paper.A2_ANSWER + table + paper.A2_AFTER_TABLE)
    # The pair crossing pages 2-3: no footer, date line or (E) mark in between.
    assert texts[6] == squash(
        paper.A3_QUESTION + paper.A3_ANSWER + paper.A3_AFTER_BREAK + paper.A3_FOLLOW_UP
    )
    assert texts[7] == squash(
        paper.B1_QUESTION + paper.B1_ANSWER + paper.B1_NOTE + paper.B1_FOLLOW_UP
    )
    assert texts[8] == squash(paper.OTHERS[0][0] + "".join(paper.OTHERS[0][1]))
    assert texts[12] == squash("".join(paper.ENGLISH[0]))
    furniture = re.compile(r"E-\d|\(E\)|" + paper.MEETING_DATE)
    assert not any(furniture.search(r.text) for r in rows)


def test_legco_paper_internal_notes_dropped(legco: StandardizedDocument) -> None:
    kept, dropped = chunk(legco), chunk(legco, notes="drop")

    assert len(kept) == len(dropped)
    changed = [
        (squash(k.text), squash(d.text))
        for k, d in zip(kept, dropped, strict=True)
        if k.text != d.text
    ]
    assert changed == [
        (
            squash(paper.A1_QUESTION + paper.A1_ANSWER + paper.A1_NOTE),
            squash(paper.A1_QUESTION + paper.A1_ANSWER),
        ),
        (
            squash(paper.B1_QUESTION + paper.B1_ANSWER + paper.B1_NOTE + paper.B1_FOLLOW_UP),
            squash(paper.B1_QUESTION + paper.B1_ANSWER + paper.B1_FOLLOW_UP),
        ),
    ]
    notes = [r.metadata["contains_internal_note"] for r in pairs(kept)]
    assert notes == [True, False, False, True] + [False] * 7


def test_legco_paper_split_answer_cites_the_question_page(legco: StandardizedDocument) -> None:
    rows = chunk(legco, max_tokens=40)
    a3 = [r for r in rows if r.logical_unit == "A3"]

    assert len(a3) > 2
    assert all(r.text.startswith(paper.A3_QUESTION + "\n\n") for r in a3)
    assert all(r.page_start == 2 for r in a3) and a3[-1].page_end == 3
    assert all(r.token_count <= 40 for r in rows)


# --- FAQ fixtures through Docling ------------------------------------------------------------


@pytest.fixture(scope="module")
def faq(shared_fixtures: Path):
    from rag_assets.normalize.docling_adapter import docling_to_ir
    from rag_assets.parsers.docling import DoclingParser

    parser = DoclingParser()

    def load(name: str) -> StandardizedDocument:
        parsed = parser.parse(shared_fixtures / "qa" / name, "md")
        return docling_to_ir(parsed, doc_id=name, source_sha256="0" * 64)

    return load


def test_ms_docs_faq_bold_question_answer_pairs(faq, shared_fixtures: Path) -> None:
    name = "ms_vsdocs_zhtw_unit-test-basics.md"
    doc = faq(name)
    rows = chunk(doc)
    qa = pairs(rows)

    source = (shared_fixtures / "qa" / name).read_text(encoding="utf-8")
    questions = re.findall(r"^\*\*問：(.+?)\*\*$", source, re.MULTILINE)
    assert len(questions) == 6
    assert [r.metadata["question_text"] for r in qa] == questions
    assert [r.logical_unit for r in qa] == [f"Q{n}" for n in range(1, 7)]
    assert {tuple(r.headings) for r in qa} == {("單元測試基本概念", "問答集")}
    assert all(r.text.split("\n\n")[1].startswith("答：") for r in qa)
    # The last answer runs to the end of the document.
    assert qa[-1].text.endswith("將會使用所選擇的架構來建立您的單元測試虛設常式。")
    # Sections before the Q&A are narrative, chunked by heading.
    assert rows.index(qa[0]) > 0
    assert {r.metadata["section_type"] for r in rows[: rows.index(qa[0])]} == {"narrative"}


def test_docling_faq_admonition_questions(faq, shared_fixtures: Path) -> None:
    name = "docling_faq.md"
    doc = faq(name)
    rows = chunk(doc)
    qa = pairs(rows)

    # Docling reads each indented admonition body as code: a question is the `???` line,
    # its answer the code block after it (where the `###` question heading also sits).
    source = (shared_fixtures / "qa" / name).read_text(encoding="utf-8")
    questions = [q.strip() for q in re.findall(r'^\?\?\? question "(.+?)"', source, re.MULTILINE)]
    assert len(questions) == 13
    assert [r.metadata["question_text"] for r in qa] == questions
    assert len({r.metadata["question_index"] for r in qa}) == 13
    assert rows[0].metadata["section_type"] == "narrative" and rows[0].headings == ["FAQ"]
    assert "Python 3.14 is supported from Docling 2.59.0." in qa[0].text
    assert {r.page_start for r in rows} == {None}
