"""`auto`: choose a document's template by what its text shows.

The markers decide (question, clause, spec patterns), unless an LLM client is given: then
the model classifies a short excerpt (title, headings, the text's start) into one of the
registered templates, and its choice stands when its confidence reaches `min_confidence`.
Otherwise the markers' choice stands, its reason saying what the LLM said or why it failed.
With a cache, the model's guess is kept per document content, selector version and model, so
re-materializing an unchanged document asks nothing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace

from pydantic import BaseModel, Field

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.json_cache import read_or_ask
from rag_assets.llm import LLMClient, LLMError
from rag_assets.optional import StepFailures
from rag_assets.templates.base import heading_title
from rag_assets.templates.choice_cache import CachedGuess, ChoiceCache, choice_key
from rag_assets.templates.qa.markers import question_start
from rag_assets.templates.registry import available_templates
from rag_assets.templates.spec_parts.glossary import is_glossary_heading
from rag_assets.templates.spec_parts.labels import parse_caption, table_caption
from rag_assets.text.numbering import marker_at, section_number_pattern

# 7 Title, 7.4.1 Title: a numbered section heading with its title; bounded, so that a year
# ("2024 Report") is no section number.
_NUMBERED_HEADING = re.compile(rf"^#+\s+{section_number_pattern()}\.?\s+\S")
_CONTENTS = re.compile(r"^(?i:(?:table of )?contents)$|^(?:目录|目錄)$")

# Tables holding this share of the text (headings and captions aside) make a spreadsheet or
# CSV: rows of data, whose sheet names must not read as Q&A or clause markers ("# Q1 2024").
TABULAR_MIN_SHARE = 0.75
QA_MIN_MARKERS = 2
CLAUSE_MIN_MARKERS = 3
# A spec: numbered sections, and enough of what specs hold besides. Tables (two, or one with a
# `Table N` caption) weigh 2; figure captions, a glossary and a table of contents 1 each.
SPEC_MIN_NUMBERED_HEADINGS = 3
SPEC_MIN_TABLES = 2
SPEC_MIN_SCORE = 2
# Kinds of documents that are prose and tables under headings, whatever markers they show: a
# filing's numbered notes and tables of contents are no spec, its `Q1` quarters no Q&A.
PROSE_KINDS = frozenset(
    {
        "annual report",
        "quarterly report",
        "current report",
        "registration statement",
        "proxy statement",
        "press release",
        "paper",
    }
)

# Bump on any change to what the model is asked (CLASSIFY_PROMPT, TEMPLATE_DESCRIPTIONS, the
# excerpt): it is part of the choice cache's key.
SELECTOR_VERSION = "select-v1"
# What the LLM sees of a document.
EXCERPT_CHARS = 3000
EXCERPT_HEADINGS = 40
REASON_MAX_CHARS = 200
# Built-in templates as the model is told about them; plugins are listed by name only.
TEMPLATE_DESCRIPTIONS = {
    "qa_pairs": "briefing papers, FAQs, question-and-answer lists: one chunk per question",
    "clauses": "statutes, regulations, contracts: numbered articles or clauses (第X条, Article N)",
    "spec": "technical specifications, datasheets: numbered sections with many register tables",
    "semantic": "prose under headings (manuals, reports, articles): chunks follow sections",
    "fixed": "fixed-size token windows, for text without usable structure",
}
CLASSIFY_PROMPT = """\
Choose how to chunk this document for retrieval: the one template below that fits it best.
{templates}

Answer with the template's name, your confidence from 0 to 1, and a one-line reason.

Title: {title}
Headings:
{headings}

The text begins:
{text}
"""


@dataclass(frozen=True)
class TemplateChoice:
    template: str
    reason: str
    cached: bool = False  # the LLM's guess came from the choice cache: no call was made
    degraded: tuple[str, ...] = ()  # optional steps of the choice that failed, and why


@dataclass(frozen=True)
class _Markers:
    """What the text shows, counted once: the rules below decide from it."""

    table_share: float
    questions: int
    clauses: int
    numbered_headings: int
    spec_signals: list[tuple[str, int]]

    @property
    def spec_score(self) -> int:
        return sum(weight for _, weight in self.spec_signals)

    def summary(self) -> str:
        return (
            f"{self.questions} question markers, {self.clauses} clause markers, spec score "
            f"{self.spec_score} under {self.numbered_headings} numbered headings"
        )


def _markers(doc: StandardizedDocument) -> _Markers:
    lines = doc.markdown.splitlines()
    return _Markers(
        table_share=_table_share(doc),
        # 問 A1： / **問：…** / Q1 / ??? question "…" at a line start: Q&A papers and FAQs.
        questions=sum(1 for line in lines if question_start(line)),
        # 第三十九条 / Article 5 starting a line: clauses of statutes and contracts.
        clauses=sum(
            1
            for line in lines
            if (marker := marker_at(line.lstrip("# "), 0)) and marker.kind == "article"
        ),
        numbered_headings=sum(
            1 for e in doc.elements if e.type == "heading" and _NUMBERED_HEADING.match(e.text)
        ),
        spec_signals=_spec_signals(doc),
    )


def _auto(doc: StandardizedDocument) -> TemplateChoice:
    seen = _markers(doc)
    kind = _profile_kind(doc)
    if kind is not None and kind[0] in PROSE_KINDS:
        return TemplateChoice(
            "semantic",
            f"auto: the profile says {kind[0]} ({kind[1]}), read by its sections "
            f"({seen.summary()})",
        )
    # Mostly tables (a spreadsheet, a CSV): sheet names and cells are no Q&A or clause markers.
    tabular = seen.table_share >= TABULAR_MIN_SHARE
    if not tabular:
        if seen.questions >= QA_MIN_MARKERS:
            return TemplateChoice(
                "qa_pairs", f"auto: {seen.questions} question markers (問, Q<n>, ??? question)"
            )
        if seen.clauses >= CLAUSE_MIN_MARKERS:
            return TemplateChoice(
                "clauses", f"auto: {seen.clauses} clause markers (第X条, Article N)"
            )
    if seen.numbered_headings >= SPEC_MIN_NUMBERED_HEADINGS and seen.spec_score >= SPEC_MIN_SCORE:
        found = ", ".join(what for what, _ in seen.spec_signals)
        return TemplateChoice(
            "spec",
            f"auto: {found} under {seen.numbered_headings} numbered section headings "
            f"(score {seen.spec_score})",
        )
    if tabular:
        return TemplateChoice(
            "semantic",
            f"auto: tables hold {seen.table_share:.0%} of the text; semantic splits a table "
            "between rows and repeats its header rows",
        )
    return TemplateChoice("semantic", "auto: no Q&A, clause or spec pattern found")


def _profile_kind(doc: StandardizedDocument) -> tuple[str, str] | None:
    """(kind, where it was read) from the document's profile, when it has one."""
    kind = (doc.metadata.get("profile") or {}).get("kind")
    return (kind["value"], kind["source"]) if kind else None


def _table_share(doc: StandardizedDocument) -> float:
    """The share of the text, headings and captions aside, that tables hold."""
    body = [e for e in doc.elements if e.type not in ("title", "heading", "caption")]
    total = sum(len(e.text) for e in body)
    tables = sum(len(e.text) for e in body if e.type == "table")
    return tables / total if total else 0.0


def _spec_signals(doc: StandardizedDocument) -> list[tuple[str, int]]:
    """(what was seen, its weight) for each spec signal the document shows."""
    tables = len(doc.tables())
    captioned = sum(1 for i, _ in doc.tables() if table_caption(doc, i)[0] is not None)
    figures = sum(
        1
        for e in doc.elements
        if e.type in ("caption", "paragraph")
        and (caption := parse_caption(e.text, strict=e.type == "paragraph"))
        and caption.kind == "figure"
    )
    titles = [heading_title(e) for e in doc.headings()]
    signals: list[tuple[str, int]] = []
    if tables >= SPEC_MIN_TABLES or (tables and captioned):
        signals.append((f"{tables} tables ({captioned} captioned)", 2))
    if figures:
        signals.append((f"{figures} figure captions", 1))
    if any(is_glossary_heading(title) for title in titles):
        signals.append(("a glossary", 1))
    if any(e.type == "toc" for e in doc.elements) or any(map(_CONTENTS.match, titles)):
        signals.append(("a table of contents", 1))
    return signals


class TemplateGuess(BaseModel):
    template: str = Field(description="one of the template names listed")
    confidence: float = Field(ge=0, le=1)
    reason: str = Field(description="one line: what in the text decides it")


def choose_template(
    doc: StandardizedDocument,
    requested: str,
    llm: LLMClient | None = None,
    min_confidence: float = 0.7,
    cache: ChoiceCache | None = None,
) -> TemplateChoice:
    if requested != "auto":
        return TemplateChoice(requested, "configured")
    # Scoring and the LLM's guess only refine the choice: when one fails, `semantic` (or the
    # scores' choice) stands and the document is chunked all the same.
    failures = StepFailures(doc.source_path or doc.doc_id)
    fallback = TemplateChoice("semantic", "auto: scoring failed, the default template stands")
    choice = failures.run("template scoring", lambda: _auto(doc), fallback)
    if choice.template not in available_templates():
        choice = TemplateChoice(
            "semantic", f"{choice.reason}, but {choice.template!r} is not installed"
        )
    if llm is not None:
        choice = failures.run(
            "template choice by LLM",
            lambda: _ask_llm(doc, llm, choice, min_confidence, cache),
            choice,
        )
    return replace(choice, degraded=tuple(failures.notes()))


def document_sha256(doc: StandardizedDocument) -> str:
    """The content hash of the document as the selector sees it (tables in their markdown)."""
    return hashlib.sha256(doc.model_dump_json().encode()).hexdigest()


def _guess(
    doc: StandardizedDocument, llm: LLMClient, names: list[str], cache: ChoiceCache | None
) -> tuple[TemplateGuess, bool]:
    """The model's guess and whether it came from `cache`; raises LLMError when the call fails."""
    sha, model = document_sha256(doc), llm.settings.model or ""

    def ask() -> CachedGuess:
        messages = [{"role": "user", "content": _classify_prompt(doc, names)}]
        return CachedGuess(
            document_sha256=sha,
            model=model,
            selector_version=SELECTOR_VERSION,
            templates=names,
            doc_id=doc.doc_id,
            **llm.chat_json(messages, TemplateGuess).model_dump(),
        )

    entry, cached = read_or_ask(cache, choice_key(sha, model, SELECTOR_VERSION, names), ask)
    guess = TemplateGuess(template=entry.template, confidence=entry.confidence, reason=entry.reason)
    return guess, cached


def _ask_llm(
    doc: StandardizedDocument,
    llm: LLMClient,
    regex: TemplateChoice,
    min_confidence: float,
    cache: ChoiceCache | None,
) -> TemplateChoice:
    """The LLM's choice when it is sure enough of a registered template; else `regex`."""
    names = available_templates()
    try:
        guess, cached = _guess(doc, llm, names, cache)
    except LLMError as error:
        return TemplateChoice(regex.template, f"{regex.reason} (LLM failed: {error.reason})")
    said = f"LLM said {guess.template} at {guess.confidence:g}"
    if guess.template not in names:
        reason = f"{regex.reason} ({said}, not a registered template)"
        return TemplateChoice(regex.template, reason, cached)
    if guess.confidence < min_confidence:
        reason = f"{regex.reason} ({said}, below {min_confidence:g})"
        return TemplateChoice(regex.template, reason, cached)
    reason = " ".join(guess.reason.split())[:REASON_MAX_CHARS]
    return TemplateChoice(
        guess.template,
        f"llm: {reason} ({guess.template} at {guess.confidence:g}; {regex.reason})",
        cached,
    )


def _classify_prompt(doc: StandardizedDocument, names: list[str]) -> str:
    titles = [heading_title(element) for element in doc.headings()]
    title = doc.title or (titles[0] if titles else "(none)")
    templates = "\n".join(
        f"- {name}: {TEMPLATE_DESCRIPTIONS[name]}" if name in TEMPLATE_DESCRIPTIONS else f"- {name}"
        for name in names
    )
    return CLASSIFY_PROMPT.format(
        templates=templates,
        title=title,
        headings="\n".join(titles[:EXCERPT_HEADINGS]) or "(none)",
        text=doc.markdown[:EXCERPT_CHARS],
    )
