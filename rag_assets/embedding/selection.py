"""The configured model, or the bundled fallback when it is missing: never silently."""

from __future__ import annotations

from rag_assets.embedding.models import (
    FALLBACK_SETTING,
    Embedder,
    EmbeddingSpec,
    ResolvedModel,
    load_embedder,
    resolve_model,
)
from rag_assets.errors import ConfigurationError


def effective_spec(spec: EmbeddingSpec) -> tuple[EmbeddingSpec, str | None]:
    """The spec to use and, when it differs from the configured one, why."""
    try:
        resolve_model(spec)
    except ConfigurationError as error:
        if spec.model == FALLBACK_SETTING:
            raise
        fallback = spec.model_copy(
            update={"model": FALLBACK_SETTING, "kind": "auto", "pooling": None}
        )
        return fallback, f"{error} Fell back to {FALLBACK_SETTING}."
    return spec, None


def select_model(spec: EmbeddingSpec) -> tuple[ResolvedModel, str | None]:
    chosen, fallback_reason = effective_spec(spec)
    return resolve_model(chosen), fallback_reason


def select_embedder(spec: EmbeddingSpec) -> tuple[Embedder, str | None]:
    chosen, fallback_reason = effective_spec(spec)
    return load_embedder(chosen), fallback_reason
