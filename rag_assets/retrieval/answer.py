"""Grounded answers: retrieve, pick tools, answer only from what was found, cite every sentence.

1. A follow-up ("and its reset value?") is rewritten into a standalone question from the
   previous turns: by the model when one is configured, else by rule (`followup`).
2. The rule router's tools (from `tools.registry`) and a general passage search run; when
   the best evidence is below `NOT_FOUND_THRESHOLD` or the question names something no chunk
   mentions, the answer is "not found in the indexed documents" with the nearest passages,
   and no model is called.
3. Without a model: the passages and tool results, numbered and cited, and a note saying so.
4. With one: the model may choose tools by function calling (the rules stay the fallback),
   then answers from numbered sources only. Every sentence must end with markers of given
   sources, and every number it states must be in a source it cites; an answer that breaks
   this is rejected and asked for once more, then the sources are returned as passages
   (`grounding`).
5. When a table row and a passage of one document state different values for the same field
   and the answer rests on either, the answer must give the table's value and say the sources
   differ; if it does not, a cited note saying so is appended (`conflicts`), no model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from rag_assets.llm.client import LLMClient
from rag_assets.llm.settings import LLMSettings
from rag_assets.retrieval.followup import Turn, standalone_question
from rag_assets.retrieval.grounding import MARKER, MODEL_NOT_FOUND, ask, with_table_values
from rag_assets.retrieval.inputs import query_text
from rag_assets.retrieval.relevance import NOT_FOUND_THRESHOLD, Evidence, Vocabulary, assess
from rag_assets.retrieval.router import Route, route, route_by_rules
from rag_assets.retrieval.tools.registry import TOOLS
from rag_assets.retrieval.tools.tool import Found
from rag_assets.retrieval.tools.toolbox import Toolbox
from rag_assets.settings import Settings
from rag_assets.sources.collections import load_collections

NOT_FOUND = "Not found in the indexed documents."
NO_MODEL = (
    "No language model is configured (RAG_ASSETS_LLM_BASE_URL and RAG_ASSETS_LLM_MODEL), so "
    "here are the most relevant passages and tool results, with their sources."
)
REJECTED = (
    "The model gave no answer that passed the checks ({problems}); here are the passages it was "
    "given."
)
NEAREST = 3  # passages shown with a "not found"
SNIPPET_CHARS = 300

Status = Literal["answered", "not_found", "no_model", "passages"]


class Citation(BaseModel):
    marker: int
    chunk_id: str
    doc_id: str
    source_path: str
    header_path: str
    section: str
    page_start: int | None
    page_end: int | None
    snippet: str  # the source text the marker stands for (a table row's cells verbatim)
    citation: str


class ToolUse(BaseModel):
    name: str
    arguments: dict
    chosen_by: Literal["rules", "llm", "always"]
    results: int


class Answer(BaseModel):
    question: str
    standalone_question: str
    status: Status
    answer: str
    citations: list[Citation]
    tools_used: list[ToolUse]
    route_reason: str
    evidence: Evidence
    threshold: float
    notes: list[str]
    model_calls: int

    def turn(self) -> Turn:
        return Turn(
            question=self.question,
            standalone_question=self.standalone_question,
            answer=self.answer,
        )


def answer(
    question: str,
    box: Toolbox,
    client: LLMClient | None = None,
    history: Sequence[Turn] = (),
    threshold: float = NOT_FOUND_THRESHOLD,
) -> Answer:
    question = query_text(question, "question")
    calls_before = client.usage.calls if client else 0
    notes: list[str] = []
    standalone = standalone_question(question, history, client, notes)
    rules = route_by_rules(standalone)
    items, used = _run(box, rules, standalone)
    candidates = {i.source.chunk_id: f"{i.source.header_path} {i.text}" for i in items}
    evidence = assess(box.retriever, Vocabulary(box.chunks()), standalone, candidates)

    def result(status: Status, text: str, cited: list[tuple[int, Found]], reason: str) -> Answer:
        return Answer(
            question=question,
            standalone_question=standalone,
            status=status,
            answer=text,
            citations=[_citation(marker, item) for marker, item in cited],
            tools_used=used,
            route_reason=reason,
            evidence=evidence,
            threshold=threshold,
            notes=notes,
            model_calls=(client.usage.calls - calls_before) if client else 0,
        )

    if not evidence.sufficient(threshold):
        if evidence.unknown_names:
            notes.append(f"no indexed document mentions {', '.join(evidence.unknown_names)}")
        else:
            notes.append(f"best evidence {evidence.score:.2f} is below the threshold {threshold}")
        nearest = _numbered(items[:NEAREST])
        return result("not_found", _listing(NOT_FOUND, nearest), nearest, rules.reason)
    if client is None:
        numbered = _numbered(items)
        return result("no_model", _listing(NO_MODEL, numbered), numbered, rules.reason)
    chosen = route(standalone, client)
    if chosen.chosen_by == "llm":
        items, used = _run(box, chosen, standalone)
    numbered = _numbered(items)
    text, problems = ask(client, standalone, numbered, notes)
    if text is None:
        return result(
            "passages",
            _listing(REJECTED.format(problems=problems), numbered),
            numbered,
            chosen.reason,
        )
    if text.strip() == MODEL_NOT_FOUND:
        notes.append("the model found no answer in the sources")
        nearest = numbered[:NEAREST]
        return result("not_found", _listing(NOT_FOUND, nearest), nearest, chosen.reason)
    text = with_table_values(text, numbered, notes)
    cited = sorted({int(m) for m in MARKER.findall(text)})
    return result("answered", text, [numbered[m - 1] for m in cited], chosen.reason)


def _run(box: Toolbox, chosen: Route, question: str) -> tuple[list[Found], list[ToolUse]]:
    """The route's tools, then general passages; each chunk and row once, tools first."""
    calls = [(call.name, call.arguments, chosen.chosen_by) for call in chosen.calls]
    if not any(call.name == "text" for call in chosen.calls):
        calls.append(("text", {"query": question}, "always"))
    items: list[Found] = []
    used: list[ToolUse] = []
    for name, arguments, chosen_by in calls:
        found = TOOLS[name].sources(box, arguments)
        used.append(
            ToolUse(name=name, arguments=arguments, chosen_by=chosen_by, results=len(found))
        )
        items += found
    seen: set[tuple[str, str]] = set()
    unique = []
    for item in items:
        key = (item.source.chunk_id, item.text)
        covered = any(
            item.kind == "passage" and chunk_id == item.source.chunk_id for chunk_id, _ in seen
        )
        if key not in seen and not covered:
            seen.add(key)
            unique.append(item)
    return unique, used


def _numbered(items: list[Found]) -> list[tuple[int, Found]]:
    return list(enumerate(items, 1))


def _listing(header: str, numbered: list[tuple[int, Found]]) -> str:
    lines = [header]
    for marker, item in numbered:
        body = " ".join(item.text.split())
        lines.append(f"[{marker}] {item.source.citation}: {body[:SNIPPET_CHARS]}")
    return "\n".join(lines)


def _citation(marker: int, item: Found) -> Citation:
    source = item.source
    return Citation(
        marker=marker,
        chunk_id=source.chunk_id,
        doc_id=source.doc_id,
        source_path=source.source_path,
        header_path=source.header_path,
        section=source.section,
        page_start=source.page_start,
        page_end=source.page_end,
        snippet=item.text,
        citation=source.citation,
    )


def model_client(settings: Settings) -> LLMClient | None:
    """The chat model of rag_collections.yaml's `llm:` section under the environment (as the
    assets read it), or None when no endpoint and model are configured."""
    llm = LLMSettings.from_env(load_collections(settings.collections_path).llm)
    return LLMClient(llm) if llm.enabled else None
