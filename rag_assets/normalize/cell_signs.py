"""Currency signs a table finder cut off from their values.

Where a column boundary falls between a value's `$` and its digits, the sign ends the cell
before (`22.4 % $` beside `1,672`): the value then reads as a bare number and the cell before
as carrying an amount it does not hold. The sign goes back to the value it opens.
"""

from __future__ import annotations

import re

_TRAILING_SIGN = re.compile(r"\s*([$€£¥])$")
_OPENS_VALUE = re.compile(r"^[(\-–—]?\s*\d|^[—–\-]$")
_SIGN = re.compile(r"[$€£¥]")


def signs_rejoined(row: list[str]) -> list[str]:
    """`row` with each trailing currency sign moved to the start of the value after it."""
    out = list(row)
    for i in range(len(out) - 1):
        sign = _TRAILING_SIGN.search(out[i])
        following = out[i + 1].strip()
        if sign and _OPENS_VALUE.match(following) and not _SIGN.search(following):
            out[i] = out[i][: sign.start()].rstrip()
            out[i + 1] = f"{sign[1]} {following}"
    return out
