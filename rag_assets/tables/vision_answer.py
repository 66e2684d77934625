"""A vision model's answer judged: the one markdown table it holds, whether it covers the
parser's own text for that table, and whether it says the table goes on."""

from __future__ import annotations

import re
from collections import Counter

from rag_assets.text.markdown import RULE_CELL, markdown_table, row_cells
from rag_assets.text.normalize import normalize_markdown
from rag_assets.text.scripts import HAN_KANA_HANGUL

# Share of the parser's tokens for a table (words; CJK: characters) that the model's table
# must hold. Measured on the shared fixture PDFs (PyMuPDF's tables against two independent
# readers of the same table: Docling's reference tables and RapidOCR on the rendered
# region): same table 0.97-1.00; another table of the same document 0.00-0.53, one
# near-duplicate CJK table 0.74; only the first half of the rows 0.09-0.53.
MIN_RECALL = 0.8

_CJK_CHAR = re.compile(f"([{HAN_KANA_HANGUL}])")
_WORD = re.compile(r"[^\W_]+(?:[.,:][^\W_]+)*")  # "2.5000", "15:8", "1,234" stay one token
_CONTINUES = re.compile(r"^\s*\**continues\**\s*:\s*\**\s*(yes|no)\b", re.IGNORECASE | re.MULTILINE)


def tokens(text: str) -> Counter[str]:
    """Words, and each CJK character on its own (CJK text has no spaces to split on)."""
    return Counter(_WORD.findall(_CJK_CHAR.sub(r" \1 ", normalize_markdown(text))))


def token_recall(expected: str, found: str) -> float:
    """Share of `expected`'s tokens (with multiplicity) that are in `found`; 1.0 when none expected."""
    wanted = tokens(expected)
    total = sum(wanted.values())
    return sum((wanted & tokens(found)).values()) / total if total else 1.0


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in row_cells(line)]


def _pipe_blocks(answer: str) -> list[list[str]]:
    """Runs of consecutive lines holding a pipe; fence lines are dropped first."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in answer.splitlines():
        if line.strip().startswith(("```", "~~~")):
            continue
        if "|" in line:
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return [*blocks, current] if current else blocks


def parse_markdown_table(answer: str) -> tuple[list[list[str]] | None, str | None]:
    """(rows of cells, header first) of the one table in `answer`, or (None, reason)."""
    if not answer.strip():
        return None, "empty answer: the model returned no text"
    if answer.strip().upper().startswith("NO TABLE"):
        return None, "no table: the model saw no table in the image"
    table, reason = _one_table(answer)
    if table is None:
        return None, reason
    header, separator, *body = (_cells(line) for line in table)
    reason = _shape_problem(header, separator, body)
    if reason:
        return None, f"malformed table: {reason}"
    return [header, *body], None


def _one_table(answer: str) -> tuple[list[str], None] | tuple[None, str]:
    """The lines of the one pipe table (a header over a separator row) in `answer`, or why
    there is none."""
    blocks = _pipe_blocks(answer)
    tables = [b for b in blocks if len(b) > 1 and all(RULE_CELL.match(c) for c in _cells(b[1]))]
    if not tables:
        if blocks:
            return None, "malformed table: no separator row under a header"
        return None, "no table: the answer holds no markdown table"
    if len(tables) > 1:
        return None, f"malformed table: {len(tables)} tables in the answer, one expected"
    return tables[0], None


def _shape_problem(header: list[str], separator: list[str], body: list[list[str]]) -> str | None:
    """What breaks the table's shape: rows of another width than the header, no rows, no text."""
    if len(separator) != len(header):
        return f"separator has {len(separator)} cells, header {len(header)}"
    if not body:
        return "a header without rows"
    for number, row in enumerate(body, start=1):
        if len(row) != len(header):
            return f"row {number} has {len(row)} cells, header {len(header)}"
    if not any(cell for row in (header, *body) for cell in row):
        return "every cell is empty"
    return None


def validate_vision_table(answer: str, parser_text: str) -> tuple[str | None, str | None]:
    """(markdown, None) when `answer` holds one well-formed table covering the parser's text, else (None, reason).

    The markdown comes back normalized: outer pipes on every row, a plain separator.
    With no parser text to compare (a picture of a table), the form alone decides.
    """
    rows, reason = parse_markdown_table(answer)
    if rows is None:
        return None, reason
    markdown = markdown_table(rows[0], rows[1:])
    recall = token_recall(parser_text, markdown)
    if recall < MIN_RECALL:
        return None, (
            f"low overlap: {recall:.0%} of the parser's words for this table are in the answer"
            f" (at least {MIN_RECALL:.0%} needed)"
        )
    return markdown, None


def continues_on_another_page(answer: str) -> bool | None:
    """What the model said on its "Continues: yes|no" line; None when it said nothing."""
    match = _CONTINUES.search(answer)
    return match.group(1).lower() == "yes" if match else None
