"""A vocabulary pack: the kinds of section a domain's documents title in their own words, the
names people ask for them by, and the measures a question reads from them.

A filing titles its statements `CONSOLIDATED STATEMENTS OF OPERATIONS`; a question says
`income statement`, or only names a metric read from one (`quick ratio`). A pack is data
(`packs/*.yaml`, or a file of a collection's own): a breadcrumb under a section's title ends
with the section's usual names, a chunk of one records its kind under the pack's metadata key,
and a question naming a section or a measure searches with the section's names and the
measure's terms, and within those sections' chunks (`retrieval/vocabulary.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rag_assets.text.markdown import row_cells


def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


def _valid_pattern(pattern: str) -> str:
    try:
        _compiled(pattern)
    except re.error as error:
        raise ValueError(f"not a regular expression ({error}): {pattern!r}") from None
    return pattern


class SectionKind(BaseModel):
    """A kind of section (`balance sheet`) and the titles documents give it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    titles: list[str] = Field(min_length=1)  # regular expressions
    names: str  # the usual names a breadcrumb under such a title ends with
    searched: str = ""  # what a question reading a measure from it searches for

    @field_validator("titles")
    @classmethod
    def _valid_titles(cls, titles: list[str]) -> list[str]:
        return [_valid_pattern(p) for p in titles]

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return _compiled("|".join(f"(?:{p})" for p in self.titles))


class Measure(BaseModel):
    """What a question names (`quick ratio`), the sections it is read from, their line items."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    asked: str  # a regular expression
    sections: list[str] = []
    terms: str = ""

    @field_validator("asked")
    @classmethod
    def _valid_asked(cls, asked: str) -> str:
        return _valid_pattern(asked)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.asked)


class Vocabulary(BaseModel):
    """One pack. Its patterns are matched ignoring case."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[\w-]+$")
    description: str = ""
    # Profile kinds (`annual report`) whose documents use the pack under `vocabularies: auto`.
    kinds: list[str] = []
    metadata_key: str = Field(pattern=r"^\w+$")
    not_a_title: str | None = None  # a heading or cell matching it titles no section
    title_lead: str = ""  # what may open a table cell before a title's words
    sections: list[SectionKind] = Field(min_length=1)
    measures: list[Measure] = []
    # How to load it again (a shipped pack's name, else its file's absolute path): what
    # a document's chunks record, so the search of their collection uses the same pack.
    source: str = Field("", exclude=True)

    @field_validator("not_a_title", "title_lead")
    @classmethod
    def _valid_patterns(cls, pattern: str | None) -> str | None:
        return pattern if pattern is None else _valid_pattern(pattern)

    @model_validator(mode="after")
    def _measures_read_known_sections(self) -> Vocabulary:
        known = {s.kind for s in self.sections}
        for measure in self.measures:
            if unknown := [s for s in measure.sections if s not in known]:
                raise ValueError(f"measure {measure.asked!r} names unknown sections {unknown}")
        return self

    @cached_property
    def _not_a_title(self) -> re.Pattern[str] | None:
        return _compiled(self.not_a_title) if self.not_a_title else None

    @cached_property
    def _lead(self) -> re.Pattern[str]:
        return _compiled(self.title_lead)

    @cached_property
    def names(self) -> dict[str, str]:
        return {s.kind: s.names for s in self.sections}

    def section_of(self, headings: Sequence[str], text: str) -> str | None:
        """The kind of section a chunk is part of: the one the innermost heading that titles
        a section titles, else the one the first table row of `text` opens with (a parser
        that reads a title into the table's first row leaves no heading for it)."""
        return self._heading_section(headings) or self._table_title_section(text)

    def sections_named(self, text: str) -> list[str]:
        """The kinds of section a text names anywhere, in the pack's order."""
        return [s.kind for s in self.sections if s.pattern.search(text)]

    def sections_asked(self, question: str) -> list[str]:
        """The kinds a question names or reads its measures from, named first."""
        found = self.sections_named(question)
        for measure in self.measures:
            if measure.pattern.search(question):
                found.extend(s for s in measure.sections if s not in found)
        return found

    def terms_for(self, question: str) -> str:
        """The searched names and line items of the sections the question's measures are read
        from (empty when it names none); two measures read alike add their terms once."""
        searched = {s.kind: s.searched for s in self.sections}
        found: list[str] = []
        for measure in self.measures:
            parts = [*(searched[s] for s in measure.sections), measure.terms]
            terms = " ".join(p for p in parts if p).strip()
            if terms and measure.pattern.search(question) and terms not in found:
                found.append(terms)
        return " ".join(found)

    def _titles_nothing(self, text: str) -> bool:
        return bool(self._not_a_title and self._not_a_title.search(text))

    def _heading_section(self, headings: Sequence[str]) -> str | None:
        for heading in reversed(headings):
            if self._titles_nothing(heading):
                continue
            for section in self.sections:
                if section.pattern.search(heading):
                    return section.kind
        return None

    def _table_title_section(self, text: str) -> str | None:
        """The kind the first table row of `text` opens with: its first non-empty cell starts
        with the section's title. A cell that only mentions one (`Gross Amount Presented in
        the Consolidated Balance Sheet`) is a column, not a title."""
        row = next((line for line in text.splitlines() if line.lstrip().startswith("|")), "")
        cell = next((c.strip() for c in row_cells(row) if c.strip()), "")
        lead = self._lead.match(cell)
        title = cell[lead.end() :] if lead else cell
        if not title or self._titles_nothing(cell):
            return None
        return next((s.kind for s in self.sections if s.pattern.match(title)), None)
