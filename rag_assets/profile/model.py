"""A document's profile: each field with where it was read, so a reader can weigh it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Where a field was read; the file name is the last resort.
Source = Literal[
    "LLM",  # asked of the configured model, from the first pages (llm.py)
    "cover page",
    "first pages",
    "running header",
    "file metadata",
    "title",
    "language detection",
    "file name",
]
IDENTITY_SEPARATOR = " · "


class ProfileField(BaseModel):
    model_config = ConfigDict(frozen=True)

    value: str
    source: Source


class DocumentProfile(BaseModel):
    """Who issued the document, what kind it is and what period it covers."""

    model_config = ConfigDict(frozen=True)

    title: ProfileField | None = None
    organization: ProfileField | None = None
    kind: ProfileField | None = None  # "annual report", "standard", "manual", ...
    form: ProfileField | None = None  # a regulatory form the document names: "Form 10-K"
    period: ProfileField | None = None  # "fiscal year 2017", "quarter ended March 31, 2021"
    year: int | None = None  # the period's year (a fiscal year's own number), for matching
    # The fiscal quarter (1-4) a quarterly report or an earnings release covers, and the fiscal
    # year it counts in, as the document writes them (`second quarter of fiscal 2024`).
    quarter: int | None = None
    fiscal_year: int | None = None
    language: ProfileField | None = None
    # Other names of the issuer: trading symbols on the cover, the names the document defines
    # for it (`("AMD")`) and the short forms its own text uses most (`Disney`).
    aliases: list[str] = Field(default_factory=list)

    def identity(self) -> str:
        """`Netflix, Inc. · annual report (Form 10-K) · fiscal year 2017`: what each chunk's
        context puts first. The title leads only when it is not the issuer's name."""
        kind = self.kind.value if self.kind else ""
        if self.form:
            kind = f"{kind} ({self.form.value})" if kind else self.form.value
        # A title made of the file name says nothing the file name does not.
        title = self.title.value if self.title and self.title.source != "file name" else ""
        organization = self.organization.value if self.organization else ""
        if title and organization and _squashed(title) == _squashed(organization):
            title = ""
        if title and _squashed(kind) == _squashed(title):
            kind = ""
        parts = [title, organization, kind, self.period.value if self.period else ""]
        return IDENTITY_SEPARATOR.join(part for part in parts if part)

    def names_its_issuer(self) -> bool:
        """Whether the profile says whose document it is (an issuer, or a regulatory form that
        names one): what tells look-alike documents apart."""
        return self.organization is not None or self.form is not None

    def index_metadata(self) -> dict[str, str | int | list[str]]:
        """Flat fields every chunk of the document carries, filterable in the index."""
        fields: dict[str, str | int | list[str]] = {
            f"doc_{name}": value.value
            for name, value in (
                ("title", self.title),
                ("organization", self.organization),
                ("kind", self.kind),
                ("form", self.form),
                ("period", self.period),
            )
            if value is not None
        }
        for name, number in (
            ("year", self.year),
            ("quarter", self.quarter),
            ("fiscal_year", self.fiscal_year),
        ):
            if number is not None:
                fields[f"doc_{name}"] = number
        if self.aliases:
            fields["doc_aliases"] = list(self.aliases)
        return fields


def _squashed(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())
