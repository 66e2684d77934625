"""Financial statements by the names people ask for them with.

A filing titles its statements in its own words (`CONSOLIDATED STATEMENTS OF OPERATIONS`,
`Consolidated Statement of Financial Position`); questions name them otherwise (`income
statement`, `balance sheet`). A breadcrumb that holds a statement's title ends with the
statement's usual names, so what is embedded and matched says both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_STATEMENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\bbalance\s+sheets?\b|\bstatements?\s+of\s+financial\s+(?:position|condition)\b",
            re.I,
        ),
        "balance sheet, statement of financial position",
    ),
    (
        re.compile(
            r"\bstatements?\s+of\s+(?:consolidated\s+)?(?:operations|income|earnings)\b"
            r"|\bincome\s+statements?\b|\bprofit\s+(?:and|&)\s+loss\b",
            re.I,
        ),
        "income statement, statement of operations, statement of earnings",
    ),
    (
        re.compile(r"\bstatements?\s+of\s+cash\s+flows?\b|\bcash\s+flows?\s+statements?\b", re.I),
        "cash flow statement, statement of cash flows",
    ),
    (
        re.compile(
            r"\bstatements?\s+of\s+(?:changes\s+in\s+)?(?:stockholders|shareholders|owners)['’]?"
            r"\s+equity\b|\bstatements?\s+of\s+changes\s+in\s+equity\b",
            re.I,
        ),
        "statement of stockholders' equity, statement of changes in equity",
    ),
)
# A note about a statement (`Notes to Consolidated Balance Sheets`) is not the statement.
_NOTES = re.compile(r"\bnotes?\s+to\b", re.I)


def statement_names(headings: Sequence[str]) -> str | None:
    """The usual names of the financial statement the innermost heading that titles one
    titles; None when no heading does."""
    for heading in reversed(headings):
        if _NOTES.search(heading):
            continue
        for pattern, names in _STATEMENTS:
            if pattern.search(heading):
                return names
    return None
