"""The shipped finance pack: statements titled in a filing's words get the names questions use,
and a question's metric points to the statement it is read from."""

from __future__ import annotations

import pytest

from rag_assets.retrieval.search import SearchFilters
from rag_assets.retrieval.vocabulary import sections_asked, vocabulary_terms
from rag_assets.templates.base import breadcrumb
from rag_assets.vocabulary import load_pack

FINANCE = load_pack("finance")


@pytest.mark.parametrize(
    ("headings", "kind"),
    [
        (["Item 8", "CONSOLIDATED STATEMENTS OF OPERATIONS"], "income statement"),
        (["Consolidated Statement of Financial Position"], "balance sheet"),
        (["Consolidated Statements of Cash Flows", "(in millions)"], "cash flow statement"),
        (["Consolidated Statements of Shareholders’ Equity"], "statement of stockholders' equity"),
        (["Notes to Consolidated Balance Sheets"], None),
        (["Results of Operations"], None),
        # What the balance sheet leaves out, a section of every 10-K's discussion.
        (["Off-Balance Sheet Arrangements and Contractual Obligations:"], None),
        (["Off balance sheet risk"], None),
        (["Off–balance sheet lending-related financial instruments"], None),
    ],
)
def test_a_statement_title_gives_the_names_questions_use(
    headings: list[str], kind: str | None
) -> None:
    text = "| Revenue | 10 |"
    assert FINANCE.section_of(headings, text) == kind
    crumbs = breadcrumb("Acme Corp · annual report", headings, text, [FINANCE])
    if kind:
        assert crumbs.endswith(FINANCE.names[kind])
    else:
        assert not any(crumbs.endswith(n) for n in FINANCE.names.values())
    # Without the pack, a title is only a title.
    assert breadcrumb("Acme Corp · annual report", headings, text) == " › ".join(
        ["Acme Corp · annual report", *headings]
    )


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (
            "| Consolidated Balance Sheets | Corning Incorporated and | Subsidiary Companies |\n"
            "|---|---|---|\n| Total assets | 29,499 | 30,154 |",
            "balance sheet",
        ),
        (
            "#### Revenue recognition\n\n| CONSOLIDATED STATEMENTS OF INCOME (in millions) | 2022 |"
            "\n|---|---|\n| Net sales | 14,189 |",
            "income statement",
        ),
        # A column that mentions a statement does not title the table.
        (
            "| December 31, 2018 (Millions) | Gross Amount Presented in the Consolidated Balance "
            "Sheet |\n|---|---|\n| Foreign exchange | 45 |",
            None,
        ),
        ("| Notes to Consolidated Balance Sheets | 2022 |\n|---|---|", None),
        ("The balance sheet shows less debt.", None),
    ],
)
def test_a_statement_titled_in_its_tables_first_row_gets_its_names(
    text: str, kind: str | None
) -> None:
    assert FINANCE.section_of(["Critical audit matters"], text) == kind
    crumbs = breadcrumb("Acme Corp · annual report", ["Critical audit matters"], text, [FINANCE])
    last = crumbs.split(" › ")[-1]
    assert (last.split(",")[0] if last != "Critical audit matters" else None) == kind


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
    assert vocabulary_terms([FINANCE], question).startswith(statement)
    assert vocabulary_terms([], question) == ""  # a collection without the pack adds nothing


def test_a_question_naming_no_metric_adds_nothing_and_alike_metrics_once() -> None:
    assert vocabulary_terms([FINANCE], "Which geographies does the company operate in?") == ""
    assert vocabulary_terms([FINANCE], "quick ratio and working capital").count("balance") == 1
    both = vocabulary_terms([FINANCE], "What is the inventory turnover and the gross margin?")
    assert "inventories" in both and "gross profit" in both


@pytest.mark.parametrize(
    ("question", "statements"),
    [
        ("Which geographies does the company operate in?", []),
        ("Using the statement of income, what was revenue?", ["income statement"]),
        ("From the cash flow statement, what were the dividends?", ["cash flow statement"]),
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
    ],
)
def test_the_statements_a_question_asks_for(question: str, statements: list[str]) -> None:
    asked = sections_asked([FINANCE], question)
    assert asked == ({"financial_statement": statements} if statements else {})


def test_a_section_filter_reads_each_packs_metadata_key() -> None:
    one = SearchFilters(doc_ids=["a"], sections={"financial_statement": ["balance sheet"]})
    assert one.expression() == (
        'doc_id in ["a"] and metadata["financial_statement"] in ["balance sheet"]'
    )
    two = SearchFilters(sections={"financial_statement": ["balance sheet"], "policy": ["leave"]})
    assert two.expression() == (
        '(metadata["financial_statement"] in ["balance sheet"] or metadata["policy"] in ["leave"])'
    )
    with pytest.raises(ValueError, match="section metadata keys are words"):
        SearchFilters(sections={'x"] or 1 == 1 or metadata["y': ["a"]})
