"""The vision path for tables: a real PDF, its real PyMuPDF IR, the real openai client, a stub server."""

from __future__ import annotations

import base64
import hashlib
import io
import logging
from pathlib import Path

import pytest
from PIL import Image

from rag_assets.contracts.ir import DocumentElement
from rag_assets.llm import LLMClient, LLMSettings
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file
from rag_assets.tables.cache import VisionCache
from rag_assets.tables.render import render_region
from rag_assets.tables.structure import VISION_OFF, structure_markdown
from rag_assets.tables.vision import PROMPT_VERSION, vision_markdown
from rag_assets.tables.vision_answer import (
    continues_on_another_page,
    token_recall,
    validate_vision_table,
)
from rag_assets_tests.support.openai_stub import Behaviour, OpenAIStub, StubRequest, serve_stub

KEY = "sk-vision-secret-9876543210"
REGISTERS = [
    ["Register", "Offset", "Bits", "Description"],
    ["Host Control", "0x04", "15:8", "Enables the host interface"],
    ["Status", "0x08", "7:0", "Reports link state"],
    ["Interrupt Mask", "0x0C", "31:0", "Masks pending interrupts"],
]
ERRORS = [
    ["Code", "Meaning", "Action"],
    ["E101", "Sensor offline", "Check the cable"],
    ["E202", "Checksum mismatch", "Resend the frame"],
    ["E303", "Buffer overflow", "Lower the sample rate"],
]


def markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([lines[0], "|" + "---|" * len(rows[0]), *lines[1:]])


def good_answer(rows: list[list[str]]) -> str:
    """What a chatty but correct model says."""
    return f"Here is the table:\n\n```markdown\n{markdown(rows)}\n```\nContinues: no"


@pytest.fixture(scope="module")
def pdf(tmp_path_factory) -> Path:
    """Three pages: a table, text only, another table."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table

    def table(rows):
        return Table(rows, style=[("GRID", (0, 0), (-1, -1), 0.5, colors.black)])

    styles = getSampleStyleSheet()
    body, heading = styles["BodyText"], styles["Heading1"]
    story = [
        Paragraph("1 Registers", heading),
        Paragraph("The controller registers follow. " * 4, body),
        Spacer(1, 12),
        table(REGISTERS),
        Paragraph("Text after the table. " * 5, body),
        PageBreak(),
        Paragraph("2 Operation", heading),
        Paragraph("This page has text only and no table at all. " * 8, body),
        PageBreak(),
        Paragraph("3 Errors", heading),
        Paragraph("The error codes follow. " * 4, body),
        Spacer(1, 12),
        table(ERRORS),
    ]
    path = tmp_path_factory.mktemp("pdf") / "controller.pdf"
    SimpleDocTemplate(str(path), pagesize=A4).build(story)
    return path


@pytest.fixture(scope="module")
def doc(pdf):
    return parse_file(pdf, ParserRouter("pymupdf")).document


@pytest.fixture(scope="module")
def images(doc, pdf) -> dict[str, int]:
    """sha256 of each table's rendered region -> the table's element index."""
    return {
        hashlib.sha256(render_region(pdf, e.page_start, e.bbox)).hexdigest(): i
        for i, e in doc.tables()
    }


@pytest.fixture
def stub():
    with serve_stub() as server:
        yield server


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", KEY)


def image_sha(request: StubRequest) -> str:
    (url,) = request.image_urls()
    return hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest()


def answering(doc, images, answers: dict[str, str]):
    """A server reply chosen by the image: each table's region gets its own answer."""

    def respond(request: StubRequest) -> Behaviour:
        first_cell = doc.elements[images[image_sha(request)]].table.grid()[0][0]
        return Behaviour(text=answers[first_cell])

    return respond


def client_for(stub: OpenAIStub, **overrides) -> LLMClient:
    settings = {"base_url": stub.base_url, "model": "vl-model", "timeout_s": 2, **overrides}
    return LLMClient(LLMSettings(**settings))


def run(doc, pdf, client, cache_dir: Path, **options):
    return vision_markdown(
        doc, pdf, structure_markdown(doc), client, VisionCache(cache_dir), **options
    )


def test_the_ir_has_two_tables_on_pages_one_and_three(doc):
    assert [(e.page_start, e.table.grid()[0][0]) for _, e in doc.tables()] == [
        (1, "Register"),
        (3, "Code"),
    ]


def test_render_region_crops_to_the_table(doc, pdf):
    _, table = doc.tables()[0]
    png = render_region(pdf, table.page_start, table.bbox, dpi=144, margin_pt=12)
    crop = Image.open(io.BytesIO(png))
    page = Image.open(io.BytesIO(render_region(pdf, table.page_start, None, dpi=144)))
    x0, y0, x1, y1 = table.bbox
    assert crop.format == "PNG" and page.size == (round(595.28 * 2), round(841.89 * 2))
    assert abs(crop.width - (x1 - x0 + 24) * 2) <= 2 and abs(crop.height - (y1 - y0 + 24) * 2) <= 2
    assert render_region(pdf, table.page_start, table.bbox) == png  # stable bytes: a cache key
    # A box running off the page is clamped to it.
    edge = render_region(pdf, 1, (-50, -50, 100, 100), dpi=72, margin_pt=0)
    assert Image.open(io.BytesIO(edge)).size == (100, 100)


def test_validate_accepts_a_table_inside_prose_and_fences():
    parser_text = "\n".join(" ".join(row) for row in REGISTERS)
    table, reason = validate_vision_table(good_answer(REGISTERS), parser_text)
    assert reason is None and table == markdown(REGISTERS)
    no_outer_pipes = "Register | Offset\n--- | :---:\nStatus | 0x08"
    assert validate_vision_table(no_outer_pipes, "Status 0x08")[0] == (
        "| Register | Offset |\n|---|---|\n| Status | 0x08 |"
    )
    assert continues_on_another_page("| a |\n|---|\n| b |\nContinues: yes") is True
    assert continues_on_another_page(good_answer(REGISTERS)) is False


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "empty answer"),
        ("NO TABLE", "no table"),
        ("The table lists registers.", "no table"),
        ("| a | b |\n| 1 | 2 |", "malformed table: no separator"),
        ("| a | b |\n|---|---|\n| 1 | 2 | 3 |", "malformed table: row 1 has 3 cells, header 2"),
        ("| a | b |\n|---|---|", "malformed table: a header without rows"),
        ("| a |\n|---|\n| 1 |\n\n| b |\n|---|\n| 2 |", "malformed table: 2 tables"),
        ("| Name | Value |\n|---|---|\n| Alpha | 1 |", "low overlap: 0% of the parser's words"),
    ],
)
def test_validate_rejects(answer, reason):
    table, why = validate_vision_table(answer, "Host Control 0x04 15:8 Status 0x08")
    assert table is None and why.startswith(reason)


def test_recall_counts_cjk_characters():
    parser = "公路技术等级 车道数 高速公路 八 2.5000"
    assert (
        token_recall(parser, "| 公路技术等级 | 车道数 |\n|---|---|\n| 高速公路 | 八 2.5000 |") == 1
    )
    # Six of twelve characters plus the number: a different table of the same kind.
    assert token_recall(parser, "| 公路 | 等级 |\n|---|---|\n| 一级 | 2.5 |") < 0.5


def test_off_by_default(doc, pdf, tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_ASSETS_LLM_BASE_URL", raising=False)
    assert not LLMSettings.from_env().vision_enabled
    outcome = run(doc, pdf, None, tmp_path)
    assert outcome.status == VISION_OFF and outcome.calls == 0
    assert [(t.method, t.fallback_reason) for t in outcome.tables] == [
        ("structure", VISION_OFF)
    ] * 2
    assert outcome.fallbacks == {"off": 2} and not any(tmp_path.iterdir())


def test_good_answers_are_used_and_text_pages_cost_nothing(doc, pdf, images, stub, tmp_path):
    stub.respond = answering(
        doc, images, {"Register": good_answer(REGISTERS), "Code": good_answer(ERRORS)}
    )
    outcome = run(doc, pdf, client_for(stub, vision_model="vl-v2"), tmp_path)

    assert outcome.status == "vision: on (model vl-v2)"
    assert [t.method for t in outcome.tables] == ["vision", "vision"]
    first = outcome.tables[0]
    assert first.markdown == markdown(REGISTERS) and (first.num_rows, first.num_cols) == (4, 4)
    assert first.model == "vl-v2" and first.latency_s is not None and first.continues is False
    assert first.fallback_reason is None and not first.cache_hit
    # One request per table (none for the text-only page), each a cropped PNG of its region.
    assert stub.calls == 2 and outcome.calls == 2 and outcome.cache_hits == 0
    assert {image_sha(r) for r in stub.requests} == set(images)
    assert all(r.model == "vl-v2" for r in stub.requests)
    assert outcome.completion_tokens > 0 and outcome.prompt_tokens == 200


def test_second_run_hits_the_cache_with_zero_calls(doc, pdf, images, stub, tmp_path):
    stub.respond = answering(doc, images, {"Register": good_answer(REGISTERS), "Code": "| bad |"})
    first = run(doc, pdf, client_for(stub), tmp_path)
    assert stub.calls == 2 and [t.method for t in first.tables] == ["vision", "structure"]

    second = run(doc, pdf, client_for(stub), tmp_path)
    assert stub.calls == 2  # the server saw nothing new
    assert second.calls == 0 and second.cache_hits == 2 and second.prompt_tokens == 0
    assert [t.model_dump(exclude={"cache_hit"}) for t in second.tables] == [
        t.model_dump(exclude={"cache_hit"}) for t in first.tables
    ]
    assert all(t.cache_hit for t in second.tables)
    # A new prompt version or model misses the cache.
    assert len(list(tmp_path.rglob("*.json"))) == 2
    assert PROMPT_VERSION in next(tmp_path.rglob("*.json")).read_text()
    run(doc, pdf, client_for(stub, vision_model="other-vl"), tmp_path)
    assert stub.calls == 4


def test_an_answer_already_on_disk_is_read_under_its_file_name(tmp_path):
    # As the cache has written it: the key is the SHA-256 of the image hash, the model and the
    # prompt version, one a line.
    entry = (
        tmp_path / "96" / "96793ee551fd9d6070d21b7cbb0b1ce6bc70b813edd75e769b31ca0a8062bffb.json"
    )
    entry.parent.mkdir()
    entry.write_text(
        """{
 "image_sha256": "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
 "model": "vision-m",
 "prompt_version": "1",
 "answer": "| Code | Meaning |",
 "reply_model": null,
 "prompt_tokens": 0,
 "completion_tokens": 0,
 "latency_s": 0.0,
 "finish_reason": null
}""",
        encoding="utf-8",
    )
    answer = VisionCache(tmp_path).get("e" * 64, "vision-m", "1")
    assert answer is not None and answer.answer == "| Code | Meaning |"


def test_retried_server_errors_then_a_good_answer(doc, pdf, images, stub, tmp_path):
    stub.enqueue(
        Behaviour(status=500), Behaviour(status=500), Behaviour(text=good_answer(REGISTERS))
    )
    only_first = doc.model_copy(update={"elements": doc.elements[:4]})
    outcome = run(only_first, pdf, client_for(stub, max_retries=2), tmp_path)
    assert stub.calls == 3 and outcome.calls == 1
    assert [t.method for t in outcome.tables] == ["vision"]


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (Behaviour(text="| Register | Offset |\n|---|---|\n| Status |"), "malformed table: row 1"),
        (Behaviour(text=""), "empty answer"),
        (Behaviour(text=None), "empty answer"),
        (Behaviour(raw_body=b'{"choices": [{"message": '), "LLM unavailable: "),
        (Behaviour(text="| Name |\n|---|\n| Alpha |"), "low overlap"),
        (Behaviour(text=good_answer(REGISTERS), finish_reason="length"), "cut off"),
    ],
)
def test_bad_answers_fall_back_to_structure(doc, pdf, stub, tmp_path, behaviour, reason):
    stub.default = behaviour
    outcome = run(doc, pdf, client_for(stub, max_concurrency=1), tmp_path)
    # After a failed call the next table is not sent at all.
    expected = [reason, "skipped: " if reason.startswith("LLM unavailable") else reason]
    structure = structure_markdown(doc)
    for row, fallback, why in zip(outcome.tables, structure, expected, strict=True):
        assert row.method == "structure" and row.markdown == fallback.markdown
        assert row.fallback_reason.startswith(why) and row.model == "vl-model"
    assert sum(outcome.fallbacks.values()) == 2


def test_timeout_falls_back_and_spares_the_other_tables(doc, pdf, stub, tmp_path):
    stub.default = Behaviour(text=good_answer(REGISTERS), delay_s=2)
    client = client_for(stub, timeout_s=0.2, max_retries=0, max_concurrency=1)
    outcome = run(doc, pdf, client, tmp_path)
    reasons = [t.fallback_reason for t in outcome.tables]
    assert reasons[0] == "LLM unavailable: timed out after 0.2 s (0 retries)"
    assert reasons[1] == "skipped: the LLM failed earlier for this document"
    assert stub.calls == 1 and outcome.calls == 1
    assert outcome.fallbacks == {"LLM unavailable": 1, "skipped": 1}
    assert not any(tmp_path.rglob("*.json"))  # failures are not cached


def test_budget_stops_calls(doc, pdf, images, stub, tmp_path):
    stub.respond = answering(
        doc, images, {"Register": good_answer(REGISTERS), "Code": good_answer(ERRORS)}
    )
    outcome = run(doc, pdf, client_for(stub, max_calls=1, max_concurrency=1), tmp_path)
    assert stub.calls == 1 and outcome.calls == 1
    assert [t.method for t in outcome.tables] == ["vision", "structure"]
    assert outcome.tables[1].fallback_reason == "budget: budget of 1 calls used"


def test_key_never_logged_cached_or_stored(doc, pdf, images, stub, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    stub.respond = answering(doc, images, {"Register": good_answer(REGISTERS), "Code": ""})
    outcome = run(doc, pdf, client_for(stub), tmp_path)
    stub.respond = None
    stub.default = Behaviour(status=401, raw_body=f'{{"error": "{KEY} rejected"}}'.encode())
    failed = run(doc, pdf, client_for(stub, vision_model="vl-2"), tmp_path / "other")

    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in stub.requests)
    assert caplog.records and not [r for r in caplog.records if KEY in r.getMessage()]
    assert all(KEY not in p.read_text() for p in tmp_path.rglob("*.json"))
    assert KEY not in outcome.model_dump_json() and KEY not in failed.model_dump_json()
    assert failed.tables[0].fallback_reason.startswith("LLM unavailable: HTTP 401")


def test_not_a_pdf_and_no_tables_make_no_calls(doc, pdf, stub, tmp_path):
    markdown_file = tmp_path / "controller.md"
    markdown_file.write_text(doc.markdown)
    outcome = run(doc, markdown_file, client_for(stub), tmp_path)
    assert {t.fallback_reason for t in outcome.tables} == {
        "not a PDF: vision reads PDF page regions only"
    }
    no_tables = doc.model_copy(update={"elements": [e for e in doc.elements if e.type != "table"]})
    assert run(no_tables, pdf, client_for(stub), tmp_path).tables == []
    assert stub.calls == 0


def test_multi_page_tables_keep_their_structure(doc, pdf, stub, tmp_path):
    index, _ = doc.tables()[0]
    spanning = [
        e.model_copy(update={"page_end": 2}) if i == index else e
        for i, e in enumerate(doc.elements)
    ]
    outcome = run(doc.model_copy(update={"elements": spanning}), pdf, client_for(stub), tmp_path)
    assert outcome.tables[0].fallback_reason.startswith("multi-page: the table spans pages 1-2")
    assert stub.calls == 1  # the other table only


def test_picture_tables_only_when_opted_in(doc, pdf, images, stub, tmp_path):
    """A figure captioned as a table: the image of the table is all there is."""
    _, table = doc.tables()[0]
    figure = DocumentElement(
        type="figure", text="<!-- image -->", page_start=1, page_end=1, bbox=table.bbox
    )
    caption = DocumentElement(type="caption", text="Table 1: Registers", page_start=1, page_end=1)
    elements = [e for e in doc.elements if e.type != "table"]
    pictured = doc.model_copy(update={"elements": [*elements[:2], figure, caption, *elements[2:]]})
    stub.default = Behaviour(text=good_answer(REGISTERS))

    assert run(pictured, pdf, client_for(stub), tmp_path).tables == []
    assert stub.calls == 0
    outcome = run(pictured, pdf, client_for(stub), tmp_path, include_picture_tables=True)
    assert stub.calls == 1
    (row,) = outcome.tables
    assert (row.element_index, row.method, row.caption) == (2, "vision", "Table 1: Registers")
