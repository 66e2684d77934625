"""Removing documents, Dagster's side: their runs (events, logs, materialization metadata with
chunk previews), and their events in batches' runs, go with their files, cache entries and index
rows (`rag_assets.removal`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from dagster import DagsterInstance, RunsFilter

from rag_assets.defs.dagster_private import (
    KEYS_A_STATEMENT,
    PARTITION_NAME_TAG,
    delete_document_events,
    runs_with_document_events,
)
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import MilvusResource
from rag_assets.index.lite import purge_deleted_rows
from rag_assets.removal import DataFolder, Removed
from rag_assets.removal import remove_documents as remove_stored
from rag_assets.sources.keys import earlier_partition_keys_for


def remove_documents(
    instance: DagsterInstance,
    folder: DataFolder,
    milvus: MilvusResource,
    keys: Iterable[str],
    keep_inbox_files: bool = False,
) -> list[Removed]:
    """Every stored trace of these documents; their partitions are left to the caller (the
    sensor deletes them through its result, the CLI directly). `keep_inbox_files`: for
    documents stored again under their file's current key (`superseded_keys`)."""
    keys = sorted(set(keys))
    if not keys:
        return []
    live = set(instance.get_dynamic_partitions(documents_partitions.name)) - set(keys)
    # No Lite file yet means no index: opening one would create it.
    has_index = not milvus.uri.endswith(".db") or Path(milvus.uri).exists()
    if has_index:
        with milvus.open() as index:
            removed = remove_stored(folder, keys, live, index, keep_inbox_files)
        purge_deleted_rows(milvus.uri)
    else:
        removed = remove_stored(folder, keys, live, None, keep_inbox_files)
    own_runs = {
        run.run_id
        for start in range(0, len(keys), KEYS_A_STATEMENT)
        for run in instance.get_runs(
            RunsFilter(tags={PARTITION_NAME_TAG: keys[start : start + KEYS_A_STATEMENT]})
        )
    }
    carried = runs_with_document_events(instance, keys)
    for run_id in sorted(own_runs | set(carried)):
        run = instance.get_run_by_id(run_id)
        # A run still going writes on; the inbox sensor removes what it leaves on a later
        # tick (a fixed copy without a partition), and the run with it.
        if run is None or not run.is_finished:
            continue
        if run_id in own_runs:
            instance.delete_run(run_id)
        else:  # a batch's run: the other documents' history stays
            delete_document_events(instance, run_id, sorted(carried[run_id]))
    return removed


def superseded_keys(instance: DagsterInstance, documents: Mapping[str, str]) -> dict[str, str]:
    """Partitions of a data folder ingested under an earlier key scheme: each earlier key of
    `documents` (relative path -> its key) still a partition, with its key now.

    Such a document is ingested again under its key now, then the earlier one is removed like a
    deleted document (`remove_documents` keeping the file): nothing is renamed in place, so a
    stop at any point leaves either the earlier document whole and searchable or both, never a
    document half under each key (its stored files, index rows, chunk ids and Dagster's history
    all hold the key)."""
    known = set(instance.get_dynamic_partitions(documents_partitions.name))
    return {
        earlier: key
        for path, key in documents.items()
        for earlier in earlier_partition_keys_for(path)
        if earlier != key and earlier in known
    }


def retire_superseded(
    instance: DagsterInstance,
    folder: DataFolder,
    milvus: MilvusResource,
    indexed: Mapping[str, str],
) -> list[Removed]:
    """The earlier keys of documents `indexed` now (relative path -> key): their stored traces
    and partitions removed, their inbox files kept."""
    superseded = superseded_keys(instance, indexed)
    removed = remove_documents(instance, folder, milvus, superseded, keep_inbox_files=True)
    for key in superseded:
        instance.delete_dynamic_partition(documents_partitions.name, key)
    return removed
