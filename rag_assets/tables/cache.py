"""Vision answers on disk, keyed by what determines them: the image, the model, the prompt.

The model's raw answer is stored, not the verdict on it, so a change in validation
re-judges old answers without calling the model again. Nothing here holds the API key.
"""

from __future__ import annotations

from pydantic import BaseModel

from rag_assets.json_cache import JsonCache, entry_key


def cache_key(image_sha256: str, model: str, prompt_version: str) -> str:
    return entry_key(image_sha256, model, prompt_version)


class CachedAnswer(BaseModel):
    image_sha256: str
    model: str  # as configured (what the key holds), not as the server reports it
    prompt_version: str
    answer: str
    reply_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None

    @property
    def key(self) -> str:
        return cache_key(self.image_sha256, self.model, self.prompt_version)


class VisionCache(JsonCache[CachedAnswer]):
    entry_type = CachedAnswer
    label = "vision cache"

    def get(self, image_sha256: str, model: str, prompt_version: str) -> CachedAnswer | None:
        return self.read(cache_key(image_sha256, model, prompt_version))
