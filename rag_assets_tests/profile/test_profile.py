"""Document profiles: what a document is, read from its cover, title, copyright line, file
metadata and, last, its file name; each field says where it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_assets.chunking import chunk_document
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.normalize import adapt
from rag_assets.normalize.adapt import with_profile
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file
from rag_assets.profile.model import DocumentProfile, ProfileField
from rag_assets.profile.rules import profile_document
from rag_assets.templates.select import choose_template
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import doc_from_pages


def _doc(
    pages: list[list[tuple[str, str]]], title: str | None = None, source_path: str = "doc.pdf"
) -> StandardizedDocument:
    """(type, text) elements per page."""
    return doc_from_pages(pages, title, source_path=source_path)


ANNUAL_COVER = [
    ("title", "# UNITED STATES SECURITIES AND EXCHANGE COMMISSION"),
    ("paragraph", "**Washington, D.C. 20549**"),
    ("heading", "## FORM 10-K"),
    ("paragraph", "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT"),
    ("paragraph", "For the fiscal year ended December 31, 2017"),
    ("paragraph", "Commission File Number: 001-35727"),
    ("heading", "## Harbour Freight Lines, Inc."),
    ("paragraph", "_(Exact name of Registrant as specified in its charter)_"),
    (
        "table",
        "| Title of each class | Trading Symbol(s) | Exchange |\n|---|---|---|\n"
        "| Common stock | HFL | NASDAQ |",
    ),
    ("paragraph", "Indicate by check mark if the registrant is a well-known seasoned issuer. NO"),
]


def test_a_filing_cover_gives_issuer_form_kind_period_and_symbols() -> None:
    profile = profile_document(_doc([ANNUAL_COVER, [("paragraph", "Item 1. Business")]]))
    assert profile.identity() == (
        "Harbour Freight Lines, Inc. · annual report (Form 10-K) · fiscal year 2017"
    )
    assert profile.organization is not None and profile.organization.source == "cover page"
    assert profile.year == 2017
    assert profile.aliases == ["HFL"]  # the check-box answers after the table are no symbols
    assert profile.title is None  # the regulator's masthead is not the filing's title


def test_a_filing_knows_the_names_it_defines_and_uses_for_its_issuer() -> None:
    cover = [
        ("heading", "## FORM 10-K"),
        ("paragraph", "For the fiscal year ended December 25, 2022"),
        ("heading", "## Northwind Silicon Devices, Inc."),
        ("paragraph", "(Exact name of registrant as specified in its charter)"),
    ]
    business = [
        ("paragraph", 'Northwind Silicon Devices, Inc. ("NSD," "we," "us" or the "Company") '
         "designs processors."),
        # Another term defined beside the name is no name of the company.
        ("paragraph", 'Northwind signed a credit agreement (the "2021 Credit Agreement").'),
        *[("paragraph", f"In {year}, revenue at NSD grew and the team at Silicon, as the "
           "plant is called, shipped more.") for year in range(2015, 2022)],
    ]  # fmt: skip
    profile = profile_document(_doc([cover, business]))
    assert profile.aliases == ["NSD", "Silicon"]  # defined first, then written as a name
    # A word the document also writes in lower case is a word, not a name.
    plain = profile_document(_doc([cover, [*business, ("paragraph", "silicon wafers " * 40)]]))
    assert plain.aliases == ["NSD"]


def test_a_short_form_written_as_a_name_mid_sentence_is_one_of_its_names() -> None:
    cover = [("paragraph", "© 2023 The Walt Harbour Company. All rights reserved.")]
    text = [("paragraph", "Guests at Harbour parks grew, and Harbour's studios released films.")]
    profile = profile_document(_doc([cover, text * 6], title="Fiscal 2023 Annual Report"))
    assert profile.organization is not None
    assert profile.aliases == ["Harbour"]
    assert "Walt" not in profile.aliases  # always followed by the rest of the name


def test_a_quarterly_report_and_a_release_know_the_fiscal_quarter_they_cover() -> None:
    cover = [
        ("paragraph", "FORM 10-Q"),
        ("paragraph", "For the quarterly period ended July 29, 2023"),
        ("paragraph", "Commission file number 1-9595"),
        ("paragraph", "Harbour Outfitters, Inc."),
        ("paragraph", "(Exact name of registrant as specified in its charter)"),
    ]
    discussion = [
        ("paragraph", "Revenue in the second quarter of fiscal 2024 fell against the second "
         "quarter of fiscal 2023. In the first quarter of fiscal 2024 it had risen."),
        ("paragraph", "Q2 FY24 comparable sales declined."),
    ]  # fmt: skip
    quarterly = profile_document(_doc([cover, discussion]))
    assert (quarterly.year, quarterly.quarter, quarterly.fiscal_year) == (2023, 2, 2024)
    assert quarterly.index_metadata()["doc_quarter"] == 2
    release = profile_document(
        _doc([[("title", "# Harbour Outfitters Reports Second Quarter Fiscal 2024 Results"),
               ("paragraph", "FOR IMMEDIATE RELEASE")]])
    )  # fmt: skip
    assert release.kind is not None and release.kind.value == "press release"
    assert (release.quarter, release.fiscal_year) == (2, 2024)
    annual = profile_document(_doc([ANNUAL_COVER, discussion]))
    assert (annual.quarter, annual.fiscal_year) == (None, 2017)  # a year's report, no quarter


def test_a_quarterly_cover_whose_lines_interleave_still_gives_its_quarter() -> None:
    cover = [
        ("paragraph", "FORM 10-Q"),
        ("paragraph", "Quarterly report pursuant to Section 13 or 15(d)"),
        ("paragraph", "For the quarterly period ended\nCommission file\nMarch 31, 2021"),
        ("paragraph", "number 1-5805"),
        ("paragraph", "Lakeside Bancorp & Co."),
        ("paragraph", "(Exact name of registrant as specified in its charter)"),
    ]
    profile = profile_document(_doc([cover]))
    assert profile.identity() == (
        "Lakeside Bancorp & Co. · quarterly report (Form 10-Q) · quarter ended March 31, 2021"
    )
    assert profile.year == 2021


def test_a_cover_without_the_registrant_caption_names_the_line_after_the_file_number() -> None:
    cover = [
        ("heading", "## FORM 10-K"),
        ("paragraph", "**For the fiscal year ended December 31, 2018**"),
        ("paragraph", "**Commission file number 1-3285**"),
        ("heading", "## 4Q COMPANY"),
        ("paragraph", "State of Incorporation: **Delaware**"),
    ]
    profile = profile_document(_doc([cover]))
    assert profile.organization is not None and profile.organization.value == "4Q COMPANY"


def test_a_filing_without_a_stated_period_takes_the_year_of_its_file_name() -> None:
    cover = [row for row in ANNUAL_COVER if "fiscal year" not in row[1]]
    profile = profile_document(_doc([cover], source_path="HARBOUR_2022_10K.pdf"))
    assert profile.period is not None
    assert (profile.period.value, profile.period.source, profile.year) == (
        "2022",
        "file name",
        2022,
    )


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("ASHC Driver Operator Guide", "manual"),
        ("Travel and Expenses Policy", "policy"),
        ("中华人民共和国劳动合同法", "law"),
        ("Frequently Asked Questions", "FAQ"),
        ("RFC 9110: HTTP Semantics", "standard"),
        ("Annual Report 2023", "annual report"),
        ("Notes on the harbour", None),
    ],
)
def test_a_title_names_the_kind(title: str, kind: str | None) -> None:
    profile = profile_document(_doc([[("paragraph", "Some words.")]], title=title))
    assert (profile.kind.value if profile.kind else None) == kind
    if kind:
        assert profile.kind is not None and profile.kind.source == "title"


def test_the_issuer_comes_from_a_copyright_line_before_the_file_author() -> None:
    first = [
        ("paragraph", "Operating the pump."),
        ("paragraph", "© 2021 Acme Pumps Ltd. All rights reserved."),
    ]
    profile = profile_document(_doc([first], title="Pump Manual"), {"author": "J. Writer"})
    assert profile.organization is not None
    assert (profile.organization.value, profile.organization.source) == (
        "Acme Pumps Ltd",
        "first pages",
    )
    profile = profile_document(_doc([first[:1]], title="Pump Manual"), {"author": "J. Writer"})
    assert profile.organization is not None
    assert (profile.organization.value, profile.organization.source) == (
        "J. Writer",
        "file metadata",
    )
    # Placeholders and generators name no one.
    for author in ("anonymous", "EDGAR Online, a division of Some Printer"):
        assert profile_document(_doc([first[:1]]), {"author": author}).organization is None


def test_without_a_title_the_file_metadata_then_the_file_name_gives_one() -> None:
    body = [[("paragraph", "Some words.")]]
    from_info = profile_document(_doc(body), {"title": "Harbour Tide Tables"})
    assert from_info.title is not None and from_info.title.source == "file metadata"
    for noise in ("0001065280-18-000069", "report.docx"):
        assert profile_document(_doc(body), {"title": noise}).title.source == "file name"  # type: ignore[union-attr]
    named = profile_document(_doc(body, source_path="tide_tables_2024.pdf"))
    assert named.title is not None and named.title.value == "tide tables 2024"
    # A title made of the file name adds nothing to what chunks say.
    assert named.identity() == ""


def test_a_document_that_says_nothing_gets_an_empty_profile_not_a_guess() -> None:
    profile = profile_document(_doc([[("paragraph", "The water rose and fell twice a day.")]]))
    assert (profile.organization, profile.kind, profile.form, profile.period) == (None,) * 4
    assert not profile.names_its_issuer()


def test_a_failing_profile_degrades_the_document_and_keeps_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: object) -> DocumentProfile:
        raise RuntimeError("cover unreadable")

    monkeypatch.setattr(adapt, "profile_document", broken)
    doc = with_profile(_doc([ANNUAL_COVER]))
    assert "profile" not in doc.metadata
    assert doc.metadata["degraded"] == ["profile skipped (RuntimeError: cover unreadable)"]


def _report_with_spec_markers() -> StandardizedDocument:
    pages = [ANNUAL_COVER]
    for number in range(1, 5):
        pages.append(
            [
                ("heading", f"## {number} Note {number}"),
                ("paragraph", "Revenue grew in every segment."),
                ("table", "| Item | 2017 |\n|---|---|\n| Revenue | 10 |"),
            ]
        )
    pages.append([("heading", "## Glossary"), ("paragraph", "Term: meaning.")])
    return _doc(pages)


def test_a_filing_is_chunked_as_a_report_whatever_markers_it_shows() -> None:
    bare = _report_with_spec_markers()
    assert choose_template(bare, "auto").template == "spec"
    profiled = with_profile(bare)
    choice = choose_template(profiled, "auto")
    assert choice.template == "semantic"
    assert choice.reason.startswith("auto: the profile says annual report (cover page)")
    assert "spec score 3 under 4 numbered headings" in choice.reason


def test_every_chunk_says_whose_document_it_is() -> None:
    doc = with_profile(_report_with_spec_markers())
    rows = chunk_document(doc, "auto", {}, ApproxTokenCounter()).rows
    identity = "Harbour Freight Lines, Inc. · annual report (Form 10-K) · fiscal year 2017"
    assert rows and all(r.context_text.startswith(identity) for r in rows)
    assert all(identity not in r.text for r in rows)  # what a person reads is unchanged
    assert (
        rows[-1].metadata.items()
        >= {
            "doc_organization": "Harbour Freight Lines, Inc.",
            "doc_kind": "annual report",
            "doc_form": "Form 10-K",
            "doc_year": 2017,
        }.items()
    )
    assert rows[-1].metadata["doc_aliases"] == ["HFL"]


def test_a_pdfs_info_dictionary_reaches_the_profile(tmp_path: Path) -> None:
    import pymupdf

    path = tmp_path / "a.pdf"
    with pymupdf.open() as pdf:
        pdf.new_page().insert_text((72, 100), "The water rose and fell twice a day.", fontsize=11)
        pdf.set_metadata({"title": "Harbour Tide Tables", "author": "Port Authority of Lyme"})
        pdf.save(path)
    parsed = parse_file(path, ParserRouter())
    assert parsed.parsed.native["document_info"] == {
        "title": "Harbour Tide Tables",
        "author": "Port Authority of Lyme",
    }
    profile = DocumentProfile.model_validate(parsed.document.metadata["profile"])
    assert profile.organization == ProfileField(
        value="Port Authority of Lyme", source="file metadata"
    )
    assert profile.title is not None and profile.title.value == "Harbour Tide Tables"


def test_the_ui_shows_the_profile_of_a_normalized_document(tmp_path: Path) -> None:
    import pymupdf

    from rag_assets_tests.support.builders import materialize_file

    path = tmp_path / "harbour-annual.pdf"
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        lines = [
            "FORM 10-K",
            "For the fiscal year ended December 31, 2017",
            "Harbour Freight Lines, Inc.",
            "(Exact name of registrant as specified in its charter)",
        ]
        for number, line in enumerate(lines):
            page.insert_text((72, 100 + 30 * number), line, fontsize=11)
        pdf.save(path)
    result, _ = materialize_file(path, tmp_path / "data")
    (materialization,) = result.asset_materializations_for_node("normalized_documents")
    metadata = materialization.metadata
    assert metadata["identity"].value == (
        "Harbour Freight Lines, Inc. · annual report (Form 10-K) · fiscal year 2017"
    )
    shown = metadata["profile"].value
    assert shown["organization"] == {"value": "Harbour Freight Lines, Inc.", "source": "cover page"}
    assert shown["year"] == 2017
