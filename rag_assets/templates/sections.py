"""The titles a chunk's sections go by, in the document's own words, for every collection.

A question often names the part of a document it asks about by that part's title, in
other words' order or number (`the cash flow statement` for `Consolidated Statements of
Cash Flows`, `the host control register` for `5.2 Host Control Register`). Every chunk
records the titles of the sections it is in (its headings, outermost first) and, when it
holds a table whose first row opens with a title (a parser that reads a table's title into
its first row leaves no heading for it), that title too (`titles`); a document's first chunk
lists every title its chunks record (`doc_sections`), so the search learns each collection's
titles from its own documents (`retrieval/titles.py`) with no vocabulary written for it, and,
when the document's collection chose whether a question's titles are searched in it (the
`section_titles` template option), that choice (`doc_section_titles`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.text.markdown import row_cells

TITLES_KEY = "titles"
DOCUMENT_SECTIONS_KEY = "doc_sections"
TITLES_SEARCHED_KEY = "doc_section_titles"
# A title longer than this is a sentence that happens to head something, not a name.
MAX_TITLE_CHARS = 160
# The titles listed on a document's first chunk, in reading order, up to this much of JSON
# (non-ASCII escaped, as the index may store it): enough for a long filing's headings and
# table titles, small beside the index's 64 KiB JSON field.
MAX_DOCUMENT_SECTIONS_JSON = 16_000
_LETTERS = re.compile(r"[^\W\d_]{2,}")
_FIGURE = re.compile(r"\d")
_MARKUP = re.compile(r"[*_`#]+")


def section_titles(headings: Sequence[str], text: str) -> dict[str, list[str]]:
    """The titles of the chunk's sections and of its table, under `TITLES_KEY` (none: {})."""
    titles = [t for heading in headings if (t := _title(heading))]
    if table := _table_title(text):
        titles.append(table)
    return {TITLES_KEY: list(dict.fromkeys(titles))} if titles else {}


def with_document_sections(
    rows: list[ChunkRow], titles_searched: bool | None = None
) -> list[ChunkRow]:
    """The first row also lists every title the document's rows record, each once, and
    whether its collection chose to have them searched (None: the search's setting)."""
    if not rows:
        return rows
    titles: list[str] = []
    size = 0
    for title in dict.fromkeys(t for row in rows for t in row.metadata.get(TITLES_KEY, ())):
        size += len(json.dumps(title)) + 2  # with the list's comma and space
        if size > MAX_DOCUMENT_SECTIONS_JSON:
            break
        titles.append(title)
    if not titles:
        return rows
    chosen = {} if titles_searched is None else {TITLES_SEARCHED_KEY: titles_searched}
    first = rows[0].model_copy(
        update={"metadata": {**rows[0].metadata, DOCUMENT_SECTIONS_KEY: titles, **chosen}}
    )
    return [first, *rows[1:]]


def _title(text: str) -> str | None:
    # No control character: a title is quoted into the search's filter, which refuses them.
    printable = "".join(c if c.isprintable() else " " for c in _MARKUP.sub(" ", text))
    title = " ".join(printable.split())
    if not title or len(title) > MAX_TITLE_CHARS or not _LETTERS.search(title):
        return None
    return title


def _table_title(text: str) -> str | None:
    """The first filled cell of the text's first table row, when it is words with no figure
    (`CONSOLIDATED BALANCE SHEETS`, not `2023` nor `$ 1,204`)."""
    row = next((line for line in text.splitlines() if line.lstrip().startswith("|")), "")
    cell = next((c.strip() for c in row_cells(row) if c.strip()), "")
    if _FIGURE.search(cell):
        return None
    return _title(cell)
