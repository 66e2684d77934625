"""A document's run in two parts: the steps without checks, then the checked steps.

Dagster records every asset check of a run's steps as planned when the run is created, and a
planned check whose run failed reads "execution failed" for that document; the UI sums a
partitioned check over every document, so one file failing anywhere above the checked steps read
as its checks failed. A document's steps therefore run as two runs of the ingest job, tagged
with their part: "landing" (raw_documents to table_markdown, no check planned) and, only once
that run succeeded, "checked" (document_chunks and below, with their checks; a blocking check
still gates the steps after it in that run). A document failing before its checked steps has
its checks not run rather than failed. When only one part is stale, one run does.

A file that raw_documents refuses (missing, over a limit, not of its type: the checks it makes
before copying) gets a landing run of raw_documents alone, so it fails where it fails and the
steps below it read missing, not failed.

The CLI runs the parts one after the other (`rag_assets.runner.ingest`); in the daemon the
inbox sensor and the refresh schedule request the first part and `checked_part_sensor` the next
one when it succeeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_assets.defs.assets import CHECKED, PIPELINE
from rag_assets.defs.resources import InboxResource
from rag_assets.errors import DocumentError
from rag_assets.sources.raw import check_document

RAW = "raw_documents"
PART_TAG = "rag_assets/part"
LANDING_PART = "landing"
CHECKED_PART = "checked"


@dataclass(frozen=True)
class RunPart:
    """One run of a document: which part it is and the steps it names, in graph order."""

    name: str  # "" for a run of every step at once (a backfill's)
    assets: tuple[str, ...]

    @property
    def tags(self) -> dict[str, str]:
        return {PART_TAG: self.name} if self.name else {}


def landing_refused(inbox: InboxResource, relative_path: str) -> bool:
    """Whether raw_documents will fail on this inbox file, by the checks it makes first."""
    try:
        check_document(inbox.inbox / relative_path, relative_path, inbox.max_file_mb, inbox.limits)
    except (DocumentError, OSError):
        return True
    return False


def split_parts(assets: Sequence[str]) -> list[RunPart]:
    """`assets` (graph order) as the runs that execute them: the steps before the first checked
    one, then the rest; a part with no step is left out."""
    first_checked = next((i for i, a in enumerate(assets) if a in CHECKED), len(assets))
    parts = [
        RunPart(LANDING_PART, tuple(assets[:first_checked])),
        RunPart(CHECKED_PART, tuple(assets[first_checked:])),
    ]
    return [p for p in parts if p.assets]


def run_parts(assets: Sequence[str], inbox: InboxResource, relative_path: str) -> list[RunPart]:
    """A document's runs for `assets`: raw_documents alone for a file it refuses."""
    if RAW in assets and landing_refused(inbox, relative_path):
        return [RunPart(LANDING_PART, (RAW,))]
    return split_parts(assets)


def next_part(landed: Sequence[str]) -> RunPart | None:
    """The run that follows a successful landing run of `landed`: the pipeline's steps below
    the last one it ran, as far as the next part goes."""
    last = max(PIPELINE.index(a) for a in landed)
    rest = split_parts(PIPELINE[last + 1 :])
    return rest[0] if rest else None
