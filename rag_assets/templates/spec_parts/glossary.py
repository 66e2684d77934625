"""Glossary entries: `Term: definition` lines, bold-term paragraphs and two-column tables."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.contracts.ir import DocumentElement
from rag_assets.templates.spec_parts.table_rows import parse_table

_GLOSSARY_HEADING = re.compile(
    r"\b(?i:glossary|definitions?|terms|terminology|abbreviations?|acronyms)\b"
    r"|術語|术语|定义|定義|名词解释|名詞解釋|缩略语|縮略語|缩写|縮寫"
)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_BOLD_TERM = re.compile(
    r"^(?:\*\*|__)(?P<term>[^*_]+?)(?:\*\*|__)\s*(?:[:：\-–—]\s*)?(?P<definition>\S.*)$"
)
# An ASCII colon needs a space after it, so that "15:8" or "0x04:" are not separators.
_SEPARATED = re.compile(r"^(?P<term>[^:：\t]+?)\s*(?::\s|：|\t|\s[-–—]\s)\s*(?P<definition>\S.*)$")
_TABLE_HEADER = re.compile(
    r"^(?i:terms?|abbreviations?|acronyms?|definitions?|descriptions?|meanings?|explanations?)$"
    r"|^(?:術語|术语|定义|定義|說明|说明|缩写|縮寫|名词|名詞|含义|含義)$"
)
_MAX_TERM_WORDS = 8
_MAX_TERM_CHARS = 80


@dataclass(frozen=True)
class Term:
    term: str
    definition: str
    span: tuple[int, int] | None  # in the element's text; None when it cannot be placed


def is_glossary_heading(title: str) -> bool:
    return bool(_GLOSSARY_HEADING.search(title))


def element_terms(element: DocumentElement) -> list[Term]:
    """The entries an element holds; none when it does not read as glossary entries."""
    if element.type == "table":
        return _table_terms(element)
    if element.type in ("paragraph", "list"):
        return _line_terms(element.text)
    return []


def _line_terms(text: str) -> list[Term]:
    """One entry per term line; following lines that start no entry continue its definition.

    The first line must start an entry, so ordinary prose in a glossary section stays body text.
    """
    terms: list[Term] = []
    start = 0
    for line in text.split("\n"):
        end = start + len(line.rstrip())
        entry = _entry(_LIST_MARKER.sub("", line.strip(), count=1))
        if entry:
            terms.append(Term(*entry, span=(start + len(line) - len(line.lstrip()), end)))
        elif line.strip() and terms:
            last = terms[-1]
            definition = f"{last.definition} {' '.join(line.split())}"
            terms[-1] = Term(last.term, definition, (last.span[0], end) if last.span else None)
        elif line.strip():
            return []
        start += len(line) + 1
    return terms


def _entry(line: str) -> tuple[str, str] | None:
    match = _BOLD_TERM.match(line) or _SEPARATED.match(line)
    if not match:
        return None
    term = " ".join(match.group("term").split()).rstrip(":：")
    if not _is_term(term):
        return None
    return term, " ".join(match.group("definition").split())


def _is_term(term: str) -> bool:
    return (
        0 < len(term) <= _MAX_TERM_CHARS
        and len(term.split()) <= _MAX_TERM_WORDS
        and not term.endswith((".", ",", ";"))
        and any(char.isalnum() for char in term)
    )


def _table_terms(element: DocumentElement) -> list[Term]:
    """Two-column tables: term, definition; a header row of column names is skipped."""
    table = parse_table(element)
    if table is None or len(table.rows[0]) != 2:
        return []
    rows = list(zip(table.rows, table.spans, strict=True))
    if any(_TABLE_HEADER.match(cell) for cell in rows[0][0]):
        rows = rows[1:]
    return [
        Term(term, definition, span)
        for (term, definition), span in rows
        if term and definition and _is_term(term)
    ]
