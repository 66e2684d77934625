"""The OpenAI-compatible LLM layer: settings, and a client with budget, concurrency cap and usage."""

from rag_assets.llm.client import (
    BudgetExceeded,
    LLMAnswerError,
    LLMClient,
    LLMError,
    LLMReply,
    LLMUnavailable,
    LLMUsage,
)
from rag_assets.llm.settings import LLMSettings

__all__ = [
    "BudgetExceeded",
    "LLMAnswerError",
    "LLMClient",
    "LLMError",
    "LLMReply",
    "LLMSettings",
    "LLMUnavailable",
    "LLMUsage",
]
