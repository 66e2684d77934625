"""Typography kept as written through Docling's HTML backend.

Docling's HTML backend (also used for every Markdown file that holds an HTML block) rewrites
dashes, curly quotes and the ellipsis to ASCII (`HTMLDocumentBackend._clean_unicode`). Before
conversion each such character, raw or as an HTML entity, is swapped for a private-use
character the backend leaves alone; after conversion the export gets the originals back.
"""

from __future__ import annotations

import html
import re
from typing import Any

# What Docling 2.143 rewrites that a reader sees: hyphens and dashes, curly quotes, the ellipsis.
# (Invisible characters and non-breaking spaces it turns into spaces or nothing are left to it.)
PROTECTED = "\u2010\u2011\u2012\u2013\u2014\u2015\u2018\u2019\u201c\u201d\u2026"
# Private-use planes to borrow characters from; the first one the document does not use wins.
_BASES = (0xE000, 0xF0000, 0x100000)
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def protect(text: str, *, as_html: bool) -> tuple[str, dict[str, str]]:
    """`text` with every protected character (and, in HTML, its entity) replaced; the map back.

    In HTML the stand-in is written as a character reference, whatever encoding the page
    declares or its reader guesses.
    """
    base = next(b for b in _BASES if not any(chr(b + i) in text for i in range(len(PROTECTED))))
    swap = {char: chr(base + i) for i, char in enumerate(PROTECTED)}
    if as_html:
        swap_html = {char: f"&#x{ord(stand_in):X};" for char, stand_in in swap.items()}
        text = _ENTITY.sub(lambda m: swap_html.get(html.unescape(m[0]), m[0]), text)
        out = text.translate(str.maketrans(swap_html))
    else:
        # Markdown: an entity inside a code span is literal text, so only raw characters.
        out = text.translate(str.maketrans(swap))
    return out, {stand_in: char for char, stand_in in swap.items()}


def restore(value: Any, back: dict[str, str]) -> Any:
    """Every string inside `value` (a JSON-like export) with the original characters back."""
    if isinstance(value, str):
        return value.translate(str.maketrans(back)) if any(c in value for c in back) else value
    if isinstance(value, list):
        return [restore(v, back) for v in value]
    if isinstance(value, dict):
        return {k: restore(v, back) for k, v in value.items()}
    return value
