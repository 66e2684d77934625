"""Where the OpenAI-compatible endpoint is and how hard to lean on it.

The API key is not a setting: only the NAME of the environment variable holding it
is, so the key never lands in a settings repr, a config dump or asset metadata.

The key goes only where the operator sent it: to the endpoint set beside it in the environment
(`RAG_ASSETS_LLM_BASE_URL`), or to one the operator allowed (`RAG_ASSETS_LLM_ALLOWED_BASE_URLS`).
A data folder's collections file may choose among those endpoints; it may not name which
variable holds the key, and an endpoint of its own is called without the key (refused when the
operator listed the allowed ones).
"""

from __future__ import annotations

import os

from pydantic import BaseModel, Field, model_validator

from rag_assets.errors import ConfigurationError
from rag_assets.redaction import redact_url, url_secrets


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


class LLMSettings(BaseModel, extra="forbid"):
    base_url: str | None = None  # e.g. http://127.0.0.1:8000/v1 (vLLM), http://localhost:11434/v1
    api_key_env: str = "RAG_ASSETS_LLM_API_KEY"  # the variable's name, never its value
    model: str | None = None  # chat model
    vision_model: str | None = None  # defaults to `model`
    timeout_s: float = Field(default=60, gt=0)  # per HTTP attempt
    max_retries: int = Field(default=2, ge=0)  # the SDK's own retries, exponential backoff
    max_concurrency: int = Field(default=4, ge=1)  # requests in flight per client
    max_calls: int | None = Field(default=None, ge=0)  # budget per client; None = unlimited
    send_key: bool = True  # False: the endpoint came from a data folder's file, not the operator

    @model_validator(mode="after")
    def _default_vision_model(self) -> LLMSettings:
        if self.vision_model is None:
            self.vision_model = self.model
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.model)

    @property
    def vision_enabled(self) -> bool:
        return bool(self.base_url and self.vision_model)

    @classmethod
    def from_env(cls, base: dict | None = None) -> LLMSettings:
        """`base` (e.g. rag_collections.yaml's `llm:` section) under the environment's values."""
        base = dict(base or {})
        if url_secrets(str(base.get("base_url") or "")):
            raise ConfigurationError(
                "the `llm.base_url` in the collections file holds credentials; files are copied "
                "and shown, so set that URL in RAG_ASSETS_LLM_BASE_URL instead"
            )
        for key in ("api_key_env", "send_key"):
            if key in base:
                raise ConfigurationError(
                    f"`llm.{key}` may not be set in the collections file: which key is sent, "
                    "and where, is the operator's choice (RAG_ASSETS_LLM_API_KEY_ENV, "
                    "RAG_ASSETS_LLM_BASE_URL, RAG_ASSETS_LLM_ALLOWED_BASE_URLS)"
                )
        env = env_values()
        file_url = base.get("base_url") if "base_url" not in env else None
        send_key = True
        if file_url:
            allowed = allowed_base_urls()
            if allowed and _normal(str(file_url)) not in allowed:
                raise ConfigurationError(
                    f"`llm.base_url` {redact_url(str(file_url))} in the collections file is not "
                    "among RAG_ASSETS_LLM_ALLOWED_BASE_URLS"
                )
            send_key = bool(allowed)
        return cls(**{**base, **env, "send_key": send_key})


def allowed_base_urls() -> set[str]:
    """The endpoints the operator allows a collections file to choose, with the key."""
    listed = _env("RAG_ASSETS_LLM_ALLOWED_BASE_URLS") or ""
    return {_normal(url) for url in listed.split(",") if url.strip()}


def _normal(url: str) -> str:
    return url.strip().rstrip("/")


def env_values() -> dict[str, str]:
    """Only the settings the environment sets, so they can override a file's values."""
    values = {
        "base_url": _env("RAG_ASSETS_LLM_BASE_URL"),
        "api_key_env": _env("RAG_ASSETS_LLM_API_KEY_ENV"),
        "model": _env("RAG_ASSETS_LLM_MODEL"),
        "vision_model": _env("RAG_ASSETS_VISION_MODEL"),
        "timeout_s": _env("RAG_ASSETS_LLM_TIMEOUT_S"),
        "max_retries": _env("RAG_ASSETS_LLM_MAX_RETRIES"),
        "max_concurrency": _env("RAG_ASSETS_LLM_MAX_CONCURRENCY"),
        "max_calls": _env("RAG_ASSETS_LLM_MAX_CALLS"),
    }
    return {k: v for k, v in values.items() if v is not None}
