"""The run plan: which steps each document needs, from Dagster's stale status over the observed
sources (`observed_sources`) and the steps' code versions.

In `defs/` rather than `runner/`: the refresh schedule plans its runs with it as the CLI does,
and the skin may not import what drives it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dagster import AssetKey, DagsterEventType, DagsterInstance, DataProvenance

from rag_assets.defs.dagster_private import (
    AssetGraphView,
    CachingStaleStatusResolver,
    StaleStatus,
    TemporalContext,
    get_current_datetime,
    materialization_tags,
)
from rag_assets.defs.observed_sources import PER_DOCUMENT, SHARED, latest_versions
from rag_assets.defs.pipeline import pipeline_order
from rag_assets.defs.status import latest_document_runs


@dataclass(frozen=True)
class PartitionPlan:
    partition_key: str
    assets: tuple[str, ...]  # what must run, in graph order; empty when everything is fresh
    reasons: tuple[str, ...]


def _latest_ids(instance: DagsterInstance, pipeline: list[str], keys: list[str]) -> dict:
    """(asset, document) -> the storage id of the document's latest observation (a per-document
    source) or materialization (a step), one query an asset for all the documents."""
    latest: dict[tuple[str, str], int] = {}
    for asset in [*PER_DOCUMENT, *pipeline]:
        event = (
            DagsterEventType.ASSET_OBSERVATION
            if asset in PER_DOCUMENT
            else DagsterEventType.ASSET_MATERIALIZATION
        )
        ids = instance.event_log_storage.get_latest_storage_id_by_partition(
            AssetKey(asset), event, set(keys)
        )
        latest.update({(asset, partition): id_ for partition, id_ in ids.items()})
    return latest


def _fresh_documents(
    instance: DagsterInstance, asset_graph, keys: list[str], latest: dict
) -> set[str]:
    """The documents whose every step is fresh, read in one or two queries per asset for all.

    A step is fresh when its latest materialization recorded the step's current code version, no
    partitioned input has a record after the one the step saw, and each shared input still has
    the version the step saw: what Dagster's stale status checks one partition at a time, in
    several queries each. Anything else (missing, changed, re-observed, no code version) is left
    to Dagster's resolver.
    """
    pipeline = pipeline_order(asset_graph.assets_defs)
    shared = {name: latest_versions(instance, name, None).get(None) for name in SHARED}
    materialized = {id_: key for key, id_ in latest.items() if key[0] in pipeline}
    recorded = {
        materialized[id_]: DataProvenance.from_tags(tags)
        for id_, tags in materialization_tags(instance, sorted(materialized)).items()
    }

    def consumed_latest(provenance, dep: AssetKey, document: str) -> bool:
        name = dep.to_user_string()
        if asset_graph.get(dep).is_partitioned:
            # Dagster's test: no record of the input's partition after the one consumed.
            cursor, last = provenance.input_storage_ids.get(dep), latest.get((name, document))
            return cursor is not None and last is not None and last <= cursor
        version = provenance.input_data_versions.get(dep)
        return version is not None and version.value == shared.get(name)

    def fresh(asset: str, document: str) -> bool:
        node = asset_graph.get(AssetKey(asset))
        provenance = recorded.get((asset, document))
        return (
            provenance is not None
            and node.code_version is not None
            and provenance.code_version == node.code_version
            and set(provenance.input_data_versions) == set(node.parent_keys)
            and all(consumed_latest(provenance, dep, document) for dep in node.parent_keys)
        )

    return {document for document in keys if all(fresh(a, document) for a in pipeline)}


def plan_runs(
    instance: DagsterInstance, asset_graph, partition_keys: Iterable[str]
) -> list[PartitionPlan]:
    """Which steps each document needs, from Dagster's stale status.

    A missing asset or a failed last run re-runs the whole document (a failed blocking check
    leaves an older downstream in place that must not be rebuilt from what failed); otherwise the
    stale steps and everything below them run. Documents found fresh by the batch reads of
    `_fresh_documents`, and new documents (no step materialized: every step missing, as the
    resolver would say), are not asked one by one.
    """
    partition_keys = list(partition_keys)
    pipeline = pipeline_order(asset_graph.assets_defs)
    latest = _latest_ids(instance, pipeline, partition_keys)
    fresh = _fresh_documents(instance, asset_graph, partition_keys, latest)
    materialized = {document for (asset, document) in latest if asset in pipeline}
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=asset_graph,
    )
    resolver = CachingStaleStatusResolver(instance, asset_graph, view)
    last_runs = latest_document_runs(instance, partition_keys)
    failed_last = {key for key, run in last_runs.items() if run.is_failure}
    plans = []
    for key in partition_keys:
        if key in fresh and key not in failed_last:
            plans.append(PartitionPlan(key, (), ()))
            continue
        if key not in materialized:
            reasons = tuple(f"{a} missing" for a in pipeline)
            plans.append(PartitionPlan(key, tuple(pipeline), reasons))
            continue
        status = {a: resolver.get_status(AssetKey(a), key) for a in pipeline}
        missing = [a for a in pipeline if status[a] == StaleStatus.MISSING]
        if missing or key in failed_last:
            reasons = [f"{a} missing" for a in missing] or ["last run failed"]
            plans.append(PartitionPlan(key, tuple(pipeline), tuple(reasons)))
            continue
        stale = [a for a in pipeline if status[a] == StaleStatus.STALE]
        if not stale:
            plans.append(PartitionPlan(key, (), ()))
            continue
        first = pipeline.index(stale[0])
        reasons = [
            f"{a}: {cause.reason}"
            + (f" ({cause.dependency.asset_key.to_user_string()})" if cause.dependency else "")
            for a in stale[:1]
            for cause in resolver.get_stale_causes(AssetKey(a), key)
        ]
        plans.append(PartitionPlan(key, tuple(pipeline[first:]), tuple(reasons)))
    return plans
