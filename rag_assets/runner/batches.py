"""How an ingest's documents are cut into runs: batches of neighbouring partitions that need the
same steps, bounded in documents and pages.

A run over several documents names a range of partition keys, so a batch holds documents whose
keys follow one another in the instance's partition order (a range around another document would
run it too). A file raw_documents refuses runs alone (it fails at once, on its own partition),
as does a document longer than the page budget: its steps are long enough for a run's fixed
costs not to matter, and a batch of long documents would hold all of them in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag_assets.defs.landing import RunPart
from rag_assets.defs.partitions import BATCH_DOCUMENTS

# Pages a batch holds at most: a few long documents, or many short ones.
BATCH_PAGES = 400


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
