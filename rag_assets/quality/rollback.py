"""Replace a document's rows (or a batch's), check them, and put the previous version back when a
check fails.

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
    return replace_checked_many(index, collection, {doc_id: rows}, lambda _: checks(), after)[
        doc_id
    ]


def replace_checked_many(
    index: MilvusIndex,
    collection: str,
    rows_by_document: dict[str, list[IndexRow]],
    checks: Callable[[str], dict[str, CheckOutcome]],
    after: Callable[[], dict[str, CheckOutcome]] = dict,
) -> dict[str, CheckedReplace]:
    """Replace a batch of documents' rows in one write and run each document's `checks`; a
    document failing them gets its previous rows back, alone. `after` runs once, when some
    document passed, and its outcomes join each passing document's checks."""
    doc_ids = list(rows_by_document)
    previous = index.documents_snapshot(collection, doc_ids)
    try:
        replaced = index.replace_documents(collection, rows_by_document)
        outcomes = {doc_id: checks(doc_id) for doc_id in doc_ids}
        failed = [d for d in doc_ids if not all(c.passed for c in outcomes[d].values())]
        index.restore_documents(collection, {d: previous[d] for d in failed})
        if len(failed) < len(doc_ids):
            shared = after()
            for doc_id in doc_ids:
                if doc_id not in failed:
                    outcomes[doc_id] |= shared
    except BaseException:
        # Interrupted or failed anywhere above: the rows each had before, whole; a second signal
        # waits until they are back.
        with deferred_signals():
            index.restore_documents(collection, previous)
        raise
    return {
        d: CheckedReplace(replaced[d], outcomes[d], len(previous[d]), d in failed) for d in doc_ids
    }
