"""A saved web page's chrome (menus, banners, hidden parts, link lists) never reaches the IR."""

from __future__ import annotations

from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from rag_assets.parsers.page_chrome import LINK_LIST_MIN_ITEMS, prepare_html, strip_page_chrome
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file

LANGUAGES = [f"Language {n}" for n in range(LINK_LIST_MIN_ITEMS + 2)]

PAGE = f"""<!DOCTYPE html>
<html><head><title>Pond birds</title></head>
<body>
<header class="site-header"><a href="/">Birdwiki home</a> <form role="search">Search birdwiki</form></header>
<nav><ul><li><a href="/random">Random article</a></li><li><a href="/help">Help desk</a></li></ul></nav>
<div class="sidebar">Donate to birdwiki today</div>
<main>
  <header><h1>Pond birds</h1><p>From birdwiki, the free bird encyclopedia</p></header>
  <ul class="languages">{"".join(f'<li><a href="/{n}">{n}</a></li>' for n in LANGUAGES)}</ul>
  <ol><li><a href="#diet">1 Diet</a></li><li><a href="#nesting">2 Nesting</a></li>
      <li><a href="#see-also">3 See also</a></li></ol>
  <div style="display: none">Mobile menu toggle</div>
  <span aria-hidden="true">Jump back to the top</span>
  <p hidden>Print this page</p>
  <article>
    <h2 id="diet">Diet</h2>
    <p>Mallards dabble for pondweed<sup class="reference"><a href="#cite-1">[1]</a></sup> and eat
       snails<sup><a href="#note-a">[ a ]</a></sup> in shallow water; a pond of 10<sup>3</sup> m².</p>
    <table><tr><th>Bird</th><th>Food</th></tr><tr><td>Mallard</td><td>pondweed</td></tr></table>
    <h2 id="nesting">Nesting</h2>
    <p>Coots build floating nests of reeds anchored to the bank.</p>
    <aside><p>Aside: coot chicks have red heads.</p></aside>
    <h2 id="see-also">See also</h2>
    <ul><li><a href="/mallard">Mallard</a></li><li><a href="/coot">Coot</a></li>
        <li><a href="/grebe">Grebe</a></li></ul>
  </article>
</main>
<footer>Copyright birdwiki foundation. Privacy policy.</footer>
</body></html>
"""
CHROME = [
    "[1]",
    "[ a ]",
    "Birdwiki home",
    "Search birdwiki",
    "Random article",
    "Donate to birdwiki",
    "Language 3",
    "1 Diet",
    "Mobile menu toggle",
    "Jump back to the top",
    "Print this page",
    "Copyright birdwiki",
]
CONTENT = [
    "Pond birds",
    "a pond of 10",
    "free bird encyclopedia",
    "Mallards dabble for pondweed",
    "pondweed",
    "Coots build floating nests",
    "coot chicks have red heads",
    "Grebe",
]


def _text(html: bytes) -> str:
    return " ".join(BeautifulSoup(html, "html.parser").get_text(" ").split())


def test_chrome_dropped_and_content_kept() -> None:
    cleaned, notes = prepare_html(PAGE.encode())
    assert b"10<sup>3</sup>" in cleaned  # a superscript that is no citation stays
    text = _text(cleaned)
    assert [c for c in CHROME if c in text] == []
    assert [c for c in CONTENT if c not in text] == []
    assert notes == [
        "page chrome dropped before parsing: everything outside <main>, 3 hidden elements, "
        f"2 lists of links ({len(LANGUAGES) + 3} links), 2 citation markers"
    ]


def test_a_page_without_chrome_is_returned_as_read() -> None:
    page = b"<html><body><h1>Notes</h1><ul><li><a href='/a'>A</a></li></ul><p>x</p></body></html>"
    assert prepare_html(page) == (page, [])


@pytest.mark.parametrize(
    ("html", "kept"),
    [
        # Two main elements: which one is the page's is not said, so neither rule applies.
        ("<body><p>Intro</p><main><p>One</p></main><main><p>Two</p></main></body>", "Intro"),
        # A main with nothing in it does not empty the page.
        ("<body><p>Body text</p><main></main></body>", "Body text"),
        # A footer inside an article is the article's.
        ("<body><article><p>a</p><footer>Reviewed in May</footer></article></body>", "Reviewed"),
        # A header inside a section heads that section.
        ("<body><section><header><h2>Part A</h2></header><p>a</p></section></body>", "Part A"),
        # A list with text of its own beside its links is content.
        (
            "<body><ul>"
            + "".join(
                f"<li><a href='/r{n}'>Rule {n}</a> applies to every pond</li>" for n in range(12)
            )
            + "</ul></body>",
            "Rule 11",
        ),
        # Bare links, but fewer than a menu's: a short "See also" stays.
        (
            "<body><ul><li><a href='/a'>Alpha</a></li><li><a href='/b'>Beta</a></li>"
            "<li><a href='/c'>Gamma</a></li></ul></body>",
            "Gamma",
        ),
    ],
)
def test_what_is_not_chrome_stays(html: str, kept: str) -> None:
    soup = BeautifulSoup(html, "html.parser")
    strip_page_chrome(soup)
    assert kept in soup.get_text()


def test_landmarks_go_when_there_is_no_main() -> None:
    soup = BeautifulSoup(
        "<body><header>Site banner</header><nav>Menu</nav><div role='search'>Find</div>"
        "<h1>Title</h1><p>Text</p><div role='contentinfo'>Legal</div><footer>Bottom</footer>"
        "</body>",
        "html.parser",
    )
    dropped = strip_page_chrome(soup)
    assert " ".join(soup.get_text(" ").split()) == "Title Text"
    assert dropped.note() == (
        "page chrome dropped before parsing: 5 navigation, banner or footer blocks"
    )


@pytest.mark.parametrize("parser", ["docling", "unstructured"])
def test_parsers_never_see_the_chrome(parser: str, tmp_path: Path) -> None:
    path = tmp_path / "pond-birds.html"
    path.write_text(PAGE, encoding="utf-8")
    result = parse_file(path, ParserRouter(parser))
    text = " ".join(result.document.markdown.split())
    assert [c for c in CHROME if c in text] == []
    assert [c for c in CONTENT if c not in text] == []
    assert any(note.startswith("page chrome dropped") for note in result.parsed.notes)
