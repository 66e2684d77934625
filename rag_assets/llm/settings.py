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

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from rag_assets.errors import ConfigurationError
from rag_assets.redaction import redact_url, url_secrets
from rag_assets.settings.base import NOT_FROM_ENV, EnvSettings, shown
from rag_assets.settings.processes import LLM_API_KEY_ENV


class LLMSettings(EnvSettings):
    """An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, OpenRouter), off unless a base URL
    and a model are set; the same settings (never the key) may sit under `llm:` in
    rag_collections.yaml; the environment wins over the file."""

    model_config = SettingsConfigDict(env_prefix="RAG_ASSETS_LLM_", extra="forbid")

    base_url: str | None = Field(
        None,
        description=(
            "e.g. `http://localhost:11434/v1`; unset means off. Credentials in it "
            "(`http://user:KEY@host/v1`) are sent as Basic auth and shown as `***` in logs, "
            "metadata, files and errors"
        ),
    )
    api_key_env: str = Field(
        LLM_API_KEY_ENV,
        description="the NAME of the variable holding the key, never the key itself",
    )
    model: str | None = Field(None, description="the chat model")
    vision_model: str | None = Field(
        None,
        validation_alias="RAG_ASSETS_VISION_MODEL",
        description="the vision model",
        json_schema_extra=shown("the chat model"),
    )
    timeout_s: float = Field(60, gt=0, description="seconds per HTTP attempt")
    max_retries: int = Field(
        2, ge=0, description="retries with exponential backoff (the SDK's own)"
    )
    max_concurrency: int = Field(4, ge=1, description="requests in flight per client")
    max_calls: int | None = Field(
        None,
        ge=0,
        description="a budget of calls per client (per run)",
        json_schema_extra=shown("none"),
    )
    # False: the endpoint came from a data folder's file, not the operator.
    send_key: bool = Field(True, json_schema_extra=NOT_FROM_ENV)

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
        env = cls.env_values()
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


class LLMEndpoints(EnvSettings):
    """Which endpoints a collections file may choose."""

    model_config = SettingsConfigDict(env_prefix="RAG_ASSETS_LLM_")

    allowed_base_urls: str | None = Field(
        None,
        description=(
            "comma-separated endpoints a data folder's `rag_collections.yaml` may choose, and "
            "that then get the key; when set, any other endpoint in the file is refused"
        ),
    )


# What a page region (a table for the vision model, a figure for a reader) is rendered at.
RENDER_DPI = 144


class VisionSettings(EnvSettings):
    """How a PDF's tables are shown to the vision model, when one is set."""

    vision_dpi: int = Field(
        RENDER_DPI, description="resolution, in dots per inch, a table's page region is rendered at"
    )
    include_picture_tables: bool = Field(
        False,
        validation_alias="RAG_ASSETS_VISION_PICTURE_TABLES",
        description=(
            "also send the model pictures whose caption or text says table (tables printed as "
            "images)"
        ),
    )


def allowed_base_urls() -> set[str]:
    """The endpoints the operator allows a collections file to choose, with the key."""
    listed = LLMEndpoints.from_env().allowed_base_urls or ""
    return {_normal(url) for url in listed.split(",") if url.strip()}


def _normal(url: str) -> str:
    return url.strip().rstrip("/")
