"""A question's financial metric points the search to the statement it is read from; a statement
named or read from is searched alone too (by the chunks' `financial_statement`)."""

from __future__ import annotations

import pytest

from rag_assets.retrieval.search import SearchFilters
from rag_assets.retrieval.statements import statement_terms, statements_asked


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("Does Verizon have a healthy quick ratio for FY 2022?", "balance sheet"),
        ("Does Corning have positive working capital?", "balance sheet"),
        # The capital intensity ratio is total assets over revenue; capex is a cash outflow.
        ("Is CVS Health a capital-intensive business?", "balance sheet"),
        ("What is the FY2018 capital expenditure amount for 3M?", "cash flow statement"),
        ("What is the FY2020 free cash flow (FCF) for General Mills?", "cash flow statement"),
        ("Does Adobe have an improving operating margin profile?", "income statement"),
        ("What drove gross margin change for 3M?", "income statement"),
        ("What is the year end net PP&E?", "balance sheet"),
    ],
)
def test_a_metric_names_its_statement(question: str, statement: str) -> None:
    assert statement_terms(question).startswith(statement)


def test_a_question_naming_no_metric_adds_nothing_and_alike_metrics_once() -> None:
    assert statement_terms("Which geographies does the company operate in?") == ""
    # The quick ratio and working capital are read from the same lines.
    assert statement_terms("quick ratio and working capital").count("balance sheet") == 1
    both = statement_terms("What is the inventory turnover and the gross margin?")
    assert "inventories" in both and "gross profit" in both


@pytest.mark.parametrize(
    ("question", "statements"),
    [
        # Named in the question's own words, or in a filing's.
        ("What is the net PP&E shown in the balance sheet?", ["balance sheet"]),
        ("Using the statement of income, what was revenue?", ["income statement"]),
        ("From the cash flow statement, what were the dividends?", ["cash flow statement"]),
        # Read from a metric: named ones first, each once.
        (
            "Based on the statement of financial position, what is the quick ratio?",
            ["balance sheet"],
        ),
        ("What is the FY2015 EBITDA margin?", ["income statement", "cash flow statement"]),
        (
            "From the income statement, what is the inventory turnover?",
            ["income statement", "balance sheet"],
        ),
        ("Is Verizon capital intensive?", ["balance sheet", "income statement"]),
        ("What are the geographies the company operates in?", []),
        ("What does the off-balance-sheet arrangement cover?", []),
        ("Which off-balance sheet arrangements does 3M have?", []),
    ],
)
def test_the_statements_a_question_asks_for(question: str, statements: list[str]) -> None:
    assert statements_asked(question) == statements


def test_a_statement_filter_reads_the_chunks_kind() -> None:
    expression = SearchFilters(doc_ids=["a"], statements=["balance sheet"]).expression()
    assert expression == 'doc_id in ["a"] and metadata["financial_statement"] in ["balance sheet"]'
