"""How close an IR comes to a reference markdown: headings (text and level) and table cells.

Used by the parser benchmark and by tests that pin parser quality on real documents.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.templates.base import heading_level, heading_title
from rag_assets.text.markdown import TABLE_RULE
from rag_assets.text.normalize import normalize_markdown

_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_headings(markdown: str) -> list[tuple[str, int]]:
    """(normalized title, level) of every ATX heading outside code fences, one per line as
    written: a chapter number set apart from its title is a heading of its own, as in the IR."""
    headings: list[tuple[str, int]] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (match := _ATX.match(line)):
            headings.append((normalize_markdown(match.group(2)), len(match.group(1))))
    return headings


def markdown_tables(markdown: str) -> list[list[list[str]]]:
    """Every pipe table as rows of normalized cells, separator rows dropped."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*markdown.splitlines(), ""]:
        stripped = line.strip()
        if stripped.startswith("|"):
            if not TABLE_RULE.match(stripped):
                current.append([normalize_markdown(c) for c in stripped.strip("|").split("|")])
        elif current:
            tables.append(current)
            current = []
    return tables


def ir_headings(doc: StandardizedDocument) -> list[tuple[str, int]]:
    return [
        (normalize_markdown(heading_title(e)), heading_level(e))
        for e in doc.elements
        if e.type in ("title", "heading") and heading_title(e)
    ]


def ir_tables(doc: StandardizedDocument) -> list[list[list[str]]]:
    tables = []
    for element in doc.elements:
        if element.type != "table":
            continue
        if element.table is not None:
            tables.append([[normalize_markdown(c) for c in row] for row in element.table.grid()])
        else:
            tables.extend(markdown_tables(element.text))
    return tables


@dataclass(frozen=True)
class HeadingScores:
    precision: float
    recall: float
    f1: float
    level_accuracy: float  # of the matched headings, how many have the reference's level
    found: int
    expected: int


def heading_scores(found: list[tuple[str, int]], expected: list[tuple[str, int]]) -> HeadingScores:
    """Multiset match on text; levels compared in order among texts found in both."""
    found_texts, expected_texts = Counter(t for t, _ in found), Counter(t for t, _ in expected)
    matched = sum((found_texts & expected_texts).values())
    precision = matched / len(found) if found else 0.0
    recall = matched / len(expected) if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    expected_levels: dict[str, list[int]] = {}
    for text, level in expected:
        expected_levels.setdefault(text, []).append(level)
    same_level = 0
    for text, level in found:
        levels = expected_levels.get(text)
        if levels:
            same_level += levels.pop(0) == level
    return HeadingScores(
        precision, recall, f1, same_level / matched if matched else 0.0, len(found), len(expected)
    )


def _cell_overlap(a: list[list[str]], b: list[list[str]]) -> float:
    cells_a, cells_b = (
        Counter(c for row in a for c in row if c),
        Counter(c for row in b for c in row if c),
    )
    union = sum((cells_a | cells_b).values())
    return sum((cells_a & cells_b).values()) / union if union else 1.0


@dataclass(frozen=True)
class TableScores:
    found: int
    expected: int
    cell_agreement: float  # mean over reference tables of the best match's cell overlap (Jaccard)


def table_scores(found: list[list[list[str]]], expected: list[list[list[str]]]) -> TableScores:
    if not expected:
        return TableScores(len(found), 0, 1.0 if not found else 0.0)
    best = [
        max((_cell_overlap(table, candidate) for candidate in found), default=0.0)
        for table in expected
    ]
    return TableScores(len(found), len(expected), sum(best) / len(best))
