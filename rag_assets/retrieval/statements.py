"""Which financial statement a question's metric is read from.

A question about a filing names a metric (`quick ratio`, `capital intensive`, `operating
margin`) where the page that answers is the statement the metric is computed from, titled in
the filing's own words. BM25 searches the question with the statement's names and line items
added, as a chunk of a statement carries those names in its context (templates/statements.py);
the dense retriever embeds the question as asked.
"""

from __future__ import annotations

import re

_BALANCE = "balance sheet statement of financial position"
_INCOME = "income statement statement of operations"
_CASH = "cash flow statement statement of cash flows"

# (what a question says, what the statement that answers it names)
_METRICS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), terms)
    for pattern, terms in (
        (r"\bgross\s+(?:margin|profit)\b", f"{_INCOME} revenue cost of sales gross profit"),
        (r"\boperating\s+(?:margin|income|profit)\b", f"{_INCOME} operating income revenue"),
        (r"\bnet\s+(?:margin|income|earnings)\b|\bearnings\s+per\s+share\b|\bEPS\b", _INCOME),
        (r"\bEBITDA\b", f"{_INCOME} operating income {_CASH} depreciation and amortization"),
        (r"\beffective\s+tax\s+rate\b", "provision for income taxes effective tax rate"),
        (
            r"\b(?:quick|current|cash)\s+ratio\b|\bworking\s+capital\b|\bliquidity\b",
            f"{_BALANCE} total current assets total current liabilities",
        ),
        (
            r"\bdebt[-\s]+to[-\s]+equity\b|\bleverage\b|\bdebt\s+on\s+(?:its\s+)?balance\s+sheet\b",
            f"{_BALANCE} long-term debt total equity",
        ),
        (
            r"\bcapital[-\s]+intensive\b|\bcapex\b|\bcapital\s+expenditures?\b",
            f"{_CASH} capital expenditures purchases of property plant and equipment",
        ),
        (
            r"\bfree\s+cash\s*flow\b|\bFCF\b|\bcash\s*flow\s+conversion\b",
            f"{_CASH} net cash provided by operating activities capital expenditures",
        ),
        (
            r"\binventory\s+turnover\b|\bdays\s+(?:of\s+)?inventory\b",
            f"{_INCOME} cost of sales {_BALANCE} inventories",
        ),
        (
            r"\breturn\s+on\s+(?:assets|equity)\b|\bRO[AE]\b",
            f"{_INCOME} net income {_BALANCE} total assets total equity",
        ),
        (r"\bdividends?\b", f"{_CASH} dividends paid"),
        (
            r"\bPP&?E\b|\bproperty,?\s+plant\s+and\s+equipment\b",
            f"{_BALANCE} property plant and equipment net",
        ),
    )
)


def statement_terms(question: str) -> str:
    """The names and line items of the statements the question's metrics are read from
    (empty when it names none); two metrics read alike add their terms once."""
    found: list[str] = []
    for pattern, terms in _METRICS:
        if pattern.search(question) and terms not in found:
            found.append(terms)
    return " ".join(found)
