"""Running headers and footers glued into the lines of text without layout are cut."""

from __future__ import annotations

import pytest

from rag_assets.contracts.ir import DocumentElement
from rag_assets.normalize.repairs.running_text import strip_running_text

HEADER = "12.3.2021 L 55/{page} Official Gazette of the Union EN"


def para(text: str) -> DocumentElement:
    return DocumentElement(type="paragraph", text=text)


# The last line of each page's text, different on every page as prose is.
LAST_LINES = [
    "fees are paid within 30 days of the invoice",
    "audits under Article 4 take place once a year",
    "records are kept for 5 years after the transfer",
    "appeals go to the board named in Annex 2",
    "transfers to third countries need a licence from 2022",
    "penalties of up to 4 % of turnover may be imposed",
    "reports under Article 9 are published in 3 languages",
    "notices are sent by registered mail to 2 addresses",
]


def statute(place: str) -> list[DocumentElement]:
    """Eight pages of recitals, articles and steps; each page's header where `place` puts it."""
    elements = []
    for page, last in enumerate(LAST_LINES, 1):
        header = HEADER.format(page=page)
        line = {
            "tail": f"{last} {header}",
            "head": f"{header} {last}",
            "line": f"{last}\n{header}",
        }[place]
        elements += [
            para(f"({page * 3}) In order to ensure a consistent level of protection, rules apply."),
            para(
                f"### Article {page}\nScope of the measures\n{line}\n- Step {page}: Click the OK button"
            ),
        ]
    return elements


@pytest.mark.parametrize("place", ["tail", "head", "line"])
def test_a_page_counter_with_words_of_its_own_is_cut(place: str) -> None:
    elements = statute(place)
    out, cut = strip_running_text(elements)
    assert cut == 8
    text = "\n".join(e.text for e in out)
    assert "Official Gazette" not in text
    # What repeats but counts no pages stays: recital openings, article headings, steps.
    for page, last in enumerate(LAST_LINES, 1):
        assert f"({page * 3}) In order to ensure a consistent level" in text
        assert f"### Article {page}\nScope of the measures\n{last}\n" in text
        assert f"- Step {page}: Click the OK button" in text


def test_too_few_pages_or_a_counter_that_goes_back_stay() -> None:
    few = [para(f"Some text here. {HEADER.format(page=page)}") for page in range(1, 5)]
    assert strip_running_text(few) == (few, 0)
    back = [para(f"Some text here. {HEADER.format(page=page)}") for page in (1, 2, 3, 2, 4, 5)]
    assert strip_running_text(back) == (back, 0)


def test_text_with_layout_is_left_to_the_furniture_repair() -> None:
    boxed = [
        para(f"Some text here. {HEADER.format(page=page)}").model_copy(
            update={"bbox": (72.0, 700.0, 520.0, 720.0), "page_start": page, "page_end": page}
        )
        for page in range(1, 9)
    ]
    assert strip_running_text(boxed) == (boxed, 0)
