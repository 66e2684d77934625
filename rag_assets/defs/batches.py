"""How documents are cut into runs: batches of neighbouring partitions that need the same steps,
bounded in documents and pages. The CLI's ingest, the inbox sensor and the refresh schedule cut
them the same way; a batch whose run fails is split the same way too (the CLI at once, the
daemon through `batch_split_sensor`).

A run over several documents names a range of partition keys, so a batch holds documents whose
keys follow one another in the instance's partition order (a range around another document would
run it too). A file raw_documents refuses runs alone (it fails at once, on its own partition),
as does a document longer than the page budget: its steps are long enough for a run's fixed
costs not to matter, and a batch of long documents would hold all of them in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dagster import AssetKey, RunRequest

from rag_assets.defs.dagster_private import partition_tags
from rag_assets.defs.landing import LANDING_PART, RAW, RunPart, documents_tags, split_parts
from rag_assets.defs.resources import InboxResource
from rag_assets.errors import DocumentError
from rag_assets.settings.groups import BATCH_DOCUMENTS, BATCH_PAGES
from rag_assets.sources.raw import check_document


@dataclass(frozen=True)
class PlannedDocument:
    key: str
    relative_path: str
    parts: tuple[RunPart, ...]  # the runs it needs, in order; none when it is fresh
    pages: int  # 1 where the format has no pages
    position: int  # its place in the instance's partition order
    alone: bool = False  # refused by raw_documents' first checks: runs by itself


@dataclass(frozen=True)
class Batch:
    documents: tuple[PlannedDocument, ...]
    parts: tuple[RunPart, ...]  # the runs still to make for all of them, in order

    @property
    def keys(self) -> list[str]:
        return [d.key for d in self.documents]


def plan_document(
    inbox: InboxResource, key: str, relative_path: str, assets: Sequence[str], position: int
) -> PlannedDocument:
    """A document's runs for its stale `assets` (graph order), its pages and its place in
    partition order. A file raw_documents refuses (missing, over a limit, not of its type: the
    checks it makes before copying) gets a run of raw_documents alone, so it fails where it
    fails and the steps below it read missing, not failed."""
    if not assets:
        return PlannedDocument(key, relative_path, (), 1, position)
    try:
        _, pages = check_document(
            inbox.inbox / relative_path, relative_path, inbox.max_file_mb, inbox.limits
        )
    except (DocumentError, OSError):
        parts = [RunPart(LANDING_PART, (RAW,))] if RAW in assets else split_parts(assets)
        return PlannedDocument(key, relative_path, tuple(parts), 1, position, alone=True)
    return PlannedDocument(
        key, relative_path, tuple(split_parts(assets)), max(pages or 1, 1), position
    )


def partition_positions(known: Sequence[str], adding: Sequence[str] = ()) -> dict[str, int]:
    """Each key's place in partition order: the instance's keys, then those being added."""
    return {key: i for i, key in enumerate([*known, *(k for k in adding if k not in known)])}


def batch_request(batch: Batch, run_key: str | None, tags: Mapping[str, str]) -> RunRequest:
    """The daemon's run of a batch's next part: one partition, or the batch's range."""
    part = batch.parts[0]
    keys = batch.keys
    return RunRequest(
        run_key=run_key,
        partition_key=keys[0] if len(keys) == 1 else None,
        # Named, not implied by the job: automation then knows this run executes every step
        # below a parent it updates, and requests none of them again.
        asset_selection=[AssetKey(a) for a in part.assets],
        tags={
            **documents_tags([d.relative_path for d in batch.documents]),
            **tags,
            **part.tags,
            **(partition_tags(keys) if len(keys) > 1 else {}),
        },
    )


def cut_batches(
    documents: Iterable[PlannedDocument],
    max_documents: int = BATCH_DOCUMENTS,
    max_pages: int = BATCH_PAGES,
) -> list[Batch]:
    """The runs' batches, in partition order: neighbours needing the same runs, at most
    `max_documents` documents and `max_pages` pages each (a longer document alone)."""
    batches: list[Batch] = []
    current: list[PlannedDocument] = []

    def close() -> None:
        if current:
            batches.append(Batch(tuple(current), current[0].parts))
            current.clear()

    for document in sorted((d for d in documents if d.parts), key=lambda d: d.position):
        fits = (
            current
            and not document.alone
            and not current[-1].alone
            and document.parts == current[-1].parts
            and document.position == current[-1].position + 1
            and len(current) < max_documents
            and sum(d.pages for d in current) + document.pages <= max_pages
        )
        if not fits:
            close()
        current.append(document)
    close()
    return batches


def split_failed(batch: Batch, failed: Sequence[str]) -> list[Batch]:
    """After a batch's run failed naming `failed`: each of those alone, then the others again in
    neighbouring groups, each with the runs the batch had left."""
    named = set(failed) & set(batch.keys)
    if not named:  # the failure names no document of the batch: each runs alone
        named = set(batch.keys)
    alone = [Batch((d,), batch.parts) for d in batch.documents if d.key in named]
    rest: list[Batch] = []
    group: list[PlannedDocument] = []
    for document in batch.documents:
        if document.key in named:
            if group:
                rest.append(Batch(tuple(group), batch.parts))
            group = []
        else:
            group.append(document)
    if group:
        rest.append(Batch(tuple(group), batch.parts))
    return [*alone, *rest]
