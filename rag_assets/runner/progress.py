"""What the runner tells as an ingest or an evaluation goes: documents begun and ended, and the
progress lines its runs log (pages parsed, chunks embedded, templates evaluated)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_assets.runner.receipt import DocumentOutcome
from rag_assets.text.progress import ProgressLine, read_progress_line

if TYPE_CHECKING:  # an unchanged ingest replays its receipt without importing Dagster
    from dagster import DagsterInstance, EventLogEntry


class RunProgress:
    """Tells nothing: the default. The CLI picks lines or live bars (rag_assets/cli/progress.py)."""

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def documents(self, total: int) -> None:
        """An ingest of `total` files begins."""

    def document_started(self, source_path: str) -> None:
        """A document's run is about to start."""

    def measured(self, step: ProgressLine) -> None:
        """A run logged how far a step is."""

    def document_finished(self, outcome: DocumentOutcome) -> None:
        """A file's outcome is known (ran, fresh, skipped, failed or stopped)."""


def watch_run(instance: DagsterInstance, run_id: str, progress: RunProgress) -> None:
    """Hand `progress` the run's progress lines as the run logs them (the run executes in this
    process, so Dagster calls the listener as each event is stored)."""

    def listen(entry: EventLogEntry) -> None:
        if entry.dagster_event is None and (step := read_progress_line(entry.user_message)):
            progress.measured(step)

    instance.add_event_listener(run_id, listen)
