"""Replace a document's rows, check them, and put the previous version back when a check fails.

A document that fails its index checks must not stay searchable half-right: its new rows go,
and the rows it had before (none, for a new document) are restored exactly. So too when the
replacement stops midway (SIGINT or SIGTERM, an error): nothing half-written stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rag_assets.index.rows import IndexRow, ReplaceResult
from rag_assets.index.store import MilvusIndex
from rag_assets.interrupts import deferred_signals
from rag_assets.quality.outcome import CheckOutcome


@dataclass
class CheckedReplace:
    replaced: ReplaceResult
    checks: dict[str, CheckOutcome]
    previous_rows: int  # the document's rows before this replacement
    restored: bool  # a check failed and the previous rows are back

    @property
    def failed(self) -> dict[str, str]:
        return {name: c.description for name, c in self.checks.items() if not c.passed}

    def reason(self) -> str:
        """One line: which checks failed and what was kept."""
        kept = (
            f"the previous version ({self.previous_rows} rows) kept"
            if self.previous_rows
            else "its rows removed"
        )
        failed = "; ".join(f"{name}: {text}" for name, text in self.failed.items())
        return f"index check failed ({failed}); {kept}"


def replace_checked(
    index: MilvusIndex,
    collection: str,
    doc_id: str,
    rows: list[IndexRow],
    checks: Callable[[], dict[str, CheckOutcome]],
    after: Callable[[], dict[str, CheckOutcome]] = dict,
) -> CheckedReplace:
    """Replace the document's rows and run `checks`; `after` runs only when they all pass."""
    previous = index.document_snapshot(collection, doc_id)
    try:
        replaced = index.replace_document(collection, doc_id, rows)
        outcomes = checks()
        restored = not all(c.passed for c in outcomes.values())
        if restored:
            index.restore_document(collection, doc_id, previous)
        else:
            outcomes |= after()
    except BaseException:
        # Interrupted or failed anywhere above: the rows it had before, whole; a second signal
        # waits until they are back.
        with deferred_signals():
            index.restore_document(collection, doc_id, previous)
        raise
    return CheckedReplace(replaced, outcomes, len(previous), restored)
