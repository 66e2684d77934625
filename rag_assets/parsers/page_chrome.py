"""A web page's chrome is not its document: menus, banners and hidden parts go before parsing.

A page saved from a site carries its navigation with it. Docling's and Unstructured's HTML
readers keep every element, so a saved Wikipedia article indexes its language picker (136 bare
links), its table of contents and its footer as chunks of their own, which then answer questions
about nothing. What HTML itself says is not content is dropped, the way reading-mode extractors
do it:

- landmarks: `<nav>`, ARIA `navigation` / `search` / `menu` / `menubar` / `banner` /
  `contentinfo`, and `<header>` / `<footer>` outside any `<main>`, `<article>`, `<section>` or
  `<aside>` (inside one they head that part and stay);
- what is never shown: the `hidden` attribute, `aria-hidden="true"`, inline `display: none` or
  `visibility: hidden`;
- outside the page's single `<main>` (or `role="main"`), everything;
- lists that are only links: to places on this page (a hand-made table of contents: the headings
  themselves are indexed), or at least `LINK_LIST_MIN_ITEMS` items long (menus, language pickers).
  A short "See also" list stays;
- citation markers: a superscript that is only a bracketed link to a note on the page (`[5]`,
  `[a]`, `[note 2]`), which would otherwise sit in the text as ` [ 5 ]`. The notes themselves stay.

A page with none of these comes back byte for byte as it was read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bs4 import BeautifulSoup, Tag

from rag_assets.parsers.quotes import unquote_headings

LINK_LIST_MIN_ITEMS = 10
# Share of a list's text that must be link text for it to count as a list of links.
_LINK_SHARE = 0.9
_CHROME_ROLES = frozenset({"navigation", "search", "menu", "menubar", "banner", "contentinfo"})
_SECTIONING = ("main", "article", "section", "aside")
_INVISIBLE_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


@dataclass
class ChromeDropped:
    landmarks: int = 0
    hidden: int = 0
    link_lists: int = 0
    links: int = 0
    outside_main: bool = False
    citation_markers: int = 0

    def note(self) -> str | None:
        parts = []
        if self.outside_main:
            parts.append("everything outside <main>")
        if self.landmarks:
            parts.append(f"{self.landmarks} navigation, banner or footer blocks")
        if self.hidden:
            parts.append(f"{self.hidden} hidden elements")
        if self.link_lists:
            parts.append(f"{self.link_lists} lists of links ({self.links} links)")
        if self.citation_markers:
            parts.append(f"{self.citation_markers} citation markers")
        return f"page chrome dropped before parsing: {', '.join(parts)}" if parts else None


def prepare_html(html: bytes) -> tuple[bytes, list[str]]:
    """The page without its chrome, headings in quotes made quoted text (quotes.py), and notes
    saying what was dropped; the bytes as given when neither applies."""
    soup = BeautifulSoup(html, "html.parser")
    dropped = strip_page_chrome(soup)
    unquoted = unquote_headings(soup)
    note = dropped.note()
    if note is None and not unquoted:
        return html, []
    # ASCII with character references: no reader can guess this page's encoding wrong.
    return soup.encode("ascii", formatter="html"), [note] if note else []


def strip_page_chrome(soup: BeautifulSoup) -> ChromeDropped:
    """Drop the page's chrome from `soup` in place; what was dropped, counted."""
    dropped = ChromeDropped()
    for element in _find_all(soup, _is_hidden):
        element.decompose()
        dropped.hidden += 1
    dropped.outside_main = _keep_only_main(soup)
    for element in _find_all(soup, _is_landmark):
        element.decompose()
        dropped.landmarks += 1
    for element in _find_all(soup, _is_link_list):
        dropped.links += len(element.find_all("a"))
        element.decompose()
        dropped.link_lists += 1
    for element in _find_all(soup, _is_citation_marker):
        element.decompose()
        dropped.citation_markers += 1
    return dropped


def _find_all(soup: BeautifulSoup, wanted) -> list[Tag]:
    """Outermost matches only: a match inside another is dropped with it."""
    found: list[Tag] = []
    seen: set[int] = set()  # by identity: Tags compare equal by content
    for element in soup.find_all(wanted):
        if not any(id(parent) in seen for parent in element.parents):
            found.append(element)
            seen.add(id(element))
    return found


def _is_hidden(element: Tag) -> bool:
    return (
        element.has_attr("hidden")
        or element.get("aria-hidden", "").strip().lower() == "true"
        or bool(_INVISIBLE_STYLE.search(element.get("style", "")))
    )


def _is_landmark(element: Tag) -> bool:
    if element.name == "nav" or element.get("role", "").strip().lower() in _CHROME_ROLES:
        return True
    return element.name in ("header", "footer") and element.find_parent(_SECTIONING) is None


def _keep_only_main(soup: BeautifulSoup) -> bool:
    """The body reduced to the page's one main part; False when there is not exactly one."""
    mains = soup.find_all(lambda e: e.name == "main" or e.get("role", "").lower() == "main")
    body = soup.body
    if len(mains) != 1 or body is None or not mains[0].get_text(strip=True):
        return False
    main = mains[0].extract()
    if not body.get_text(strip=True):
        body.append(main)
        return False
    body.clear()
    body.append(main)
    return True


def _is_link_list(element: Tag) -> bool:
    if element.name not in ("ul", "ol"):
        return False
    items = element.find_all("li", recursive=False)
    links = element.find_all("a")
    if len(items) < 3 or not links:
        return False
    text = _letters(element.get_text())
    if not text or len(_letters("".join(a.get_text() for a in links))) < _LINK_SHARE * len(text):
        return False
    in_page = all(a.get("href", "").startswith("#") for a in links)
    return in_page or len(items) >= LINK_LIST_MIN_ITEMS


_CITATION = re.compile(r"^\[\s*(?:\d{1,4}|[a-z]{1,2}|(?i:note|nb|n)\s*\d{1,3})\s*\]$")


def _is_citation_marker(element: Tag) -> bool:
    if element.name != "sup":
        return False
    links = element.find_all("a")
    text = " ".join(element.get_text().split())
    return (
        len(links) == 1 and links[0].get("href", "").startswith("#") and bool(_CITATION.match(text))
    )


def _letters(text: str) -> str:
    return "".join(char for char in text if char.isalnum())
