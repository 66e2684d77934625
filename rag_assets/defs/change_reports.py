"""Change reports: the CLI, the inbox sensor and the refresh schedule report a new observation
of a source only when its version changed, so an unchanged inbox writes nothing and Dagster's
stale status follows exactly what did change. A per-document source's new version is also
recorded as that document's materialization (`observed_sources.recorded`), as is a document's
version observed before sources were recorded so (a data folder made by an earlier release)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import SimpleNamespace

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    DagsterEventType,
    DagsterInstance,
)

from rag_assets.defs.dagster_private import events_written_together, report_events_together
from rag_assets.defs.observed_sources import (
    OBSERVED_SOURCES,
    PER_DOCUMENT,
    SHARED,
    Reading,
    latest_versions,
    observation,
    recorded,
)
from rag_assets.sources.inbox import InboxFile


def source_events(
    instance: DagsterInstance, resources: Mapping[str, object], files: Iterable[InboxFile]
) -> list[AssetObservation | AssetMaterialization]:
    """Observations for every version that differs from the latest one on the instance, then
    the materializations of the per-document ones and of any document's source not yet
    recorded, in that order (`observed_sources.recorded` says why)."""
    files = list(files)
    r = SimpleNamespace(**resources)
    current: dict[tuple[str, str | None], Reading] = {
        (asset, None): read(r) for asset, read in SHARED.items()
    }
    for file in files:
        for asset, read in PER_DOCUMENT.items():
            current[(asset, file.partition_key)] = read(r, file)
    keys = [f.partition_key for f in files]
    latest = {
        asset: latest_versions(instance, asset, keys if asset in PER_DOCUMENT else None)
        for asset in OBSERVED_SOURCES
    }
    changed = {
        place: reading
        for place, reading in current.items()
        if latest[place[0]].get(place[1]) != reading.version
    }
    recorded_before = {
        asset: instance.event_log_storage.get_latest_storage_id_by_partition(
            AssetKey(asset), DagsterEventType.ASSET_MATERIALIZATION, set(keys)
        )
        for asset in PER_DOCUMENT
    }
    return [
        *(
            observation(asset, reading, partition)
            for (asset, partition), reading in changed.items()
        ),
        *(
            recorded(asset, reading, partition)
            for (asset, partition), reading in current.items()
            if partition is not None
            and ((asset, partition) in changed or partition not in recorded_before[asset])
        ),
    ]


def report_changes(
    instance: DagsterInstance, resources: Mapping[str, object], files: Iterable[InboxFile]
) -> int:
    """The changed sources' events reported; how many sources' versions changed."""
    events = source_events(instance, resources, files)
    with events_written_together(instance):  # one transaction for a folder of new files
        report_events_together(instance, events)
    return sum(isinstance(e, AssetObservation) for e in events)
