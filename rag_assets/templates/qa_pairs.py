"""`qa_pairs`: legislative briefing papers and FAQs, one chunk per question and its answer.

What the text shows decides the structure (see qa/structure.py): 問 A1： / 答 A1： pairs,
Q1 questions, MkDocs `??? question` admonitions, and in an "Others" part questions without
markers; speaking-note bullets (發言要點); narrative sections in between.

Chunks:
- a pair: the question, then its answer (tables, follow-ups and, by option, internal notes
  kept). An answer over `max_tokens` is cut as `semantic` cuts a section, the question
  repeated at the top of every piece. Every piece cites the question's page and offsets
  first, so `page_start` is where the question starts.
- a speaking-note bullet, with its nested bullets: its topic line, then the bullet.
- a narrative section: its heading line, then its content, packed as `semantic` packs.
`headings` are [part, topic] lines as found in the text (`headings_from_text`); page
furniture (E-2, the date line, (E)) is skipped, also where it survives inside a paragraph.

Metadata: every chunk has `section_type` (qa | narrative | speaking_notes),
`section_heading`, `source_page_range` ([first, last] page of the whole pair or section;
None without pages) and `contains_internal_note`; a pair's chunks add `question_id`
(as written, else the topic letter or "O" in Others or "Q", then the position),
`question_index` (from 0 in the document), `question_text` and `answer_contains_table`
(this chunk's part of the answer holds a table); other chunks add `contains_table`.

An LLM can read the structure instead (qa/llm_structure.py), given a client: by option
`llm_structure`, never ("off"), only when the markers give fewer than two questions or
speaking notes ("fallback", the default), or for every document ("always"). Its units are
cut from the IR like the regex path's, so chunks keep exact pages and offsets. Rows then
add `structure_source` ("regex" | "llm"); "llm" rows add `llm_dropped_questions` (the
model's questions not found in the text) and `llm_truncated` (the model saw only
`llm_max_chars` of the text). When the LLM was asked but its reading is not used (failed
call, answer not JSON of the schema, no questions or speaking notes found), the regex
path is used and every row says why in `llm_fallback_reason`. Without a client the
template is the regex template and says nothing about an LLM.

A document without questions or speaking notes is chunked by `semantic`, rows still
named `qa_pairs` (so ids stay sha256(doc, "qa_pairs", index, text) and the template
version marks them stale) and marked `template_fallback` in their metadata (and
`llm_fallback_reason`, when an LLM was asked), but no `structure_source`: no Q&A
structure was read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rag_assets.contracts.chunk import ChunkRow, ChunkType
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.llm import BudgetExceeded, LLMClient, LLMError, LLMUnavailable
from rag_assets.templates.base import (
    ChunkTemplate,
    ElementSpan,
    TemplateOptions,
    context_root,
    header_path_for,
)
from rag_assets.templates.packing import BLOCK_SEPARATOR, Packer, Piece, render
from rag_assets.templates.qa.llm_structure import DEFAULT_MAX_CHARS, PROMPT_VERSION, llm_units
from rag_assets.templates.qa.segments import (
    Segment,
    blocks,
    drop_internal_notes,
    has_internal_note,
)
from rag_assets.templates.qa.structure import Bullet, Narrative, Pair, Unit, read_units
from rag_assets.templates.semantic import section_rows
from rag_assets.templates.tokens import TokenCounter

FALLBACK_NOTE = "semantic: no Q&A markers found"
# Fewer questions and speaking notes than this from the markers: "fallback" asks the LLM.
REGEX_MIN_SECTIONS = 2
NOTHING_FOUND = "LLM found no questions or speaking notes in the text"


class QAPairsOptions(TemplateOptions):
    # Internal notes ([內部參考…], [內部補充資料…]) are briefing material for officials;
    # "drop" keeps them out of the index.
    internal_notes: Literal["keep", "drop"] = "keep"
    # Whether a client's LLM reads the structure: never, when the markers fail, or always.
    llm_structure: Literal["off", "fallback", "always"] = "fallback"
    # The most of the document the LLM sees (characters); the rest is chunked as narrative.
    llm_max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1_000)


class QAPairsTemplate(ChunkTemplate):
    """Pairs, speaking notes and narrative packed as `semantic` packs (`packing`), and
    `semantic`'s sections as the fallback."""

    name = "qa_pairs"
    # The prompt's version is part of the template's: a new prompt reads documents anew.
    version = f"14+prompt{PROMPT_VERSION}"  # 14: chunks record their sections' titles
    headings_from_text = True
    uses_llm = True
    options_class = QAPairsOptions
    options: QAPairsOptions

    def __init__(
        self, options: TemplateOptions | None = None, *, llm: LLMClient | None = None
    ) -> None:
        # Plain TemplateOptions (sizes only) take this template's defaults for the rest.
        given = (options or QAPairsOptions()).model_dump()
        super().__init__(QAPairsOptions.model_validate(given))
        self.llm = llm

    def chunk(self, doc: StandardizedDocument, counter: TokenCounter) -> list[ChunkRow]:
        units, source = self._structure(doc)
        if not _structured(units):
            note = {"template_fallback": FALLBACK_NOTE}
            if reason := source.get("llm_fallback_reason"):
                note["llm_fallback_reason"] = reason
            return _annotated(section_rows(self, doc, counter), note)
        packer = Packer(
            counter,
            self.options.max_tokens,
            self.options.overlap_tokens,
            tuple(self.vocabularies(doc)),
        )
        rows: list[ChunkRow] = []
        for unit in units:
            rows.extend(self._unit_rows(doc, unit, packer, len(rows)))
        return _annotated(rows, source)

    def _structure(self, doc: StandardizedDocument) -> tuple[list[Unit], dict[str, Any]]:
        """The units to chunk, and the metadata saying where they come from."""
        units = read_units(doc)
        if self.llm is None or not self._llm_wanted(units):
            return units, {"structure_source": "regex"}
        try:
            found = llm_units(doc, self.llm, self.options.llm_max_chars)
        except LLMError as error:
            return units, {"structure_source": "regex", "llm_fallback_reason": _failure(error)}
        if not _structured(found.units):
            reason = f"{NOTHING_FOUND} ({found.dropped_questions} questions not in the text)"
            return units, {"structure_source": "regex", "llm_fallback_reason": reason}
        return found.units, {
            "structure_source": "llm",
            "llm_dropped_questions": found.dropped_questions,
            "llm_truncated": found.truncated,
        }

    def _llm_wanted(self, regex_units: list[Unit]) -> bool:
        mode = self.options.llm_structure
        found = sum(isinstance(unit, Pair | Bullet) for unit in regex_units)
        return mode == "always" or (mode == "fallback" and found < REGEX_MIN_SECTIONS)

    def _unit_rows(
        self, doc: StandardizedDocument, unit: Unit, packer: Packer, first_index: int
    ) -> list[ChunkRow]:
        if isinstance(unit, Pair):
            return self._pair_rows(doc, unit, packer, first_index)
        return self._text_rows(doc, unit, packer, first_index)

    def _pair_rows(
        self, doc: StandardizedDocument, pair: Pair, packer: Packer, first_index: int
    ) -> list[ChunkRow]:
        question = blocks(pair.question)
        line = BLOCK_SEPARATOR.join(block.text for block in question)
        question_spans = [ElementSpan(block, 0, len(block.text)) for block in question]
        pages = _page_range(doc, [*pair.question, *pair.answer])
        rows = []
        # A question without an answer (or with only dropped notes) is still a chunk.
        lead = packer.lead(context_root(doc), pair.headings, line)
        for run in self._packed(packer, lead, pair.answer) or [[]]:
            text = render(line, run)
            metadata = {
                **_unit_metadata("qa", pair.headings, text, pages),
                "question_id": pair.question_id,
                "question_index": pair.index,
                "question_text": pair.question_text,
                "answer_contains_table": _has_table(run),
            }
            rows.append(
                self.make_row(
                    doc,
                    first_index + len(rows),
                    text,
                    packer.counter,
                    # The question leads every piece's spans: its page is the pair's page.
                    question_spans + _spans(run),
                    header_path=header_path_for(pair.headings[:-1]),
                    headings=pair.headings,
                    chunk_type="qa",
                    logical_unit=pair.question_id,
                    metadata=metadata,
                )
            )
        return rows

    def _text_rows(
        self,
        doc: StandardizedDocument,
        unit: Bullet | Narrative,
        packer: Packer,
        first_index: int,
    ) -> list[ChunkRow]:
        """A bullet beneath its topic line, or a narrative section beneath its heading line."""
        if isinstance(unit, Bullet):
            line, lead, label, section_type = unit.headings[-1], [], None, "speaking_notes"
        else:
            heading = unit.heading
            line = heading.title if heading else ""
            lead = [heading.segment] if heading else []
            label, section_type = (heading.label if heading else None), "narrative"
        pages = _page_range(doc, [*lead, *unit.segments])
        rows = []
        counted = packer.lead(context_root(doc), unit.headings, line)
        for run in self._packed(packer, counted, unit.segments):
            spans = _spans(run)
            if not rows:  # only the first chunk covers the heading's own place
                spans = [ElementSpan(block, 0, len(block.text)) for block in blocks(lead)] + spans
            single_table = _has_table(run) and len({piece.index for piece in run}) == 1
            chunk_type: ChunkType = "table" if single_table else "text"
            text = render(line, run)
            metadata = {
                **_unit_metadata(section_type, unit.headings, text, pages),
                "contains_table": _has_table(run),
            }
            rows.append(
                self.make_row(
                    doc,
                    first_index + len(rows),
                    text,
                    packer.counter,
                    spans,
                    header_path=header_path_for(unit.headings[:-1]),
                    headings=unit.headings,
                    chunk_type=chunk_type,
                    logical_unit=label,
                    metadata=metadata,
                )
            )
        return rows

    def _packed(self, packer: Packer, lead: str, segments: list[Segment]) -> list[list[Piece]]:
        """Runs of the visible segments' pieces within the limit after `lead` (what
        context_text puts before them: breadcrumb and heading or question); none for no
        content (a heading or topic line alone gives no chunk)."""
        if self.options.internal_notes == "drop":
            segments = drop_internal_notes(segments)
        pieces = [
            piece
            for index, block in enumerate(blocks(segments))
            for piece in packer.pieces(index, block, lead)
        ]
        return packer.pack(pieces, lead) if pieces else []


def _structured(units: list[Unit]) -> bool:
    """Units holding questions or speaking notes; without any, semantic chunks the text."""
    return any(isinstance(unit, Pair | Bullet) for unit in units)


def _annotated(rows: list[ChunkRow], extra: dict[str, Any]) -> list[ChunkRow]:
    # Metadata is not part of a chunk id: adding to it keeps ids as they are.
    return [row.model_copy(update={"metadata": {**row.metadata, **extra}}) for row in rows]


def _failure(error: LLMError) -> str:
    if isinstance(error, LLMUnavailable):
        return f"LLM unavailable: {error.reason}"
    if isinstance(error, BudgetExceeded):
        return f"LLM call refused: {error.reason}"
    return error.reason  # the answer's fault: "invalid JSON: …", "empty answer", …


def _spans(run: list[Piece]) -> list[ElementSpan]:
    return [piece.span for piece in run]


def _has_table(run: list[Piece]) -> bool:
    return any(piece.element.type == "table" for piece in run)


def _unit_metadata(
    section_type: str, headings: list[str], text: str, pages: tuple[int, int] | None
) -> dict:
    """What every Q&A, speaking-note and narrative chunk records."""
    return {
        "section_type": section_type,
        "section_heading": _section_heading(headings),
        "contains_internal_note": has_internal_note(text),
        "source_page_range": list(pages) if pages else None,
    }


def _section_heading(headings: list[str]) -> str | None:
    return headings[-1] if headings else None


def _page_range(doc: StandardizedDocument, segments: list[Segment]) -> tuple[int, int] | None:
    """(first, last) page the unit covers; None for formats without pages."""
    if doc.page_count is None or not segments:
        return None
    return (
        min(segment.element.page_start for segment in segments),
        max(segment.element.page_end for segment in segments),
    )
