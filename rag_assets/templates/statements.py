"""Financial statements by the names people ask for them with.

A filing titles its statements in its own words (`CONSOLIDATED STATEMENTS OF OPERATIONS`,
`Consolidated Statement of Financial Position`); questions name them otherwise (`income
statement`, `balance sheet`). A breadcrumb that holds a statement's title ends with the
statement's usual names, so what is embedded and matched says both. A parser that reads the
title into the table's first row (`| Consolidated Balance Sheets | Corning Incorporated and
Subsidiary Companies |`) leaves no heading for it: that row's first cell then names it.
The statement's kind is also the chunk's `financial_statement` metadata, which a search for
a statement a question names or reads its metric from filters on (retrieval/statements.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_assets.text.markdown import row_cells

FINANCIAL_STATEMENT = "financial_statement"  # the chunk metadata key holding the kind
BALANCE_SHEET = "balance sheet"
INCOME_STATEMENT = "income statement"
CASH_FLOW_STATEMENT = "cash flow statement"
EQUITY_STATEMENT = "statement of stockholders' equity"

# (how a title or a question names the statement, its kind, the usual names a breadcrumb adds)
_STATEMENTS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(
            # `Off-balance sheet arrangements` are what the balance sheet leaves out.
            r"(?<!off[-\s])\bbalance\s+sheets?\b"
            r"|\bstatements?\s+of\s+financial\s+(?:position|condition)\b",
            re.I,
        ),
        BALANCE_SHEET,
        "balance sheet, statement of financial position",
    ),
    (
        re.compile(
            r"\bstatements?\s+of\s+(?:consolidated\s+)?(?:operations|income|earnings)\b"
            r"|\bincome\s+statements?\b|\bprofit\s+(?:and|&)\s+loss\b",
            re.I,
        ),
        INCOME_STATEMENT,
        "income statement, statement of operations, statement of earnings",
    ),
    (
        re.compile(r"\bstatements?\s+of\s+cash\s+flows?\b|\bcash\s+flows?\s+statements?\b", re.I),
        CASH_FLOW_STATEMENT,
        "cash flow statement, statement of cash flows",
    ),
    (
        re.compile(
            r"\bstatements?\s+of\s+(?:changes\s+in\s+)?(?:stockholders|shareholders|owners)['’]?"
            r"\s+equity\b|\bstatements?\s+of\s+changes\s+in\s+equity\b",
            re.I,
        ),
        EQUITY_STATEMENT,
        "statement of stockholders' equity, statement of changes in equity",
    ),
)
NAMES = {kind: names for _, kind, names in _STATEMENTS}
# A note about a statement (`Notes to Consolidated Balance Sheets`) is not the statement.
_NOTES = re.compile(r"\bnotes?\s+to\b", re.I)
# A title opens its cell; a cell that only mentions a statement (`Gross Amount Presented in the
# Consolidated Balance Sheet`) is a column, not a title.
_TITLE_LEAD = re.compile(r"^\W*(?:(?:consolidated|combined|condensed)\s+)*", re.I)


def statement_of(headings: Sequence[str], text: str) -> str | None:
    """The kind of financial statement a chunk is part of: the one the innermost heading that
    titles a statement titles, else the one the first table row of `text` opens with."""
    return _heading_statement(headings) or _table_title_statement(text)


def statements_named(text: str) -> list[str]:
    """The kinds of statement a text names anywhere (`... shown in the balance sheet`), in
    the order of `_STATEMENTS`."""
    return [kind for pattern, kind, _ in _STATEMENTS if pattern.search(text)]


def _heading_statement(headings: Sequence[str]) -> str | None:
    for heading in reversed(headings):
        if _NOTES.search(heading):
            continue
        for pattern, kind, _ in _STATEMENTS:
            if pattern.search(heading):
                return kind
    return None


def _table_title_statement(text: str) -> str | None:
    """The kind of statement the first table row of `text` opens with (its first non-empty
    cell starting with the statement's title); None otherwise."""
    row = next((line for line in text.splitlines() if line.lstrip().startswith("|")), "")
    cell = next((c.strip() for c in row_cells(row) if c.strip()), "")
    title = cell[_TITLE_LEAD.match(cell).end() :]
    if not title or _NOTES.search(cell):
        return None
    return next((kind for pattern, kind, _ in _STATEMENTS if pattern.match(title)), None)
