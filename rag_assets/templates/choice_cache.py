"""The LLM's template guesses on disk, keyed by what decides them: the document's content, the
selector's prompt version, the model and the templates it was offered.

The model's guess is stored, not the choice made of it, so a new confidence threshold re-judges
old guesses without calling the model again. Failed calls and invalid answers are not stored:
the next materialization asks again.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from rag_assets.json_cache import JsonCache, entry_key


def choice_key(
    document_sha256: str, model: str, selector_version: str, templates: Sequence[str]
) -> str:
    return entry_key(document_sha256, model, selector_version, ",".join(templates))


class CachedGuess(BaseModel):
    document_sha256: str
    model: str  # as configured (what the key holds), not as the server reports it
    selector_version: str
    templates: list[str]
    template: str
    confidence: float
    reason: str
    # Whose guess: removing the document removes its entries, of every version of its content.
    doc_id: str = ""

    @property
    def key(self) -> str:
        return choice_key(self.document_sha256, self.model, self.selector_version, self.templates)


class ChoiceCache(JsonCache[CachedGuess]):
    entry_type = CachedGuess
    label = "template choice cache"
