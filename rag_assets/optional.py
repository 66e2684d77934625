"""Optional steps: a step that fails degrades its document instead of failing it.

A repair, a vision table, the LLM's template choice, article openings, cross-references or
figure placeholders each improve a document; none is needed for it to be searchable. When one
raises, its caller takes the fallback (what the document was before the step), the failure is
logged once as a WARNING naming the step and the exception, and the step's name and reason go
into the asset's `degraded` metadata, so the document lands as `degraded:` instead of failing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A reason is one line in metadata and the log, however long the exception's text.
_MAX_REASON = 300


def failure_reason(error: BaseException) -> str:
    """`KeyError: 'x'` as one line of bounded length."""
    text = " ".join(str(error).split()) or "(no message)"
    if len(text) > _MAX_REASON:
        text = text[: _MAX_REASON - 1] + "…"
    return f"{type(error).__name__}: {text}"


@dataclass
class StepFailures:
    """The optional steps that failed for one document: step name -> one-line reason."""

    subject: str = ""  # the document, as the log names it
    failed: dict[str, str] = field(default_factory=dict)

    def run(self, step: str, call: Callable[[], T], fallback: T) -> T:
        """`call()`, or `fallback` when it raises (recorded and logged once per step)."""
        try:
            return call()
        except Exception as error:  # optional by definition: the document goes on without it
            if step not in self.failed:
                self.failed[step] = failure_reason(error)
                logger.warning("%s: %s skipped: %s", self.subject, step, self.failed[step])
            return fallback

    def notes(self) -> list[str]:
        """`degraded` metadata: one line per failed step."""
        return [f"{step} skipped ({reason})" for step, reason in self.failed.items()]
