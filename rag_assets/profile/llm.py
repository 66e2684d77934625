"""A document's profile asked of the configured LLM, from the text of its first pages.

The rule-based profile (rules.py) is read first and stays the fallback: a field the model
leaves empty keeps the rules' value, and a failed call or an invalid answer keeps the rules'
profile whole, with the reason in the log and the asset's metadata. The language stays the
detector's and the aliases the cover's. Answers are cached on disk by what decides them (the
text shown, the model, the prompt's version), so materializing again asks nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pydantic import BaseModel, Field

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.json_cache import JsonCache, entry_key, read_or_ask
from rag_assets.llm import LLMClient, LLMError
from rag_assets.profile.model import DocumentProfile, ProfileField
from rag_assets.profile.rules import FIRST_PAGES, cover_elements

PROMPT_VERSION = "1"
# The cover and first pages name the issuer, the form and the period; a few thousand
# characters hold them and keep the call cheap.
SHOWN_CHARS = 6000

PROMPT = """What is this document? Read its first pages below and say who issued it, what
kind of document it is and what period or date it covers, in the document's own words.
Leave a field null when the text does not say it.

File name: {file_name}

{text}"""


class ProfileAnswer(BaseModel):
    title: str | None = Field(
        None, description="the document's own title; null when its title is only a form's name"
    )
    organization: str | None = Field(
        None, description="who issued or wrote it: the registrant, the agency, the author"
    )
    kind: str | None = Field(
        None,
        description="annual report, quarterly report, current report, press release, "
        "standard, law, manual, FAQ, contract, policy, ...",
    )
    form: str | None = Field(None, description="a regulatory form it is filed on: Form 10-K")
    period: str | None = Field(
        None, description="the period or date it covers: fiscal year 2022, March 31, 2021"
    )
    year: int | None = Field(None, ge=1800, le=2200, description="the year of that period")


class CachedProfile(BaseModel):
    text_sha256: str
    model: str  # as configured (what the key holds)
    prompt_version: str
    answer: ProfileAnswer
    # Whose answer: removing the document removes its entries.
    doc_id: str = ""

    @property
    def key(self) -> str:
        return profile_key(self.text_sha256, self.model, self.prompt_version)


def profile_key(text_sha256: str, model: str, prompt_version: str) -> str:
    return entry_key(text_sha256, model, prompt_version)


class ProfileCache(JsonCache[CachedProfile]):
    entry_type = CachedProfile
    label = "profile cache"


@dataclass(frozen=True)
class AskedProfile:
    profile: DocumentProfile
    by: str  # what `profile_by` says: "LLM", "LLM (cached)", or the rules and why


def ask_profile(
    doc: StandardizedDocument,
    rules: DocumentProfile,
    llm: LLMClient,
    cache: ProfileCache | None = None,
) -> AskedProfile:
    """The model's profile of `doc` over `rules` (what the rules read); `rules` whole when the
    call fails or the answer is not a profile."""
    text = first_pages_text(doc)
    if not text:
        return AskedProfile(rules, "rules: no text on the first pages to ask about")
    sha, model = hashlib.sha256(text.encode()).hexdigest(), llm.settings.model or ""

    def ask() -> CachedProfile:
        file_name = (doc.source_path or doc.doc_id).rsplit("/", 1)[-1]
        messages = [{"role": "user", "content": PROMPT.format(file_name=file_name, text=text)}]
        return CachedProfile(
            text_sha256=sha,
            model=model,
            prompt_version=PROMPT_VERSION,
            answer=llm.chat_json(messages, ProfileAnswer),
            doc_id=doc.doc_id,
        )

    try:
        entry, cached = read_or_ask(cache, profile_key(sha, model, PROMPT_VERSION), ask)
    except LLMError as error:
        return AskedProfile(rules, f"rules: the LLM failed ({error.reason})")
    return AskedProfile(merged(rules, entry.answer), "LLM (cached)" if cached else "LLM")


def first_pages_text(doc: StandardizedDocument) -> str:
    """The body text of the first pages the rules read (rules.py), cut to size."""
    texts = [e.text.strip() for e in cover_elements(doc, FIRST_PAGES)]
    return "\n\n".join(t for t in texts if t)[:SHOWN_CHARS]


def merged(rules: DocumentProfile, answer: ProfileAnswer) -> DocumentProfile:
    """`rules` with each field the model answered replaced by its answer."""
    fields = {}
    for name in ("title", "organization", "kind", "form", "period"):
        value = " ".join((getattr(answer, name) or "").split())
        if value:
            if name == "form" and not value.casefold().startswith("form "):
                value = f"Form {value}"  # the rules' spelling: "Form 10-K"
            fields[name] = ProfileField(value=value, source="LLM")
    if answer.year is not None:
        fields["year"] = answer.year
    return rules.model_copy(update=fields)
