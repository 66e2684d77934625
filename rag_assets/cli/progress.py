"""How a command shows an ingest or an evaluation going: live bars on a terminal, else the
plain lines (one per document) that logs, pipes and CI read."""

from __future__ import annotations

import sys

from rag_assets.runner.progress import RunProgress
from rag_assets.runner.receipt import DocumentOutcome
from rag_assets.text.progress import CHUNKS_EMBEDDED, PAGES_PARSED, ProgressLine
from rag_assets.text.terminal import visible_line


class DocumentLines(RunProgress):
    """One line per document as it ends."""

    def document_finished(self, outcome: DocumentOutcome) -> None:
        print(visible_line(outcome.summary()), flush=True)


class LiveBars(RunProgress):
    """rich's bars: documents done, and each progress line a run logs (pages parsed, chunks
    embedded, templates evaluated) for the document under way; each document's line is printed
    above them as it ends."""

    def __init__(self) -> None:
        # rich loads only when bars are drawn: on a terminal.
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bars = Progress(
            SpinnerColumn(),
            TextColumn("{task.description:<16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[subject]}"),
        )
        self._documents = None
        self._measures: dict[str, int] = {}

    def __enter__(self) -> LiveBars:
        self._bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bars.stop()

    def documents(self, total: int) -> None:
        self._documents = self._bars.add_task("documents", total=total, subject="")
        for measure in (PAGES_PARSED, CHUNKS_EMBEDDED):  # in the order a document's run goes
            self._measures[measure] = self._bars.add_task(measure, visible=False, subject="")

    def document_started(self, source_path: str) -> None:
        if self._documents is not None:
            self._bars.update(self._documents, subject=visible_line(source_path))
        for task in self._measures.values():  # the last document's counts are not this one's
            self._bars.update(task, visible=False)

    def measured(self, step: ProgressLine) -> None:
        if step.measure not in self._measures:
            self._measures[step.measure] = self._bars.add_task(step.measure, subject="")
        self._bars.update(
            self._measures[step.measure], completed=step.done, total=step.total, visible=True
        )

    def document_finished(self, outcome: DocumentOutcome) -> None:
        self._bars.console.print(visible_line(outcome.summary()), markup=False, highlight=False)
        if self._documents is not None:
            self._bars.advance(self._documents)


def command_progress() -> RunProgress:
    """Live bars when a person watches both streams, the plain lines otherwise."""
    return LiveBars() if sys.stdout.isatty() and sys.stderr.isatty() else DocumentLines()
