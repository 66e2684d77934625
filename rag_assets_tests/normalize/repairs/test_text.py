"""Broken words joined (hyphenated line ends, letter-spaced words) and spaces between CJK
characters removed, on hand-built IR."""

from __future__ import annotations

import pytest

from rag_assets.contracts.ir import (
    DocumentElement,
)
from rag_assets.normalize.repairs.text import (
    join_hyphenated,
    join_split_words,
    remove_cjk_spaces,
)
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets_tests.support.builders import (
    heading,
    para,
    table,
)


def test_hyphenated_line_breaks_joined_compounds_kept() -> None:
    elements = [
        para("The implemen-\ntation is a well-known design."),
        para("A well-\nknown trick; Foo-\nBar and x-\n1 stay; pre-\nprocessing runs."),
        DocumentElement(type="code", text="a = b-\nc"),
    ]
    out, joined = join_hyphenated(elements)
    assert [e.text for e in out] == [
        "The implementation is a well-known design.",
        "A well-known trick; Foo-\nBar and x-\n1 stay; preprocessing runs.",
        "a = b-\nc",
    ]
    assert joined == 3


@pytest.mark.parametrize(
    ("broken", "whole"),
    [
        ("Die Verarbei-\ntung", "Die Verarbeitung"),
        ("die Lö-\nschung", "die Löschung"),
        ("zu ver-\nändern", "zu verändern"),
        ("une réfé-\nrence", "une référence"),
        ("обра-\nботка", "обработка"),
        ("the rep\u00ad\nresentative", "the representative"),  # soft hyphen
        ("technolo \u00ad\ngically neutral", "technologically neutral"),  # letter-spaced
        ("inter\u00ad\nNational", "interNational"),  # a soft hyphen joins whatever follows
        ("Daten\u00ac\nschutz", "Datenschutz"),  # the not sign of some extractions and OCR
        ("imple\u2010\n  mentation", "implementation"),  # U+2010, the next line indented
        ("Verarbei\u00adtung im Satz", "Verarbeitung im Satz"),  # soft hyphen inside a line
    ],
)
def test_every_way_a_word_is_hyphenated_at_a_line_end(broken: str, whole: str) -> None:
    out, joined = join_hyphenated([para(broken)])
    assert (out[0].text, joined) == (whole, 1)


@pytest.mark.parametrize(
    "kept",
    [
        "die EU-\nDatenschutzverordnung",  # a capital after a hard hyphen: a compound
        "Ein- und\nAusgang",
        "the 2-\n3 range",
        "Zeile -\nweiter",  # a dash after a space
    ],
)
def test_hyphens_that_are_no_line_break_of_a_word(kept: str) -> None:
    assert join_hyphenated([para(kept)]) == ([para(kept)], 0)


def test_a_join_keeps_each_line_on_its_page() -> None:
    steps = DocumentElement(
        type="list",
        text="- Step one is the ini-\n  tialisation\n- Step two\n- Step three is the con-\n  figuration",
        page_start=1,
        page_end=2,
        metadata={"line_pages": [[0, 1], [3, 2]]},
    )
    (out,), joined = join_hyphenated([steps])
    assert joined == 2
    assert out.text.split("\n") == [
        "- Step one is the initialisation",
        "- Step two",
        "- Step three is the configuration",
    ]
    assert out.metadata["line_pages"] == [[0, 1], [2, 2]]
    assert out.pages_of(out.text.index("three"), len(out.text)) == (2, 2)


def test_split_words_joined_page_by_page_in_a_list_that_crosses_a_page_break() -> None:
    # The words are learnt from the same page slices the join then fixes: a list continued on
    # the next page once took the whole document down with a KeyError.
    steps = DocumentElement(
        type="list",
        text="- Set the inform ation field\n- Read it\n- Clear the inform ation field",
        page_start=1,
        page_end=2,
        metadata={"line_pages": [[0, 1], [2, 2]]},
    )
    out, joined = join_split_words([steps, para("The information is kept.")])
    assert out[0].text.split("\n") == [
        "- Set the information field",
        "- Read it",
        "- Clear the information field",
    ]
    assert joined == 2
    assert out[0].metadata["line_pages"] == [[0, 1], [2, 2]]


def test_words_split_by_spaces_joined_where_the_document_spells_them_whole() -> None:
    elements = [
        heading("Art icle 3"),
        heading("Territor ial scope", bbox=None),  # text without layout (a .txt of a PDF)
        para("The inform ation on its territorial scope. An other article, with in reach."),
        para("Information is kept; interm ediar y bodies act as intermediary bodies."),
        para("Another article within the territory; the rest of other articles stand."),
        para("An article in the law is one with a scope."),
        para("Visual Studio runs VisualStudio.exe, as VisualStudio.dll says."),
        para("A rare form ula is joined; a unique splitt ing is joined."),
        para("中 华 inform ation 人民", bbox=None),
        DocumentElement(type="code", text="inform ation = 1"),
        table([["Art icle", "Value"], ["x", "y"]], 1),
    ]
    out, joined = join_split_words(elements)
    assert [e.text for e in out[:9]] == [
        "## Article 3",
        "## Territorial scope",
        # Both `an` and `other`, `with` and `in` stand alone elsewhere: real words, kept apart.
        "The information on its territorial scope. An other article, with in reach.",
        "Information is kept; intermediary bodies act as intermediary bodies.",
        "Another article within the territory; the rest of other articles stand.",
        "An article in the law is one with a scope.",
        # A capital opens a word: two names, not a split of the identifier.
        "Visual Studio runs VisualStudio.exe, as VisualStudio.dll says.",
        # `splitt` is no English word, `splitting` is one; with five such clear splits the
        # document is letter-spaced, so `form ula` (both in the word list) is a split too.
        "A rare formula is joined; a unique splitting is joined.",
        "中 华 information 人民",
    ]
    assert out[9].text == "inform ation = 1"
    assert out[10].table.grid()[0] == ["Article", "Value"]
    assert out[10].text == table_to_markdown(out[10].table)
    assert joined == 8
    again, rejoined = join_split_words(out)
    assert again == out and rejoined == 0


def test_outside_letter_spaced_documents_a_run_of_english_words_stays_apart() -> None:
    elements = [
        para("A rare form ula stays split in a clean text, the rest is prose."),
        para("One splitt ing is joined: splitt is no English word."),
    ]
    out, joined = join_split_words(elements)
    assert [e.text for e in out] == [
        "A rare form ula stays split in a clean text, the rest is prose.",
        "One splitting is joined: splitt is no English word.",
    ]
    assert joined == 1


def test_a_letter_spaced_document_is_joined_even_where_it_never_spells_the_word_whole() -> None:
    # As a EUR-Lex PDF's text layer splits them, the same way every time.
    elements = [
        heading("Article 33 Notification to the super visor y author ity"),
        para("The controller shall notify the super visor y author ity whic h is competent."),
        para("It shall take appropr iate measures in the context of emplo yment and protect io n."),
        para("A super helmet is a part of it; an authority on pottery works with in reach."),
        para("He worked with clay in the studio; the other part was his."),
        # `sown` and `ef` are English words, yet a possessive and two variables.
        para("The card's own slot holds e f and g."),
        # `carryout` is a word too, but `out` stands alone: a phrase; `refer` and `red` never do.
        para("Controllers carry out checks, out of reach, as refer red to above."),
        para("There is the re\u2011use of data."),  # a non-breaking hyphen: `re‑use`
    ]
    out, joined = join_split_words(elements)
    assert [e.text for e in out] == [
        "## Article 33 Notification to the supervisory authority",
        "The controller shall notify the supervisory authority which is competent.",
        "It shall take appropriate measures in the context of employment and protection.",
        # Only English words, each standing alone elsewhere: two words, kept apart.
        "A super helmet is a part of it; an authority on pottery works with in reach.",
        "He worked with clay in the studio; the other part was his.",
        "The card's own slot holds e f and g.",
        "Controllers carry out checks, out of reach, as referred to above.",
        "There is the re\u2011use of data.",
    ]
    assert joined == 9


def test_spaces_between_cjk_characters_removed_latin_spacing_kept() -> None:
    cell_rows = [["公路 技术 等级", "车道数"], ["高速 公路", "八"]]
    elements = [
        para("中 华 人 民 共和国， 使用 Python 语言和 3 种 工具。"),
        para("第一条 为了完善制度，第 7.9 条 服务设施。"),
        para("김 창 호 코로나-19 관련"),
        para("中 华", bbox=None),  # no layout: the source wrote that space
        table(cell_rows, 1),
    ]
    out, removed = remove_cjk_spaces(elements)
    assert [e.text for e in out[:4]] == [
        "中华人民共和国，使用 Python 语言和 3 种工具。",
        "第一条 为了完善制度，第 7.9 条 服务设施。",
        "김 창 호 코로나-19 관련",
        "中 华",
    ]
    assert out[4].table.grid() == [["公路技术等级", "车道数"], ["高速公路", "八"]]
    assert out[4].text == table_to_markdown(out[4].table)
    assert removed == 9
