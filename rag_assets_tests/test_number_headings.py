"""Chapter numbers printed apart from their titles, and numbered sections whose parent heading
the parser missed: the heading tree every template sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_assets.contracts.ir import DocumentElement
from rag_assets.normalize.repairs.number_headings import join_number_headings
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file
from rag_assets.templates.base import HeadingStack, open_ancestors
from rag_assets.templates.registry import get_template
from rag_assets.templates.tokens import ApproxTokenCounter


def heading(text: str, level: int, page: int = 1) -> DocumentElement:
    return DocumentElement(
        type="heading", text=f"{'#' * level} {text}", level=level, page_start=page, page_end=page
    )


def para(text: str, page: int = 1) -> DocumentElement:
    return DocumentElement(type="paragraph", text=text, page_start=page, page_end=page)


@pytest.mark.parametrize("number", ["1", "3.", "CHAPTER 3", "Part II", "Appendix B", "第三章"])
def test_a_number_takes_the_title_under_it(number: str) -> None:
    elements = [heading(number, 1, 5), heading("Securing the data", 2, 5), para("Body.", 5)]
    out, joined = join_number_headings(elements)
    assert joined == 1
    assert [(e.type, e.level, e.text) for e in out] == [
        ("heading", 1, f"# {number} Securing the data"),
        ("paragraph", None, "Body."),
    ]


def test_a_label_restating_the_number_and_furniture_may_sit_between() -> None:
    footer = DocumentElement(type="page_footer", text="- 4 -", page_start=4, page_end=4)
    elements = [
        heading("1", 1, 5),
        para("**Chapter 1.**", 5),
        footer,
        heading("Securing the data", 2, 6),
        para("Body.", 6),
    ]
    out, joined = join_number_headings(elements)
    assert joined == 1
    assert [e.text for e in out] == ["# 1 Securing the data", "- 4 -", "Body."]
    assert (out[0].page_start, out[0].page_end) == (5, 6)
    assert out[0].metadata["number_labels"] == ["**Chapter 1.**"]


@pytest.mark.parametrize(
    "elements",
    [
        [heading("1", 1), para("Text right under the number."), heading("Scope", 2)],
        [heading("1", 1), heading("1.1 Scope", 2)],  # a numbered heading has its own number
        [heading("Introduction", 1), heading("1", 1)],  # a title before the number
        [heading("1", 1), para("**Chapter 1.**"), para("Text.")],  # the label stays text
    ],
)
def test_what_is_left_apart(elements: list[DocumentElement]) -> None:
    assert join_number_headings(elements) == (elements, 0)


def test_a_numbered_section_nests_only_under_its_prefixes() -> None:
    stack = HeadingStack()
    for level, title in [
        (1, "Row and Column Access Control"),  # the document title, unnumbered
        (1, "1 Securing the data"),
        (2, "1.2 Current state"),
        (3, "2.1.6 Change Function Usage"),  # chapter 2 and 2.1 were never seen
    ]:
        stack.push(level, title)
    assert stack.titles == ["2.1.6 Change Function Usage"]
    stack.push(1, "3 Implementing RCAC")
    stack.push(2, "3.3 VERIFY_GROUP_FOR_USER")
    stack.push(3, "3.6.6 Activating RCAC")
    assert stack.titles == ["3 Implementing RCAC", "3.6.6 Activating RCAC"]
    # Unnumbered ancestors, and a leading number that is a year, stay open.
    assert open_ancestors(["Guide", "2024 Annual report", "Results"], "1.1 Revenue") == 3
    assert open_ancestors(["1 Intro", "Background"], "1.1 Scope") == 2
    assert open_ancestors(["1 Intro", "1.2 State"], "Unnumbered") == 2


def test_redp_chapter_and_sections_of_other_chapters(shared_fixtures: Path) -> None:
    doc = parse_file(shared_fixtures / "pdf/redp5110_sampled.pdf", ParserRouter()).document
    assert "# 1 Securing and protecting IBM DB2 data" in [e.text for e in doc.headings()]
    for template in ("semantic", "spec"):
        chunks = get_template(template).chunk(doc, ApproxTokenCounter())
        paths = {c.headings[-1]: c.header_path for c in chunks if c.headings}
        assert paths["1.1 Security fundamentals"] == "/1 Securing and protecting IBM DB2 data/"
        # The sample skips chapters 2 and 3: their sections are filed under no chapter 1.
        assert paths["2.1.6 Change Function Usage CL command"] == "/"
        assert paths["3.6.6 Activating RCAC"] == "/"
