"""Markdown pipe-table syntax, as the parsers, templates and checks read it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# A GitHub table's delimiter row: cells of three dashes or more, optionally aligned by colons
# (`| --- | :---: |`).
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
# Any line of dashes, colons and pipes alone (`|-|-|`, `---`): a delimiter row as loosely as
# a converter may write one, with a single dash per cell.
DASHED_LINE = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*$")
# One cell of a delimiter row: `---`, `:---`, `:-:`.
RULE_CELL = re.compile(r"^\s*:?-+:?\s*$")
# A pipe between cells; `\|` is a pipe inside a cell's text.
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def row_cells(line: str) -> list[str]:
    """The cells of a pipe-table row as written (not stripped), without its outer pipes."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return UNESCAPED_PIPE.split(inner)


def markdown_row(cells: Sequence[str]) -> str:
    """A pipe-table row of `cells` as given, with outer pipes."""
    return "| " + " | ".join(cells) + " |"


def markdown_table(header: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    """A pipe table: the header row, a plain delimiter row, the body rows."""
    rule = "|" + "|".join(["---"] * len(header)) + "|"
    return "\n".join([markdown_row(header), rule, *(markdown_row(row) for row in body)])
