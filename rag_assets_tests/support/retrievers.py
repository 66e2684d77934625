"""A test's retriever searching the same collection under other fusion settings."""

from __future__ import annotations

from typing import Any

from rag_assets.retrieval.search import Retriever
from rag_assets.settings.fusion import FusionSettings


def with_fusion(retriever: Retriever, **settings: Any) -> Retriever:
    """`retriever`'s index, collection and model with `FusionSettings(**settings)`."""
    return Retriever(
        retriever.index,
        retriever.collection,
        retriever.embedder,
        fusion=FusionSettings(**settings),
    )
