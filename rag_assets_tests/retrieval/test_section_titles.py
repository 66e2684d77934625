"""The sections a question names by their titles, learned from the collection's own titles:
a title's words in any order or number, a word that heads most titles needed by none, a rare
word missing names nothing."""

from __future__ import annotations

from rag_assets.retrieval.titles import MAX_TITLES, SectionTitles, title_words

# A filing's titles: `consolidated` heads most, so it tells little.
FILING_TITLES = [
    "Consolidated Statements of Cash Flows",
    "Consolidated Balance Sheets",
    "Consolidated Statements of Income",
    "Consolidated Statements of Comprehensive Income",
    "Consolidated Statements of Changes in Equity",
    "Notes to Consolidated Financial Statements",
    "Off-Balance Sheet Arrangements",
    "Risk Factors",
    "Liquidity and Capital Resources",
]


def test_words_are_compared_as_singulars_without_function_words() -> None:
    assert title_words("Statements of Cash Flows") == {"statement", "cash", "flow"}
    assert title_words("Liabilities and the Business") == {"liability", "business"}
    assert title_words("Bus Access Status") == {"bus", "access", "status"}


def test_a_sections_number_is_not_a_word_it_is_named_by() -> None:
    assert title_words("2.1 Host Control Register") == {"host", "control", "register"}
    assert title_words("Item 7. Bits 15:8") == {"item", "bit"}
    titles = SectionTitles(["2.1 Host Control Register", "2.2 Power Control Register"])
    assert titles.named("How is the host control register read?") == ["2.1 Host Control Register"]


def test_a_title_is_named_by_its_telling_words_in_any_order_or_number() -> None:
    titles = SectionTitles(FILING_TITLES)
    assert titles.named("What was capex in the cash flow statement?") == [
        "Consolidated Statements of Cash Flows"
    ]
    assert "Consolidated Balance Sheets" in titles.named(
        "the largest liability on the balance sheet"
    )


def test_a_rare_word_missing_names_nothing() -> None:
    titles = SectionTitles(FILING_TITLES)
    # `off` is as rare as `balance` and `sheet`: the arrangements are not the balance sheet.
    assert "Off-Balance Sheet Arrangements" not in titles.named("the balance sheet total")
    # `comprehensive` tells the two income statements apart.
    assert titles.named("the statement of income") == ["Consolidated Statements of Income"]


def test_a_titles_words_scattered_over_the_question_name_nothing() -> None:
    titles = SectionTitles(FILING_TITLES + ["Right of Access by the Data Subject"])
    assert titles.named("the access rights the data subject has") == [
        "Right of Access by the Data Subject"
    ]
    scattered = "Must the data subject be told when nobody without access can read the data?"
    assert titles.named(scattered) == []


def test_one_shared_word_names_nothing() -> None:
    titles = SectionTitles(["Risk Factors", "Host Control Register", "Power Management"])
    assert titles.named("What are the risks?") == []
    assert titles.named("Which bits of the control register reset the host?") == [
        "Host Control Register"
    ]


def test_the_most_telling_titles_first_and_at_most_a_few() -> None:
    many = [f"Register {n} Control" for n in range(20)] + ["Interrupt Status Register"]
    titles = SectionTitles(many)
    named = titles.named("Which interrupt status register control bits are set?")
    assert named[0] == "Interrupt Status Register"
    assert len(named) == MAX_TITLES


def test_titles_without_words_are_left_out() -> None:
    titles = SectionTitles(["", "---", "Overview", "Overview"])
    assert len(titles) == 1
