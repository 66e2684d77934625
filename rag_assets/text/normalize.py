"""Text reduced to what two renderings of the same words have in common."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|])")
# Emphasis marks; an underscore inside a word (VERIFY_GROUP) is text, not emphasis.
_EMPHASIS = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)")


def normalize_markdown(text: str) -> str:
    """Lower case, markdown escapes and emphasis marks dropped, whitespace runs made one space:
    two markdown renderings of one heading or table cell compare equal."""
    text = _EMPHASIS.sub("", _ESCAPE.sub(r"\1", text))
    return " ".join(text.lower().split())


def normalize_unspaced(text: str) -> str:
    """NFKC, case-folded, every whitespace character removed: PDF extraction breaks lines and
    spaces words unlike the person who typed the text it is compared with."""
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def sorted_characters(texts: Iterable[str]) -> list[str]:
    """The characters of `texts` but whitespace, sorted: equal for one text however it was cut
    into pieces or its lines interleaved."""
    return sorted("".join("".join(text.split()) for text in texts))
