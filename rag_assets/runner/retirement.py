"""After an ingest: each document once, under the key the UI shows now."""

from __future__ import annotations

from collections.abc import Iterable

from dagster import DagsterInstance

from rag_assets.defs.lifecycle import retire_superseded
from rag_assets.defs.resources import MilvusResource
from rag_assets.removal import DataFolder
from rag_assets.runner.receipt import DocumentOutcome
from rag_assets.settings import Settings


def retire_earlier_keys(
    settings: Settings,
    instance: DagsterInstance,
    milvus: MilvusResource,
    outcomes: Iterable[DocumentOutcome],
) -> None:
    """The earlier keys of the documents indexed by this ingest go: their stored traces and
    partitions, not their inbox files (`defs.lifecycle.retire_superseded`)."""
    indexed = {o.source_path: o.doc_id for o in outcomes if o.success and not o.skipped}
    retire_superseded(instance, DataFolder.of(settings), milvus, indexed)
