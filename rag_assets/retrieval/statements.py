"""Which financial statement a question's metric is read from.

A question about a filing names a metric (`quick ratio`, `capital intensive`, `operating
margin`) where the page that answers is the statement the metric is computed from, titled in
the filing's own words. Every retriever searches the question with the statement's names and
line items added, as a chunk of a statement carries those names in its context
(templates/statements.py). The statements a question names (`shown in the balance sheet`) or
reads its metric from are also searched alone, by the chunks' `financial_statement`
metadata, and that search is fused with the flat one (`Retriever.search`).
"""

from __future__ import annotations

import re

from rag_assets.templates.statements import (
    BALANCE_SHEET,
    CASH_FLOW_STATEMENT,
    INCOME_STATEMENT,
    statements_named,
)

# What BM25 and the embedding search for each statement.
_SEARCHED = {
    BALANCE_SHEET: "balance sheet statement of financial position",
    INCOME_STATEMENT: "income statement statement of operations",
    CASH_FLOW_STATEMENT: "cash flow statement statement of cash flows",
}

# (what a question says, the statements that answer it, their line items it reads)
_METRICS: tuple[tuple[re.Pattern[str], tuple[str, ...], str], ...] = tuple(
    (re.compile(pattern, re.I), statements, items)
    for pattern, statements, items in (
        (
            r"\bgross\s+(?:margin|profit)\b",
            (INCOME_STATEMENT,),
            "revenue cost of sales gross profit",
        ),
        (
            r"\boperating\s+(?:margin|income|profit)\b",
            (INCOME_STATEMENT,),
            "operating income revenue",
        ),
        (
            r"\bnet\s+(?:margin|income|earnings)\b|\bearnings\s+per\s+share\b|\bEPS\b",
            (INCOME_STATEMENT,),
            "",
        ),
        (
            r"\bEBITDA\b",
            (INCOME_STATEMENT, CASH_FLOW_STATEMENT),
            "operating income depreciation and amortization",
        ),
        (r"\beffective\s+tax\s+rate\b", (), "provision for income taxes effective tax rate"),
        (
            r"\b(?:quick|current|cash)\s+ratio\b|\bworking\s+capital\b|\bliquidity\b",
            (BALANCE_SHEET,),
            "total current assets total current liabilities",
        ),
        (
            r"\bdebt[-\s]+to[-\s]+equity\b|\bleverage\b|\bdebt\s+on\s+(?:its\s+)?balance\s+sheet\b",
            (BALANCE_SHEET,),
            "long-term debt total equity",
        ),
        (
            # The capital intensity ratio: total assets over revenue.
            r"\bcapital[-\s]+intensi(?:ve|ty)\b",
            (BALANCE_SHEET, INCOME_STATEMENT),
            "total assets revenue",
        ),
        (
            r"\bcapex\b|\bcapital\s+expenditures?\b",
            (CASH_FLOW_STATEMENT,),
            "capital expenditures purchases of property plant and equipment",
        ),
        (
            r"\bfree\s+cash\s*flow\b|\bFCF\b|\bcash\s*flow\s+conversion\b",
            (CASH_FLOW_STATEMENT,),
            "net cash provided by operating activities capital expenditures",
        ),
        (
            r"\binventory\s+turnover\b|\bdays\s+(?:of\s+)?inventory\b",
            (INCOME_STATEMENT, BALANCE_SHEET),
            "cost of sales inventories",
        ),
        (
            r"\breturn\s+on\s+(?:assets|equity)\b|\bRO[AE]\b",
            (INCOME_STATEMENT, BALANCE_SHEET),
            "net income total assets total equity",
        ),
        (r"\bdividends?\b", (CASH_FLOW_STATEMENT,), "dividends paid"),
        (
            r"\bPP&?E\b|\bproperty,?\s+plant\s+and\s+equipment\b",
            (BALANCE_SHEET,),
            "property plant and equipment net",
        ),
    )
)


def statement_terms(question: str) -> str:
    """The names and line items of the statements the question's metrics are read from
    (empty when it names none); two metrics read alike add their terms once."""
    found: list[str] = []
    for pattern, statements, items in _METRICS:
        terms = " ".join([*(_SEARCHED[s] for s in statements), items]).strip()
        if pattern.search(question) and terms not in found:
            found.append(terms)
    return " ".join(found)


def statements_asked(question: str) -> list[str]:
    """The kinds of statement the question names or reads its metrics from, named first."""
    found = statements_named(question)
    for pattern, statements, _ in _METRICS:
        if pattern.search(question):
            found.extend(s for s in statements if s not in found)
    return found
