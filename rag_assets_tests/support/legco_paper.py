"""A LegCo-style briefing paper as a PDF: speaking notes, standby Q&A, an English part.

The text is Traditional Chinese, set in the CJK font that ships inside PyMuPDF (Droid Sans
Fallback). That font lacks the papers' bullets ⚫ and ➢: they are set in DejaVu Sans,
which matplotlib ships, and where matplotlib is not installed the paper uses ● and ◆
(which the CJK font has) instead. Every page carries the running footer, `E-<page>` over
the meeting date, and page 1 the `(E)` mark, as real papers do.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path


def _dejavu_sans() -> Path | None:
    spec = find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0], "mpl-data", "fonts", "ttf", "DejaVuSans.ttf")
    return path if path.is_file() else None


BULLET_FONT = _dejavu_sans()
BULLET, SUB_BULLET = ("⚫", "➢") if BULLET_FONT else ("●", "◆")

MEETING_DATE = "2026年5月15日"
TITLE = "立法會發展事務委員會 新界北排水及安置事宜"
SPEAKING_NOTES = [
    (
        BULLET,
        "主席，多謝委員關注新界北的排水及安置事宜。政府一直致力改善區內排水系統，並妥善照顧受影響住戶。",
    ),
    (BULLET, "就排水系統方面，渠務署已完成全面檢討，並會分階段推展改善工程："),
    (SUB_BULLET, "第一階段工程已於2025年展開，預計2027年完成。"),
    (SUB_BULLET, "第二階段工程正進行詳細設計，預計2026年底申請撥款。"),
    (BULLET, "就安置方面，我們會按既定政策向合資格住戶提供適切的安置及補償。"),
]
NARRATIVE_HEADING = "(1) 住戶的安置補償"
NARRATIVE = [
    "合資格住戶可選擇入住專用安置屋邨，或領取特惠現金津貼。",
    "地政總署會派員登記受影響住戶，並向他們解釋各項安置選項。",
]
# Three colons: full-width (：), vertical (︰) and ASCII, with and without a space.
A1_QUESTION = "問 A1：現時新界北的排水系統容量是否足夠應付極端天氣？"
A1_ANSWER = "答 A1：渠務署已完成檢討，部分地段需要提升容量。工程完成後，區內排水系統可抵禦五十年一遇的暴雨。"
A1_NOTE = "[內部參考：工程預算約為二十億元，尚待財務委員會批核。]"
A2_QUESTION = "問 A2︰改善工程的時間表為何？"
A2_ANSWER = "答 A2︰工程分兩個階段進行，詳情如下："
A2_TABLE = [
    ["階段", "工程範圍", "預計完成"],
    ["第一階段", "主要排水幹渠", "2027年"],
    ["第二階段", "支渠及集水井", "2029年"],
]
A2_AFTER_TABLE = "渠務署會定期向區議會匯報工程進度。"
A3_QUESTION = "問A3:工程期間會否影響交通？"
A3_ANSWER = (
    "答A3: 承建商會實施臨時交通安排，並在主要路口派駐交通管理人員，盡量減少對駕駛人士及行人的影響。"
)
A3_AFTER_BREAK = "運輸署會審批所有臨時交通安排，並在實施前最少兩星期公布詳情。"
A3_FOLLOW_UP = "[如被追問：若工程延誤，政府會否追討賠償？政府可按合約向承建商追討算定損害賠償。]"
B1_QUESTION = "問 B1：受影響住戶何時可獲安置？"
B1_ANSWER = "答 B1：地政總署會在清拆前最少三個月通知受影響住戶，並安排他們入住安置屋邨。"
B1_NOTE = "[內部補充資料：截至2026年4月，已登記住戶共三百二十戶。]"
B1_FOLLOW_UP = "[如追問：未能即時入住的住戶，可暫住中轉房屋。]"
# The "Others" part: a question line, then answer paragraphs, no markers.
OTHERS = [
    (
        "安置屋邨的租金水平如何釐定？",
        ["租金會參照同區公共屋邨的水平釐定。", "房屋署每兩年檢討一次租金。"],
    ),
    ("工程會否影響區內的農地？", ["工程範圍不涉及現有農地。"]),
    ("政府會否設立專責小組跟進？", ["發展局已成立跨部門工作小組。"]),
    ("居民如何查詢工程資訊？", ["居民可致電渠務署熱線或瀏覽專題網頁。"]),
]
ENGLISH = [
    (
        "Q1 Will the works cause flooding during construction?",
        "The contractor will keep temporary channels open so that storm water drains away.",
    ),
    (
        "Q2 How much will the works cost?",
        "The estimate is about two billion dollars, subject to funding approval.",
    ),
    (
        "Q3 When will residents be rehoused?",
        "Residents will be notified at least three months before clearance.",
    ),
]


def build_legco_paper(path: Path) -> None:
    """Write the paper to `path`: four A4 pages, the A3 answer crossing from page 2 to 3."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Table, TableStyle

    font, bullet_font = _register_fonts(path.parent)

    def style(name: str, size: int, indent: int = 0) -> ParagraphStyle:
        return ParagraphStyle(
            name,
            fontName=font,
            fontSize=size,
            leading=size * 1.6,
            leftIndent=indent,
            spaceBefore=size * 0.6,
            spaceAfter=size * 0.6,
            wordWrap="CJK",
        )

    title, part, topic, body = (
        style("title", 18),
        style("part", 15),
        style("topic", 13),
        style("body", 11),
    )
    sub_body = style("sub", 11, indent=24)

    def paragraphs(*texts: str) -> list[Paragraph]:
        return [Paragraph(text, body) for text in texts]

    def bullet(mark: str, text: str) -> Paragraph:
        indented = sub_body if mark == SUB_BULLET else body
        return Paragraph(f'<font name="{bullet_font}">{mark}</font> {text}', indented)

    table = Table(A2_TABLE)
    grid = [("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("FONTNAME", (0, 0), (-1, -1), font)]
    table.setStyle(TableStyle(grid))
    story = [
        Paragraph(TITLE, title),
        Paragraph("發言要點", part),
        *(bullet(mark, text) for mark, text in SPEAKING_NOTES),
        Paragraph(NARRATIVE_HEADING, topic),
        *paragraphs(*NARRATIVE),
        PageBreak(),
        Paragraph("備用問答", part),
        Paragraph("(A) 排水系統", topic),
        *paragraphs(A1_QUESTION, A1_ANSWER, A1_NOTE, A2_QUESTION, A2_ANSWER),
        table,
        *paragraphs(A2_AFTER_TABLE, A3_QUESTION, A3_ANSWER),
        PageBreak(),
        *paragraphs(A3_AFTER_BREAK, A3_FOLLOW_UP),
        Paragraph("(B) 安置安排", topic),
        *paragraphs(B1_QUESTION, B1_ANSWER, B1_NOTE, B1_FOLLOW_UP),
        PageBreak(),
        Paragraph("Others", part),
        *paragraphs(*(text for question, answer in OTHERS for text in (question, *answer))),
        Paragraph("Supplementary Questions", part),
        *paragraphs(*(text for pair in ENGLISH for text in pair)),
    ]

    def furniture(canvas, doc) -> None:
        width, _ = A4
        canvas.saveState()
        canvas.setFont(font, 10)
        if doc.page == 1:
            canvas.drawRightString(width - 60, 800, "(E)")
        canvas.drawCentredString(width / 2, 40, f"E-{doc.page}")
        canvas.drawCentredString(width / 2, 26, MEETING_DATE)
        canvas.restoreState()

    document = SimpleDocTemplate(str(path), pagesize=A4)
    document.build(story, onFirstPage=furniture, onLaterPages=furniture)


def _register_fonts(folder: Path) -> tuple[str, str]:
    """(text font, bullet font), registered with reportlab."""
    import pymupdf
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    cjk = folder / "DroidSansFallback.ttf"
    cjk.write_bytes(pymupdf.Font("cjk").buffer)
    pdfmetrics.registerFont(TTFont("DroidSansFallback", str(cjk)))
    if BULLET_FONT is None:
        return "DroidSansFallback", "DroidSansFallback"
    pdfmetrics.registerFont(TTFont("DejaVuSans", str(BULLET_FONT)))
    return "DroidSansFallback", "DejaVuSans"
