"""A question's financial metric points BM25 to the statement it is read from."""

from __future__ import annotations

import pytest

from rag_assets.retrieval.statements import statement_terms


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("Does Verizon have a healthy quick ratio for FY 2022?", "balance sheet"),
        ("Does Corning have positive working capital?", "balance sheet"),
        ("Is CVS Health a capital-intensive business?", "cash flow statement"),
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
