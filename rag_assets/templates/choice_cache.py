"""The LLM's template guesses on disk, keyed by what decides them: the document's content, the
selector's prompt version, the model and the templates it was offered.

The model's guess is stored, not the choice made of it, so a new confidence threshold re-judges
old guesses without calling the model again. Failed calls and invalid answers are not stored:
the next materialization asks again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import BaseModel

from rag_assets.json_cache import JsonCache


def choice_key(
    document_sha256: str, model: str, selector_version: str, templates: Sequence[str]
) -> str:
    fields = [document_sha256, model, selector_version, ",".join(templates)]
    return hashlib.sha256("\n".join(fields).encode()).hexdigest()


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

    def get(self, key: str) -> CachedGuess | None:
        return self.read(key)
