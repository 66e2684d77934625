"""Page furniture on hand-built IR: page labels, dates and repeated lines retyped, never deleted."""

from __future__ import annotations

import pytest

from rag_assets.contracts.ir import (
    DocumentElement,
)
from rag_assets.normalize.repairs.furniture import retype_furniture
from rag_assets_tests.support.builders import (
    heading,
    para,
)

# --- page furniture -------------------------------------------------------------------------


def paged_report() -> list[DocumentElement]:
    """Three pages: label `E-N` and a date at the top, `- N -` and a repeated line at the bottom."""
    elements = []
    for page, word in zip((1, 2, 3), ("one", "two", "three"), strict=True):
        elements += [
            para(f"E-{page}", page, (500.0, 20.0, 530.0, 30.0)),
            para("2026-05-15", page, (72.0, 34.0, 140.0, 44.0)),
            para(f"Body of page {word}.", page),
            para("ACME Confidential", page, (72.0, 800.0, 200.0, 810.0)),
            para(f"- {page} -", page, (280.0, 815.0, 310.0, 825.0)),
        ]
    # A signed letter's date: the page's last body line, but far from the footer.
    elements.insert(8, para("2026-05-16", 2, (72.0, 720.0, 140.0, 730.0)))
    return elements


def test_page_labels_dates_and_repeated_lines_become_furniture() -> None:
    out, retyped = retype_furniture(paged_report())
    kinds = [(e.type, e.text) for e in out if e.page_start == 2]
    assert kinds == [
        ("page_header", "E-2"),
        ("page_header", "2026-05-15"),
        ("paragraph", "Body of page two."),
        ("paragraph", "2026-05-16"),
        ("page_footer", "ACME Confidential"),
        ("page_footer", "- 2 -"),
    ]
    assert retyped == 12
    assert len(out) == len(paged_report())  # retyped, never deleted


@pytest.mark.parametrize("label", ["Page 3 of 10", "3", "- 3 -", "iii", "E-2", "第 3 页"])
def test_page_label_forms(label: str) -> None:
    elements = [para("Body.", 1), para(label, 1, (280.0, 815.0, 310.0, 825.0))]
    assert [e.type for e in retype_furniture(elements)[0]] == ["paragraph", "page_footer"]


def test_what_is_not_furniture() -> None:
    lone_date = [para("2026-05-15", 1, (72.0, 20.0, 140.0, 30.0)), para("Body.", 1)]
    chapter_number = [heading("1", bbox=(500.0, 20.0, 530.0, 60.0)), para("Body.", 1)]
    mid_page_number = [
        para("Top.", 1, (72.0, 20.0, 520.0, 30.0)),
        para("3", 1),
        para("Bottom.", 1, (72.0, 800.0, 520.0, 810.0)),
    ]
    no_layout = [para("E-2", 1, None), para("Body.", 1, None)]
    # A chapter number (or a section badge) just above the body, below the page margin.
    below_margin = [
        para("1", 1, (500.0, 93.0, 522.0, 130.0)),
        para("Body.", 1, (72.0, 150.0, 520.0, 700.0)),
        DocumentElement(type="page_footer", text="Guide", bbox=(72.0, 790.0, 200.0, 800.0)),
    ]
    # Section badges that happen to repeat: "2" atop page 2's section, "4" atop page 4's.
    badges = [
        el
        for page in (2, 4)
        for el in (
            para(str(page), page, (73.0, 94.0, 81.0, 108.0)),
            heading(f"Section {page}", 1, page, (99.0, 95.0, 235.0, 108.0)),
            para(f"Body {'x' * page}.", page, (72.0, 150.0, 520.0, 825.0)),
        )
    ]
    for elements in (lone_date, chapter_number, mid_page_number, no_layout, below_margin, badges):
        assert retype_furniture(elements) == (elements, 0)


def test_repeated_running_heading_is_retyped_without_its_marks() -> None:
    elements = []
    for page, body in ((1, "First body."), (2, "Second body.")):
        elements += [heading("Widget Spec", 3, page, (72.0, 20.0, 200.0, 30.0)), para(body, page)]
    out, retyped = retype_furniture(elements)
    assert [(e.type, e.text, e.level) for e in out[::2]] == [
        ("page_header", "Widget Spec", None)
    ] * 2
    assert retyped == 2
