"""Change reports: the CLI, the inbox sensor and the refresh schedule report a new observation
of a source only when its version changed, so an unchanged inbox writes nothing and Dagster's
stale status follows exactly what did change."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import SimpleNamespace

from dagster import AssetObservation, DagsterInstance

from rag_assets.defs.dagster_private import events_written_together, report_observations_together
from rag_assets.defs.observed_sources import (
    OBSERVED_SOURCES,
    PER_DOCUMENT,
    SHARED,
    Reading,
    latest_versions,
    observation,
)
from rag_assets.sources.inbox import InboxFile


def changed_observations(
    instance: DagsterInstance, resources: Mapping[str, object], files: Iterable[InboxFile]
) -> list[AssetObservation]:
    """Observations for every version that differs from the latest one on the instance."""
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
    return [
        observation(asset, reading, partition)
        for (asset, partition), reading in current.items()
        if latest[asset].get(partition) != reading.version
    ]


def report_changes(
    instance: DagsterInstance, resources: Mapping[str, object], files: Iterable[InboxFile]
) -> int:
    observations = changed_observations(instance, resources, files)
    with events_written_together(instance):  # one transaction for a folder of new files
        report_observations_together(instance, observations)
    return len(observations)
