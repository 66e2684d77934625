"""Removing documents, Dagster's side: their runs (events, logs, materialization metadata with
chunk previews) go with their files, cache entries and index rows (`rag_assets.removal`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dagster import DagsterInstance, RunsFilter

from rag_assets.defs.dagster_private import PARTITION_NAME_TAG
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import MilvusResource
from rag_assets.index.lite import purge_deleted_rows
from rag_assets.removal import DataFolder, Removed, remove_document


def remove_documents(
    instance: DagsterInstance, folder: DataFolder, milvus: MilvusResource, keys: Iterable[str]
) -> list[Removed]:
    """Every stored trace of these documents; their partitions are left to the caller (the
    sensor deletes them through its result, the CLI directly)."""
    keys = sorted(set(keys))
    if not keys:
        return []
    live = set(instance.get_dynamic_partitions(documents_partitions.name)) - set(keys)
    # No Lite file yet means no index: opening one would create it.
    has_index = not milvus.uri.endswith(".db") or Path(milvus.uri).exists()
    if has_index:
        with milvus.open() as index:
            removed = [remove_document(folder, key, live, index) for key in keys]
        purge_deleted_rows(milvus.uri)
    else:
        removed = [remove_document(folder, key, live, None) for key in keys]
    for key in keys:
        for run in instance.get_runs(RunsFilter(tags={PARTITION_NAME_TAG: key})):
            # A run still going writes on; the inbox sensor removes what it leaves on a later
            # tick (a fixed copy without a partition), and the run with it.
            if run.is_finished:
                instance.delete_run(run.run_id)
    return removed
