"""Which documents a question names, by issuer, period and kind, among a collection's profiles."""

from __future__ import annotations

import pytest

from rag_assets.profile.rules import profile_document
from rag_assets.retrieval.documents import DocumentCard, infer_documents
from rag_assets_tests.support.builders import doc_from_pages

CARDS = [
    DocumentCard(doc_id="amcor-2023", organization="Amcor plc", kind="annual report", year=2023),
    DocumentCard(doc_id="pepsico-2022", organization="PepsiCo, Inc.", kind="annual report", year=2022),
    DocumentCard(doc_id="bestbuy-2024-q2", organization="Best Buy Co., Inc.", kind="quarterly report", year=2023),
    DocumentCard(doc_id="bestbuy-2024", organization="Best Buy Co., Inc.", kind="annual report", year=2024),
    DocumentCard(doc_id="amex-2022", organization="American Express Company", kind="annual report", year=2022, aliases=("AXP",)),
    DocumentCard(doc_id="verizon-2021", organization="Verizon Communications Inc.", kind="annual report", year=2021),
    DocumentCard(doc_id="verizon-2022", organization="Verizon Communications Inc.", kind="annual report", year=2022),
    DocumentCard(doc_id="mills-2020", organization="GENERAL MILLS, INC.", kind="annual report", year=2020),
    DocumentCard(doc_id="3m-2018", organization="3M COMPANY", kind="annual report", year=2018),
    DocumentCard(doc_id="3m-2022", organization="3M COMPANY", kind="annual report", year=2022),
]  # fmt: skip


@pytest.mark.parametrize(
    ("question", "doc_ids", "words"),
    [
        ("Does AMCOR have an improving gross margin profile as of FY2023?", ["amcor-2023"], ["AMCOR", "2023"]),
        ("What is PepsiCo's gross margin?", ["pepsico-2022"], ["PepsiCo"]),
        ("Which Best Buy product category performed best in Q2 FY2024?", ["bestbuy-2024-q2"], ["Best Buy", "2024"]),
        ("Did Best Buy grow revenue in its FY2024 10-K?", ["bestbuy-2024"], ["Best Buy", "2024"]),
        ("What drove AMEX's operating margin?", ["amex-2022"], ["AMEX"]),
        ("Does AmEx report gross margin?", ["amex-2022"], ["AmEx"]),
        ("Which debt securities does American Express list?", ["amex-2022"], ["American Express"]),
        ("What is AXP's dividend?", ["amex-2022"], ["AXP"]),
        ("How did Verizon's capex change between FY2021 and FY2022?", ["verizon-2022"], ["Verizon", "2021", "2022"]),
        ("What was Verizon's revenue in 2021?", ["verizon-2021"], ["Verizon", "2021"]),
        ("Is 3M a capital-intensive business based on FY2022 data?", ["3m-2022"], ["3M", "2022"]),
        ("What is General Mills' leverage?", ["mills-2020"], ["General Mills"]),
    ],
)  # fmt: skip
def test_a_question_naming_an_issuer_finds_its_documents(
    question: str, doc_ids: list[str], words: list[str]
) -> None:
    named = infer_documents(question, CARDS)
    assert named is not None
    assert (named.doc_ids, named.words) == (doc_ids, words)


@pytest.mark.parametrize(
    "question",
    [
        "What are general and administrative expenses?",  # a common word, not General Mills
        "What did General Electric earn?",  # another issuer that starts alike
        "Which segment grew fastest?",  # names nothing
        "What was the revenue of $2,021 million about?",  # an amount, not a year
    ],
)
def test_a_question_naming_no_issuer_period_or_kind_infers_nothing(question: str) -> None:
    assert infer_documents(question, CARDS) is None


def test_a_period_or_a_kind_alone_narrows_to_the_documents_that_cover_it() -> None:
    named = infer_documents("Which company had the highest revenue in FY2018?", CARDS)
    assert named is not None and named.doc_ids == ["3m-2018"]
    assert named.reason == "period 2018"
    quarterly = infer_documents("What do the quarterly reports say about margins?", CARDS)
    assert quarterly is not None and quarterly.doc_ids == ["bestbuy-2024-q2"]


def test_a_collection_of_one_document_or_all_alike_infers_nothing() -> None:
    assert infer_documents("Does AMCOR have an improving gross margin?", CARDS[:1]) is None
    verizon = [c for c in CARDS if c.doc_id.startswith("verizon")]
    assert infer_documents("What is Verizon's revenue?", verizon) is None  # both, no year
    assert infer_documents("What was Verizon's revenue in FY2022?", verizon) is not None


def test_documents_without_a_profile_are_never_named() -> None:
    bare = [DocumentCard(doc_id="a"), DocumentCard(doc_id="b")]
    assert infer_documents("What did Acme report in 2022?", bare) is None


# One company's filings side by side (fiscal years ending in January), and two companies whose
# names contain one another.
LOOK_ALIKES = [
    DocumentCard(doc_id="harbour-10k-fy2023", organization="Harbour Outfitters, Inc.", kind="annual report", year=2023, fiscal_year=2023),
    DocumentCard(doc_id="harbour-10q-q1-fy2024", organization="Harbour Outfitters, Inc.", kind="quarterly report", year=2023, quarter=1, fiscal_year=2024),
    DocumentCard(doc_id="harbour-10q-q2-fy2024", organization="Harbour Outfitters, Inc.", kind="quarterly report", year=2023, quarter=2, fiscal_year=2024),
    DocumentCard(doc_id="harbour-release-q2-fy2024", organization="Harbour Outfitters, Inc.", kind="press release", year=2023, quarter=2, fiscal_year=2024),
    DocumentCard(doc_id="corning-10k", organization="Corning Incorporated", kind="annual report", year=2022),
    DocumentCard(doc_id="corning-gas-10k", organization="Corning Natural Gas Holding Corporation", kind="annual report", year=2022),
    DocumentCard(doc_id="micro-10k", organization="Advanced Micro Devices, Inc.", kind="annual report", year=2022, aliases=("AMD",)),
    DocumentCard(doc_id="disney-10k", organization="The Walt Disney Company", kind="annual report", year=2022, aliases=("Disney",)),
    DocumentCard(doc_id="jj-10k", organization="Johnson & Johnson", kind="annual report", year=2022),
    DocumentCard(doc_id="walmart-10k", organization="Wal-Mart Stores, Inc.", kind="annual report", year=2018),
    DocumentCard(doc_id="coke-10k", organization="The Coca-Cola Company", kind="annual report", year=2022),
]  # fmt: skip


@pytest.mark.parametrize(
    ("question", "doc_ids"),
    [
        ("What were Harbour Outfitters' sales in Q2 FY2024?", ["harbour-10q-q2-fy2024", "harbour-release-q2-fy2024"]),
        ("What did Harbour Outfitters report for Q2'24?", ["harbour-10q-q2-fy2024", "harbour-release-q2-fy2024"]),
        ("Harbour Outfitters 2Q24 gross margin?", ["harbour-10q-q2-fy2024", "harbour-release-q2-fy2024"]),
        ("Harbour Outfitters FY2024Q1 inventory?", ["harbour-10q-q1-fy2024"]),
        ("How did Harbour Outfitters do in the first quarter of fiscal 2024?", ["harbour-10q-q1-fy2024"]),
        ("What does the Harbour Outfitters 10-Q for Q2 FY2024 say about debt?", ["harbour-10q-q2-fy2024"]),
        ("What did the Harbour Outfitters earnings release for Q2 FY2024 highlight?", ["harbour-release-q2-fy2024"]),
        ("What was Harbour Outfitters' revenue in its FY2023 annual report?", ["harbour-10k-fy2023"]),
        ("What was Harbour Outfitters' revenue in FY2023?", ["harbour-10k-fy2023"]),
    ],
)  # fmt: skip
def test_the_filing_of_the_form_and_period_asked_wins_among_one_companys(
    question: str, doc_ids: list[str]
) -> None:
    named = infer_documents(question, LOOK_ALIKES)
    assert named is not None and named.doc_ids == doc_ids, named


@pytest.mark.parametrize(
    ("question", "doc_ids"),
    [
        ("What did Corning Natural Gas earn in 2022?", ["corning-gas-10k"]),
        ("What did Corning earn in 2022?", ["corning-10k"]),
        ("What is AMD's gross margin?", ["micro-10k"]),
        ("How did Disney's parks do?", ["disney-10k"]),
        ("What is J&J's pharmaceutical revenue?", ["jj-10k"]),
        ("What is JnJ's pharmaceutical revenue?", ["jj-10k"]),
        ("Did Walmart grow sales?", ["walmart-10k"]),
        ("How much debt does Coca Cola carry?", ["coke-10k"]),
    ],
)
def test_an_issuer_named_by_another_form_of_its_name_or_inside_anothers(
    question: str, doc_ids: list[str]
) -> None:
    named = infer_documents(question, LOOK_ALIKES)
    assert named is not None and named.doc_ids == doc_ids, named


def _filing(doc_id: str, form: str, period_line: str, text: str) -> DocumentCard:
    """A generated filing of Harbour Outfitters, profiled, as the index's card of it."""
    cover = [
        ("paragraph", f"FORM {form}"),
        ("paragraph", period_line),
        ("paragraph", "Commission file number 1-9595"),
        ("paragraph", "Harbour Outfitters, Inc."),
        ("paragraph", "(Exact name of registrant as specified in its charter)"),
        ("paragraph", "Trading Symbol(s)"),
        ("paragraph", "HBO"),
    ]
    doc = doc_from_pages([cover, [("paragraph", text)]], doc_id=doc_id)
    profile = profile_document(doc)
    return DocumentCard.from_metadata(doc.doc_id, profile.index_metadata())


def test_a_generated_companys_filings_are_told_apart_by_form_and_period() -> None:
    annual = _filing(
        "10-k",
        "10-K",
        "For the fiscal year ended January 28, 2023",
        "Fiscal 2023 sales at Harbour grew. " * 3,
    )
    first = _filing(
        "10-q-q1",
        "10-Q",
        "For the quarterly period ended April 29, 2023",
        "Sales in the first quarter of fiscal 2024 rose against the first quarter of fiscal 2023.",
    )
    second = _filing(
        "10-q-q2",
        "10-Q",
        "For the quarterly period ended July 29, 2023",
        "Sales in the second quarter of fiscal 2024 fell against the second quarter "
        "of fiscal 2023.",
    )
    release = _filing(
        "8-k-q2",
        "8-K",
        "Date of Report: August 29, 2023",
        "Harbour Outfitters reports Q2 FY24 results: comparable sales fell in the "
        "second quarter of fiscal 2024.",
    )
    cards = [annual, first, second, release]
    assert [(c.kind, c.quarter, c.fiscal_year) for c in cards] == [
        ("annual report", None, 2023),
        ("quarterly report", 1, 2024),
        ("quarterly report", 2, 2024),
        ("current report", 2, 2024),
    ]

    def named(question: str) -> list[str]:
        found = infer_documents(question, cards)
        return found.doc_ids if found else []

    assert named("What did HBO report for FY2023?") == [annual.doc_id]
    assert named("Harbour Outfitters sales in Q1 FY2024?") == [first.doc_id]
    assert named("What does Harbour Outfitters' 10-Q for 2Q24 say?") == [second.doc_id]
    assert named("Harbour Outfitters' Q2'24 8-K: comparable sales?") == [release.doc_id]
