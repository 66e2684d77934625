"""What a section number is (`section_number_pattern`) and what may follow it in a heading."""

from __future__ import annotations

import re

import pytest

from rag_assets.text.numbering import SECTION_NUMBER_END, section_number_pattern

# Each variant, by (bounded, appendix).
BOUNDED = (True, False)
UNBOUNDED = (False, False)
BOUNDED_APPENDIX = (True, True)
UNBOUNDED_APPENDIX = (False, True)
VARIANTS = (BOUNDED, UNBOUNDED, BOUNDED_APPENDIX, UNBOUNDED_APPENDIX)

# text -> the variants it is a whole section number for.
CASES = {
    "7": VARIANTS,
    "7.4": VARIANTS,
    "3.6.6": VARIANTS,
    "999.999": VARIANTS,
    "0": VARIANTS,
    # Parts over three digits: a year, or a value, for the bounded variants.
    "2024": (UNBOUNDED, UNBOUNDED_APPENDIX),
    "1000.1": (UNBOUNDED, UNBOUNDED_APPENDIX),
    "12.3456": (UNBOUNDED, UNBOUNDED_APPENDIX),
    # A capital leading dotted parts: an appendix.
    "A.1": (BOUNDED_APPENDIX, UNBOUNDED_APPENDIX),
    "B.2.3": (BOUNDED_APPENDIX, UNBOUNDED_APPENDIX),
    "A.1000": (UNBOUNDED_APPENDIX,),
    # Never a section number: a letter alone, a small letter, two letters, a Roman numeral,
    # empty parts, a trailing full stop (that is SECTION_NUMBER_END's), blanks.
    "A": (),
    "A.": (),
    "a.1": (),
    "AB.1": (),
    "IV": (),
    "1.A": (),
    "": (),
    ".1": (),
    "1..2": (),
    "1.": (),
    " 1": (),
    "1 ": (),
}


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"bounded={v[0]},appendix={v[1]}")
def test_a_section_number_is_what_its_variant_accepts(text: str, variant: tuple) -> None:
    bounded, appendix = variant
    pattern = re.compile(section_number_pattern(bounded=bounded, appendix=appendix))
    assert bool(pattern.fullmatch(text)) == (variant in CASES[text])


def test_the_pattern_has_no_groups_of_its_own() -> None:
    for bounded, appendix in VARIANTS:
        assert re.compile(section_number_pattern(bounded=bounded, appendix=appendix)).groups == 0


# A heading's text -> the number SECTION_NUMBER_END lets open it (bounded, with appendices).
HEADINGS = {
    "7.4.1 Timing": "7.4.1",
    "3. Scope": "3",
    "3.\tScope": "3",
    "1.2\nnext line": "1.2",
    "7.4": "7.4",
    "4.": "4",
    "A.1 Deep": "A.1",
    # No blank after the number: a word, a range, a value with its unit.
    "2.1Host": None,
    "7.4-1 Rates": None,
    "3.3V supply": None,
    "3..4 x": None,
    # The number must open the text: leading blanks are the caller's to strip.
    " 1.2 Title": None,
    "\t1 Title": None,
    "2024 Annual report": None,
    "1000.1 Title": None,
    "IV. Scope": None,
    "": None,
}


@pytest.mark.parametrize("heading", HEADINGS)
def test_a_heading_opens_with_its_number_then_a_blank_or_the_end(heading: str) -> None:
    pattern = re.compile(rf"^({section_number_pattern(appendix=True)}){SECTION_NUMBER_END}")
    match = pattern.match(heading)
    assert (match.group(1) if match else None) == HEADINGS[heading]
