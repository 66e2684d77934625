"""Fiscal quarters as documents and questions write them: `Q2 2023`, `Q2'23`, `2Q23`,
`FY2023Q1`, `Q2 FY24`, `second quarter of fiscal 2024`, `fiscal 2024 second quarter`.

Read the same way on both sides, so a question's quarter meets a document's.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
}
_ORDINAL = r"(first|second|third|fourth|1st|2nd|3rd|4th)"
_YEAR = r"('?(?:19|20)\d\d|'?\d\d)"
_FISCAL = r"(?:fy|fiscal(?:\s+year)?)"
# Each pattern gives (quarter, year) as groups 1 and 2, or (year, quarter) where named.
_QUARTER_YEAR = (
    # Q2 2023, Q2'23, Q2 FY24, Q2FY2024, Q2 of fiscal 2024
    re.compile(rf"\bq([1-4])\s*(?:of\s+)?(?:{_FISCAL}\s*)?{_YEAR}\b", re.I),
    # 2Q23, 2Q 2023, 2Q'23, 2QFY23
    re.compile(rf"\b([1-4])q\s*(?:{_FISCAL}\s*)?{_YEAR}\b", re.I),
    # second quarter of fiscal 2024, first quarter 2023, 4th fiscal quarter of FY2023
    re.compile(
        rf"\b{_ORDINAL}\s+(?:fiscal\s+)?quarter\s*(?:of\s+|,\s*|in\s+)?(?:the\s+)?"
        rf"(?:{_FISCAL}\s*)?'?((?:19|20)\d\d)\b",
        re.I,
    ),
)
_YEAR_QUARTER = (
    # FY2023Q1, FY23 Q1, FY2023-Q1
    re.compile(rf"\b{_FISCAL}\s*{_YEAR}\s*[-/ ]?\s*q([1-4])\b", re.I),
    # fiscal 2024 second quarter, 2023 fourth quarter
    re.compile(rf"\b(?:{_FISCAL}\s*)?((?:19|20)\d\d)\s+{_ORDINAL}\s+(?:fiscal\s+)?quarter\b", re.I),
)
# A quarter with no year: `the second quarter`, `Q3`.
_QUARTER_ALONE = re.compile(rf"\b{_ORDINAL}\s+(?:fiscal\s+)?quarter\b|\bq([1-4])\b", re.I)


# Kinds of document that report on one quarter (profile kinds).
QUARTERLY_KINDS = frozenset({"quarterly report", "current report", "press release"})


class Quarter(NamedTuple):
    number: int  # 1 to 4
    year: int | None  # the (fiscal) year it is counted in, as written; None when unsaid


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _ORDINALS[text.casefold()]


def _year(text: str) -> int:
    digits = text.lstrip("'")
    return int(digits) if len(digits) == 4 else 2000 + int(digits)


def _plausible(match: re.Match[str], year: str) -> bool:
    """A two-digit year only where it reads as one (`Q2'23`, `2Q23`, `FY24 Q1`), never a
    number that follows a quarter (`Q2 10-Q`, `Q1 20 million`)."""
    if len(year.lstrip("'")) == 4 or year.startswith("'"):
        return True
    written = match.group(0)
    return re.search(r"fy|fiscal", written, re.I) is not None or not re.search(r"\s", written)


def quarters_in(text: str) -> list[Quarter]:
    """Every quarter `text` names, in the order written (a quarter named without a year once,
    with its year None, unless the same quarter is named with one)."""
    found: list[tuple[int, Quarter]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _QUARTER_YEAR:
        for match in pattern.finditer(text):
            if not _plausible(match, match.group(2)):
                continue
            found.append((match.start(), Quarter(_number(match.group(1)), _year(match.group(2)))))
            taken.append(match.span())
    for pattern in _YEAR_QUARTER:
        for match in pattern.finditer(text):
            if not _plausible(match, match.group(1)) or any(
                s < match.end() and match.start() < e for s, e in taken
            ):
                continue
            found.append((match.start(), Quarter(_number(match.group(2)), _year(match.group(1)))))
            taken.append(match.span())
    dated = {quarter.number for _, quarter in found}
    for match in _QUARTER_ALONE.finditer(text):
        if any(s < match.end() and match.start() < e for s, e in taken):
            continue
        number = _number(match.group(1) or match.group(2))
        if number not in dated:
            dated.add(number)
            found.append((match.start(), Quarter(number, None)))
    return [quarter for _, quarter in sorted(found)]


def reported_quarter(text: str) -> Quarter | None:
    """The quarter a quarterly report or an earnings release reports on: the quarter it names
    most often with a year, in the latest year it names that quarter in (the same quarter of
    the year before is its comparison)."""
    dated = [q for q in quarters_in(text) if q.year is not None]
    if not dated:
        return None
    number = Counter(q.number for q in dated).most_common(1)[0][0]
    return Quarter(number, max(q.year for q in dated if q.number == number))
