"""A document's run in two parts: the steps without checks, then the checked steps.

Dagster records every asset check of a run's steps as planned when the run is created, and a
planned check whose run failed reads "execution failed" for that document; the UI sums a
partitioned check over every document, so one file failing anywhere above the checked steps read
as its checks failed. A document's steps therefore run as two runs of the ingest job, tagged
with their part: "landing" (raw_documents to table_markdown, no check planned) and, only once
that run succeeded, "checked" (document_chunks and below, with their checks; a blocking check
still gates the steps after it in that run). A document failing before its checked steps has
its checks not run rather than failed. When only one part is stale, one run does.

A file that raw_documents refuses gets a landing run of raw_documents alone
(`defs.batches.plan_document`).

The CLI runs the parts one after the other (`rag_assets.runner.ingest`); in the daemon the
inbox sensor and the refresh schedule request the first part and `checked_part_sensor` the next
one when it succeeds. A batch of documents runs its parts the same way (`defs/batches.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_assets.defs.assets import CHECKED, PIPELINE

RAW = "raw_documents"
PART_TAG = "rag_assets/part"
LANDING_PART = "landing"
CHECKED_PART = "checked"
# What a run holds, in the files' names (its partition tags hold keys).
DOCUMENTS_TAG = "rag_assets/documents"


def documents_tags(paths: Sequence[str]) -> dict[str, str]:
    """The run's files under the inbox: one, or a batch's first and last and how many."""
    if not paths or not all(paths):
        return {}
    if len(paths) == 1:
        return {DOCUMENTS_TAG: paths[0]}
    return {DOCUMENTS_TAG: f"{paths[0]} … {paths[-1]} ({len(paths)} documents)"}


@dataclass(frozen=True)
class RunPart:
    """One run of a document: which part it is and the steps it names, in graph order."""

    name: str  # "" for a run of every step at once (a backfill's)
    assets: tuple[str, ...]

    @property
    def tags(self) -> dict[str, str]:
        return {PART_TAG: self.name} if self.name else {}


def split_parts(assets: Sequence[str]) -> list[RunPart]:
    """`assets` (graph order) as the runs that execute them: the steps before the first checked
    one, then the rest; a part with no step is left out."""
    first_checked = next((i for i, a in enumerate(assets) if a in CHECKED), len(assets))
    parts = [
        RunPart(LANDING_PART, tuple(assets[:first_checked])),
        RunPart(CHECKED_PART, tuple(assets[first_checked:])),
    ]
    return [p for p in parts if p.assets]


def next_part(landed: Sequence[str]) -> RunPart | None:
    """The run that follows a successful landing run of `landed`: the pipeline's steps below
    the last one it ran, as far as the next part goes."""
    last = max(PIPELINE.index(a) for a in landed)
    rest = split_parts(PIPELINE[last + 1 :])
    return rest[0] if rest else None
