"""`auto`: choose a document's template by what its text shows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.templates.numbering import marker_at
from rag_assets.templates.qa.markers import question_start
from rag_assets.templates.registry import available_templates

# 7.4.1 Title: a numbered section heading.
_NUMBERED_HEADING = re.compile(r"^#+\s+\d+(?:\.\d+)+\s+\S")

QA_MIN_MARKERS = 2
CLAUSE_MIN_MARKERS = 3
SPEC_MIN_TABLES = 2
SPEC_MIN_NUMBERED_HEADINGS = 3


@dataclass(frozen=True)
class TemplateChoice:
    template: str
    reason: str


def _auto(doc: StandardizedDocument) -> TemplateChoice:
    # 問 A1： / **問：…** / Q1 / ??? question "…" at a line start: Q&A papers and FAQs.
    qa = sum(1 for line in doc.markdown.splitlines() if question_start(line))
    if qa >= QA_MIN_MARKERS:
        return TemplateChoice("qa_pairs", f"auto: {qa} question markers (問, Q<n>, ??? question)")
    # 第三十九条 / Article 5 starting a line: clauses of statutes and contracts.
    clauses = sum(
        1
        for line in doc.markdown.splitlines()
        if (marker := marker_at(line.lstrip("# "), 0)) and marker.kind == "article"
    )
    if clauses >= CLAUSE_MIN_MARKERS:
        return TemplateChoice("clauses", f"auto: {clauses} clause markers (第X条, Article N)")
    tables = sum(1 for e in doc.elements if e.type == "table")
    numbered = sum(
        1 for e in doc.elements if e.type == "heading" and _NUMBERED_HEADING.match(e.text)
    )
    if tables >= SPEC_MIN_TABLES and numbered >= SPEC_MIN_NUMBERED_HEADINGS:
        return TemplateChoice(
            "spec", f"auto: {tables} tables under {numbered} numbered section headings"
        )
    return TemplateChoice("semantic", "auto: no Q&A, clause or spec pattern found")


def choose_template(doc: StandardizedDocument, requested: str) -> TemplateChoice:
    if requested != "auto":
        return TemplateChoice(requested, "configured")
    choice = _auto(doc)
    if choice.template not in available_templates():
        return TemplateChoice(
            "semantic", f"{choice.reason}, but {choice.template!r} is not installed"
        )
    return choice
