"""Grounded answers: retrieve, pick tools, answer only from what was found, cite every sentence.

1. A follow-up ("and its reset value?") is rewritten into a standalone question from the
   previous turns: by the model when one is configured, else by rule.
2. The rule router's tools and a general passage search run; when the best evidence is below
   `NOT_FOUND_THRESHOLD` or the question names something no chunk mentions, the answer is
   "not found in the indexed documents" with the nearest passages, and no model is called.
3. Without a model: the passages and tool results, numbered and cited, and a note saying so.
4. With one: the model may choose tools by function calling (the rules stay the fallback),
   then answers from numbered sources only. Every sentence must end with markers of given
   sources, and every number it states must be in a source it cites; an answer that breaks
   this is rejected and asked for once more, then the sources are returned as passages.
5. When a table row and a passage of one document state different values for the same field
   and the answer rests on either, the answer must give the table's value and say the sources
   differ; if it does not, a cited note saying so is appended (`conflicts`), no model call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from rag_assets.llm.client import LLMClient, LLMError
from rag_assets.llm.settings import LLMSettings
from rag_assets.retrieval import tools
from rag_assets.retrieval.conflicts import find_conflicts, reconcile
from rag_assets.retrieval.inputs import one_line, query_text
from rag_assets.retrieval.relevance import NOT_FOUND_THRESHOLD, Evidence, Vocabulary, assess
from rag_assets.retrieval.router import Route, ToolCall, route, route_by_rules
from rag_assets.retrieval.tools import Source, Toolbox, fold
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
MODEL_NOT_FOUND = "NOT_FOUND"
PASSAGES = 5  # general passages added to every tool's results
NEAREST = 3  # passages shown with a "not found"
SNIPPET_CHARS = 300

SYSTEM_PROMPT = f"""You answer questions about documents using ONLY the numbered sources the \
user gives. Rules:
- End every sentence with the marker of each source it rests on, like [1] or [2][3]. Use only \
the given markers.
- Quote table values (offsets, bits, reset values, amounts, units) exactly as the table row \
states them.
- When a table and the prose disagree, give the table's value and say that the text differs.
- Use no knowledge beyond the sources. If they do not answer the question, reply exactly \
{MODEL_NOT_FOUND}."""

REWRITE_PROMPT = (
    "Rewrite the user's last question as one standalone question, replacing words such as "
    "'it', 'its' or 'that' by what they refer to in the conversation. Reply with the question only."
)

_MARKER = re.compile(r"\[(\d+)\]")
_MARKERS_AFTER_STOP = re.compile(r"([.!?。！？])\s*((?:\[\d+\]\s*)+)")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_VALUE = re.compile(r"0x[0-9a-f]+|\d+(?:[.:]\d+)*", re.IGNORECASE)
_FOLLOW_UP = re.compile(
    r"^(?:and|also|what about|how about|then)\b|\b(?:its|it|that|this|they|their|them)\b",
    re.IGNORECASE,
)
_LEAD = re.compile(r"^(?:and|also|what about|how about|then)\s+", re.IGNORECASE)
_SUBJECT = re.compile(r"(?:[A-Z][\w-]*|[A-Z0-9]{2,})(?:\s+(?:[A-Z][\w-]*|[A-Z0-9]{2,}))*")
_QUESTION_START = re.compile(
    r"^(?:what|which|who|how|when|where|why|is|are|does|do|can)\b", re.IGNORECASE
)

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


class Turn(BaseModel):
    question: str
    standalone_question: str
    answer: str


# Earlier turns a session file may hold; only the last one steers a follow-up question.
_SESSION = TypeAdapter(list[Turn])


def read_session(path: Path) -> list[Turn]:
    """The turns of a session file `answer --session` wrote; ValueError in one line when the
    file is not one."""
    try:
        return _SESSION.validate_json(path.read_bytes())
    except ValidationError as error:
        raise ValueError(one_line(error)) from None


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


class _Item(BaseModel):
    """One numbered source for the prompt: a tool result or a passage, with its chunk."""

    text: str
    kind: str
    source: Source


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

    def result(status: Status, text: str, cited: list[tuple[int, _Item]], reason: str) -> Answer:
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
    text, problems = _ask(client, standalone, numbered, notes)
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
    text = _with_table_values(text, numbered, notes)
    cited = sorted({int(m) for m in _MARKER.findall(text)})
    return result("answered", text, [numbered[m - 1] for m in cited], chosen.reason)


def _with_table_values(text: str, numbered: list[tuple[int, _Item]], notes: list[str]) -> str:
    """The answer, noting where a table and the text it rests on disagree (the table wins)."""
    cited = {int(m) for m in _MARKER.findall(text)}
    conflicts = [
        c
        for c in find_conflicts({marker: item.source for marker, item in numbered})
        if {c.table_marker, c.text_marker} & cited
    ]
    text, noted = reconcile(text, conflicts)
    notes += [
        f"table and text disagree on the {c.column} of the {c.subject}: note appended"
        for c in noted
    ]
    return text


def standalone_question(
    question: str, history: Sequence[Turn], client: LLMClient | None, notes: list[str]
) -> str:
    """The question as it would be asked without the conversation before it."""
    if not history or not _FOLLOW_UP.search(question):
        return question
    if client is not None:
        messages = [{"role": "system", "content": REWRITE_PROMPT}]
        for turn in history:
            messages += [
                {"role": "user", "content": turn.standalone_question},
                {"role": "assistant", "content": turn.answer},
            ]
        messages.append({"role": "user", "content": question})
        try:
            rewritten = client.chat_text(messages).text.strip()
        except LLMError as error:
            notes.append(f"follow-up rewritten by rule: the model failed ({error})")
        else:
            if rewritten:
                return rewritten
    return rewrite_by_rule(question, history[-1].standalone_question)


def rewrite_by_rule(question: str, previous: str) -> str:
    """ "and its reset value?" after "What is the offset of the Host Control Register?" ->
    "What is the reset value of the Host Control Register?"."""
    subjects = _SUBJECT.findall(" ".join(previous.split()[1:]))
    if not subjects:
        return f"{previous} {question}"
    subject = max(subjects, key=len)
    text = _LEAD.sub("", question.strip())
    text = re.sub(
        r"\bits\s+([\w\s-]+?)(?=[?.!,]|$)", rf"the \1 of the {subject}", text, count=1, flags=re.I
    )
    text = re.sub(r"\b(?:it|that|this)\b", f"the {subject}", text, count=1, flags=re.I)
    if subject not in text:
        text = f"{text.rstrip('?')} of the {subject}?"
    return text if _QUESTION_START.match(text) else f"What is {text}"


def _run(box: Toolbox, chosen: Route, question: str) -> tuple[list[_Item], list[ToolUse]]:
    """The route's tools, then general passages; each chunk and row once, tools first."""
    items: list[_Item] = []
    used: list[ToolUse] = []
    for call in chosen.calls:
        found = _call(box, call)
        used.append(
            ToolUse(
                name=call.name,
                arguments=call.arguments,
                chosen_by=chosen.chosen_by,
                results=len(found),
            )
        )
        items += found
    if not any(call.name == "text" for call in chosen.calls):
        passages = _call(box, ToolCall(name="text", arguments={"query": question}))
        used.append(
            ToolUse(
                name="text",
                arguments={"query": question},
                chosen_by="always",
                results=len(passages),
            )
        )
        items += passages
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


def _call(box: Toolbox, call: ToolCall) -> list[_Item]:
    args = call.arguments
    if call.name == "glossary":
        return [
            _Item(text=f"{e.term}: {e.definition}", kind=f"glossary ({e.match})", source=e.source)
            for e in tools.glossary(box, term=args["term"])
        ]
    if call.name == "table_rows":
        return [
            _Item(
                text=f"[{r.table}] " + " | ".join(f"{k}: {v}" for k, v in r.cells.items()),
                kind="table row",
                source=r.source,
            )
            for r in tools.table_rows(
                box, keywords=args["keywords"], attribute=args.get("attribute")
            )
        ]
    if call.name == "figures":
        return [
            _Item(text=f.source.text, kind="figure", source=f.source)
            for f in tools.figures(box, description=args["description"])
        ]
    if call.name == "section":
        return [
            _Item(text=c.text, kind="section", source=c.source)
            for s in tools.section(box, path_or_number=args["path_or_number"])
            for c in s.chunks
        ]
    return [
        _Item(text=p.text, kind="passage", source=p.source)
        for p in tools.text(box, query=args["query"], top_k=PASSAGES)
    ]


def _numbered(items: list[_Item]) -> list[tuple[int, _Item]]:
    return list(enumerate(items, 1))


def _listing(header: str, numbered: list[tuple[int, _Item]]) -> str:
    lines = [header]
    for marker, item in numbered:
        body = " ".join(item.text.split())
        lines.append(f"[{marker}] {item.source.citation}: {body[:SNIPPET_CHARS]}")
    return "\n".join(lines)


def _citation(marker: int, item: _Item) -> Citation:
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


def prompt(question: str, numbered: list[tuple[int, _Item]]) -> str:
    sources = "\n\n".join(
        f"[{marker}] ({item.kind}; {item.source.citation})\n{item.text}"
        for marker, item in numbered
    )
    return f"Sources:\n\n{sources}\n\nQuestion: {question}"


def _ask(
    client: LLMClient, question: str, numbered: list[tuple[int, _Item]], notes: list[str]
) -> tuple[str | None, str]:
    """The model's answer once it passes `check_answer` (one retry), else (None, problems)."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt(question, numbered)},
    ]
    problems: list[str] = []
    for attempt in range(2):
        try:
            text = client.chat_text(messages).text.strip()
        except LLMError as error:
            notes.append(f"the model call failed: {error}")
            return None, str(error)
        if text == MODEL_NOT_FOUND:
            return text, ""
        problems = check_answer(text, {m: item.text for m, item in numbered})
        if not problems:
            return text, ""
        notes.append(f"answer {attempt + 1} rejected: {'; '.join(problems)}")
        messages += [
            {"role": "assistant", "content": text},
            {
                "role": "user",
                "content": "Your answer was rejected: "
                + "; ".join(problems)
                + ". Answer again from the numbered sources only, every sentence ending with "
                "its markers.",
            },
        ]
    return None, "; ".join(problems)


def check_answer(text: str, sources: dict[int, str]) -> list[str]:
    """What is wrong with an answer: sentences without a marker, markers pointing at no
    source, numbers that none of a sentence's cited sources contains."""
    problems = []
    folded = {marker: fold(body) for marker, body in sources.items()}
    for sentence in sentences(text):
        markers = [int(m) for m in _MARKER.findall(sentence)]
        unknown = [m for m in markers if m not in sources]
        if unknown:
            problems.append(f"markers {unknown} point at no source")
            continue
        if not markers:
            problems.append(f"no citation marker in {sentence[:60]!r}")
            continue
        cited = " ".join(folded[m] for m in dict.fromkeys(markers))  # each source once
        for value in _VALUE.findall(_MARKER.sub(" ", sentence)):
            if fold(value) not in cited:
                problems.append(f"{value} is not in source {markers}")
    return problems


def sentences(text: str) -> list[str]:
    """Sentences with their trailing markers ("... 0x0E. [1]" keeps its [1])."""
    text = _MARKERS_AFTER_STOP.sub(lambda m: f"{m.group(2).strip()}{m.group(1)} ", text)
    parts = []
    for line in text.split("\n"):
        parts += [s.strip() for s in _SENTENCE.split(line) if re.search(r"\w", s)]
    # A line holding only markers belongs to the sentence before it.
    merged: list[str] = []
    for part in parts:
        if merged and not _MARKER.sub("", part).strip(" .,;"):
            merged[-1] += " " + part
        else:
            merged.append(part)
    return merged


def model_client(settings: Settings) -> LLMClient | None:
    """The chat model of rag_collections.yaml's `llm:` section under the environment (as the
    assets read it), or None when no endpoint and model are configured."""
    llm = LLMSettings.from_env(load_collections(settings.collections_path).llm)
    return LLMClient(llm) if llm.enabled else None
