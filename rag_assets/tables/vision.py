"""The vision path: each table's page region to a vision model, its answer checked, else structure.

Per document: render every table region (pdfium is not thread-safe, so in turn), look
each image up in the cache, ask the model about the images not there (in parallel, up
to the client's concurrency), then judge every answer against the parser's own text for
that table (vision_answer.py). A table whose answer fails keeps its structure markdown, with
the reason.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.llm.client import BudgetExceeded, LLMClient, LLMUnavailable
from rag_assets.llm.settings import RENDER_DPI, VisionSettings
from rag_assets.optional import StepFailures
from rag_assets.tables.cache import CachedAnswer, VisionCache, cache_key
from rag_assets.tables.models import TableMarkdown
from rag_assets.tables.render import render_region
from rag_assets.tables.structure import VISION_OFF
from rag_assets.tables.vision_answer import continues_on_another_page, validate_vision_table
from rag_assets.text.markdown import row_cells

PROMPT_VERSION = "tables-v1"  # bump on any change to TABLE_PROMPT: it is part of the cache key
TABLE_PROMPT = """Transcribe the table in this image into one GitHub-flavoured markdown table.

Rules:
- Answer with the markdown table only: a header row, a separator row (| --- | --- |), then one line per table row. No explanation, no code fence.
- Keep every column header and every row label exactly as printed, including numbering, units and footnote marks.
- Copy every cell verbatim in the language of the image. Do not translate, summarize, reorder, correct or compute anything.
- Every row has as many cells as the header. Leave a cell empty when it is empty in the image. A cell spanning several rows or columns repeats its text in each cell it covers.
- A header with several levels becomes one header row, the levels joined with " / ".
- Write a literal | inside a cell as \\|, and a line break inside a cell as a space.
- After the table, write one last line: "Continues: yes" if the table is cut off at the edge of the image or marked as continued on another page, otherwise "Continues: no".
- If the image holds no table, answer exactly: NO TABLE"""

_TABLE_WORD = re.compile(r"\btable\b|表\s*\d", re.IGNORECASE)


class VisionOutcome(BaseModel):
    tables: list[TableMarkdown]
    status: str  # one line for the UI: "vision: off (...)", "vision: on (model ...)", ...
    calls: int = 0  # requests sent this run, failed ones included (one per distinct image)
    cache_hits: int = 0  # distinct images answered from the cache
    prompt_tokens: int = 0  # spent this run: cache hits cost none
    completion_tokens: int = 0
    fallbacks: dict[str, int] = Field(default_factory=dict)  # by kind: the reason up to its ":"
    degraded: list[str] = Field(default_factory=list)  # vision failed: the parser's tables stand


@dataclass
class _Target:
    index: int
    element: DocumentElement
    structure: TableMarkdown | None  # None for a picture of a table: nothing to fall back to
    parser_text: str
    png: bytes | None = None
    image_sha256: str | None = None
    reason: str | None = None  # set when the table is settled without the model


def _parser_text(element: DocumentElement) -> str:
    if element.type == "figure":
        return str(element.metadata.get("text_in_picture") or "")
    if element.table is not None:
        return "\n".join(" ".join(row) for row in element.table.grid())
    return element.text


def _adjacent_captions(doc: StandardizedDocument, index: int) -> list[str]:
    return [
        doc.elements[near].text
        for near in (index + 1, index - 1)
        if 0 <= near < len(doc.elements) and doc.elements[near].type == "caption"
    ]


def _is_picture_table(doc: StandardizedDocument, index: int) -> bool:
    """A figure whose caption (its own or a caption element beside it) or text says table."""
    element = doc.elements[index]
    if element.type != "figure":
        return False
    texts = [
        element.text,
        str(element.metadata.get("caption") or ""),
        str(element.metadata.get("text_in_picture") or ""),
        *_adjacent_captions(doc, index),
    ]
    return any(_TABLE_WORD.search(text) for text in texts)


def _figure_caption(doc: StandardizedDocument, index: int) -> str | None:
    own = doc.elements[index].metadata.get("caption")
    said = [text for text in _adjacent_captions(doc, index) if _TABLE_WORD.search(text)]
    return str(own) if own else (said[0] if said else None)


def _is_pdf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(5) == b"%PDF-"
    except OSError:
        return False


def _kind(reason: str) -> str:
    return "off" if reason == VISION_OFF else reason.split(":", 1)[0]


def _settled(rows: list[TableMarkdown], reason: str, status: str) -> VisionOutcome:
    tables = [r.model_copy(update={"fallback_reason": reason}) for r in rows]
    return VisionOutcome(
        tables=tables, status=status, fallbacks=dict(Counter(_kind(reason) for _ in tables))
    )


def vision_markdown(
    doc: StandardizedDocument,
    pdf_path: Path | None,
    structure_rows: list[TableMarkdown],
    client: LLMClient | None,
    cache: VisionCache,
    *,
    dpi: int = RENDER_DPI,
    margin_pt: float = 12,
    include_picture_tables: bool = VisionSettings.model_fields["include_picture_tables"].default,
) -> VisionOutcome:
    """The final table rows of `doc`: vision where its answer holds up, structure elsewhere.

    `structure_rows` are `structure_markdown(doc)`. Tables only (and, when opted in,
    pictures of tables) reach the model; a document without them costs nothing.
    """
    if client is None or not client.settings.vision_enabled:
        return _settled(structure_rows, VISION_OFF, VISION_OFF)
    model = str(client.settings.vision_model)
    status = f"vision: on (model {model})"
    if pdf_path is None or not _is_pdf(Path(pdf_path)):
        return _settled(structure_rows, "not a PDF: vision reads PDF page regions only", status)
    failures = StepFailures(doc.source_path or doc.doc_id)
    outcome = failures.run(
        "vision tables",
        lambda: _read_tables(
            doc,
            Path(pdf_path),
            structure_rows,
            client,
            cache,
            model,
            status,
            dpi,
            margin_pt,
            include_picture_tables,
        ),
        None,
    )
    if outcome is None:
        settled = _settled(structure_rows, "vision failed: the parser's structure stands", status)
        return settled.model_copy(update={"degraded": failures.notes()})
    return outcome


def _read_tables(
    doc: StandardizedDocument,
    pdf_path: Path,
    structure_rows: list[TableMarkdown],
    client: LLMClient,
    cache: VisionCache,
    model: str,
    status: str,
    dpi: int,
    margin_pt: float,
    include_picture_tables: bool,
) -> VisionOutcome:
    by_index = {row.element_index: row for row in structure_rows}
    targets = [
        _Target(i, e, by_index.get(i), _parser_text(e))
        for i, e in enumerate(doc.elements)
        if i in by_index or (include_picture_tables and _is_picture_table(doc, i))
    ]
    _render(targets, pdf_path, dpi, margin_pt)
    images = {t.image_sha256: t.png for t in targets if t.image_sha256 and t.png}
    answers = {sha: cache.get(sha, model, PROMPT_VERSION) for sha in images}
    hits = {sha for sha, answer in answers.items() if answer is not None}
    asked = _ask(client, model, cache, {sha: png for sha, png in images.items() if sha not in hits})
    answers.update({sha: answer for sha, (answer, _, _) in asked.items() if answer is not None})

    rows: list[TableMarkdown] = []
    fallbacks: Counter[str] = Counter()
    for target in targets:
        sha = target.image_sha256
        failure = target.reason or (asked[sha][1] if sha in asked else None)
        row, reason = _judge(doc, target, model, answers.get(sha) if sha else None, failure)
        if reason is not None:
            fallbacks[_kind(reason)] += 1
        if row is not None:
            rows.append(row.model_copy(update={"cache_hit": sha in hits}))
    new = [answer for answer, _, _ in asked.values() if answer is not None]
    return VisionOutcome(
        tables=rows,
        status=status,
        calls=sum(called for _, _, called in asked.values()),
        cache_hits=len(hits),
        prompt_tokens=sum(a.prompt_tokens for a in new),
        completion_tokens=sum(a.completion_tokens for a in new),
        fallbacks=dict(fallbacks),
    )


def _render(targets: list[_Target], pdf_path: Path, dpi: int, margin_pt: float) -> None:
    """Each target's PNG, or the reason it has none; in turn, since pdfium is not thread-safe."""
    for target in targets:
        element = target.element
        if element.page_end > element.page_start:
            target.reason = (
                f"multi-page: the table spans pages {element.page_start}-{element.page_end}"
                " (merged by the parser); vision sees one page region"
            )
            continue
        try:
            png = render_region(
                pdf_path, element.page_start, element.bbox, dpi=dpi, margin_pt=margin_pt
            )
        except Exception as error:  # pdfium raises its own errors on damaged pages
            target.reason = f"render failed: {type(error).__name__}: {error}"
        else:
            target.png, target.image_sha256 = png, hashlib.sha256(png).hexdigest()


_Asked = tuple[
    CachedAnswer | None, str | None, bool
]  # answer, why none, whether a request went out


def _ask(
    client: LLMClient, model: str, cache: VisionCache, images: dict[str, bytes]
) -> dict[str, _Asked]:
    """The model's answer for each image, cached as it arrives; up to the client's concurrency."""
    down = threading.Event()  # once a call fails for good, the rest would wait on it too

    def ask(sha: str) -> _Asked:
        if down.is_set():
            return None, "skipped: the LLM failed earlier for this document", False
        try:
            reply = client.vision_text(TABLE_PROMPT, images[sha], model)
        except BudgetExceeded as error:
            return None, f"budget: {error.reason}", False
        except LLMUnavailable as error:
            down.set()
            return None, f"LLM unavailable: {error.reason}", True
        answer = CachedAnswer(
            image_sha256=sha,
            model=model,
            prompt_version=PROMPT_VERSION,
            answer=reply.text,
            reply_model=reply.model,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            latency_s=reply.latency_s,
            finish_reason=reply.finish_reason,
        )
        cache.put(answer)
        return answer, None, True

    if not images:
        return {}
    with ThreadPoolExecutor(max_workers=client.settings.max_concurrency) as pool:
        return dict(zip(images, pool.map(ask, images), strict=True))


def _judge(
    doc: StandardizedDocument,
    target: _Target,
    model: str,
    answer: CachedAnswer | None,
    failure: str | None,
) -> tuple[TableMarkdown | None, str | None]:
    """(vision row, None) when the answer holds up, else (structure row if any, reason)."""
    markdown, reason = None, failure
    if answer is not None and answer.finish_reason == "length":
        reason = "cut off: the answer hit the model's output token limit"
    elif answer is not None:
        markdown, reason = validate_vision_table(answer.answer, target.parser_text)
    attempt = {
        "model": model if target.image_sha256 else None,
        "latency_s": answer.latency_s if answer else None,
        "prompt_tokens": answer.prompt_tokens if answer else 0,
        "completion_tokens": answer.completion_tokens if answer else 0,
        "continues": continues_on_another_page(answer.answer) if answer else None,
    }
    structure = target.structure
    if markdown is None:
        fallback = {**attempt, "fallback_reason": reason}
        return (structure.model_copy(update=fallback) if structure else None), str(reason)
    header, _, *body = markdown.splitlines()
    row = TableMarkdown(
        doc_id=doc.doc_id,
        element_index=target.index,
        page_start=target.element.page_start,
        page_end=target.element.page_end,
        caption=structure.caption if structure else _figure_caption(doc, target.index),
        num_rows=1 + len(body),
        num_cols=len(row_cells(header)),
        markdown=markdown,
        method="vision",
        cache_key=cache_key(str(target.image_sha256), model, PROMPT_VERSION),
        **attempt,
    )
    return row, None
