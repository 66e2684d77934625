"""Incremental runs: what Dagster cannot see by itself, reported as observations, then staleness.

The inbox files and each document's settings are external assets whose data versions are the
file's sha256 and a digest of the settings that step reads. The CLI, the sensor and the refresh
schedule report a new observation only when a version changed; Dagster's stale status then says
exactly which documents and which steps must run again (a new file: all of them; a new template
for one collection: `document_chunks` and below for its documents; nothing changed: none).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from dagster import (
    AssetKey,
    AssetObservation,
    AssetSpec,
    DagsterEventType,
    DagsterInstance,
    DataVersion,
    RunsFilter,
)
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import (
    DATA_VERSION_TAG,
    CachingStaleStatusResolver,
    StaleStatus,
)
from dagster._core.storage.tags import PARTITION_NAME_TAG
from dagster._time import get_current_datetime

from rag_assets.defs.partitions import documents_partitions
from rag_assets.sources.inbox import InboxFile, sha256_file

# The executable assets in graph order, and the external asset each one reads besides its parents.
PIPELINE = [
    "raw_documents",
    "parsed_documents",
    "normalized_documents",
    "table_markdown",
    "document_chunks",
    "chunk_embeddings",
    "vector_index",
]
OBSERVED = {
    "raw_documents": "inbox_files",
    "parsed_documents": "parser_settings",
    "table_markdown": "vision_settings",
    "document_chunks": "template_settings",
    "chunk_embeddings": "embedding_settings",
    "vector_index": "index_settings",
}
PER_DOCUMENT = {"inbox_files", "parser_settings", "template_settings"}

observed_specs = [
    AssetSpec(
        "inbox_files",
        partitions_def=documents_partitions,
        group_name="sources",
        description="A document's file in the inbox; its data version is the file's sha256.",
    ),
    AssetSpec(
        "parser_settings",
        partitions_def=documents_partitions,
        group_name="sources",
        description="The parser a document gets (collections, settings, Docling models).",
    ),
    AssetSpec(
        "template_settings",
        partitions_def=documents_partitions,
        group_name="sources",
        description="The template and options a document gets, the tokenizer and any LLM.",
    ),
    AssetSpec(
        "vision_settings",
        group_name="sources",
        description="The vision model and rendering options for tables.",
    ),
    AssetSpec(
        "embedding_settings", group_name="sources", description="The embedding model and its kind."
    ),
    AssetSpec(
        "index_settings",
        group_name="sources",
        description="The Milvus URI, the text analyzer and the model the collection is named after.",
    ),
]


def digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]


def content_version(payload: bytes | str) -> DataVersion:
    """A data version from an output's own bytes: identical output, identical version, so an
    unchanged result of a re-run leaves everything below it fresh."""
    data = payload.encode() if isinstance(payload, str) else payload
    return DataVersion(hashlib.sha256(data).hexdigest()[:32])


def arrow_version(table) -> DataVersion:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return content_version(sink.getvalue().to_pybytes())


def global_versions(resources: Mapping[str, object]) -> dict[str, str]:
    embedding, llm, milvus = resources["embedding"], resources["llm"], resources["milvus"]
    vision = llm.settings()
    return {
        "vision_settings": digest(
            {
                "vision_model": (vision.vision_model or vision.model)
                if vision.vision_enabled
                else None,
                "dpi": llm.vision_dpi,
                "picture_tables": llm.include_picture_tables,
            }
        ),
        "embedding_settings": digest({"model": embedding.model, "kind": embedding.kind}),
        "index_settings": digest(
            {"uri": milvus.uri, "analyzer": milvus.text_analyzer, "model": embedding.model}
        ),
    }


def document_versions(resources: Mapping[str, object], file: InboxFile) -> dict[str, str]:
    plan = resources["collections"].plan(file.relative_path)
    llm = resources["llm"].settings()
    return {
        "inbox_files": sha256_file(file.path),
        "parser_settings": digest(
            {"parser": plan.parser, "docling": resources["parser"].docling_artifacts_path}
        ),
        "template_settings": digest(
            {
                "template": plan.template,
                "options": plan.options,
                "tokenizer": resources["embedding"].model,
                "llm": llm.model if llm.enabled else None,
            }
        ),
    }


def _latest_versions(
    instance: DagsterInstance, asset: str, partitions: list[str] | None
) -> dict[str | None, str]:
    key = AssetKey(asset)
    if partitions is None:
        record = instance.get_latest_data_version_record(key, is_source=True)
        tags = record.event_log_entry.tags if record else {}
        return {None: tags[DATA_VERSION_TAG]} if DATA_VERSION_TAG in tags else {}
    latest = instance.event_log_storage.get_latest_tags_by_partition(
        key, DagsterEventType.ASSET_OBSERVATION, [DATA_VERSION_TAG], asset_partitions=partitions
    )
    return {p: tags[DATA_VERSION_TAG] for p, tags in latest.items() if DATA_VERSION_TAG in tags}


def changed_observations(
    instance: DagsterInstance, resources: Mapping[str, object], files: Iterable[InboxFile]
) -> list[AssetObservation]:
    """Observations for every version that differs from the latest one on the instance."""
    files = list(files)
    current: dict[tuple[str, str | None], str] = {
        (asset, None): version for asset, version in global_versions(resources).items()
    }
    for file in files:
        for asset, version in document_versions(resources, file).items():
            current[(asset, file.partition_key)] = version
    keys = [f.partition_key for f in files]
    latest = {
        asset: _latest_versions(instance, asset, keys if asset in PER_DOCUMENT else None)
        for asset in OBSERVED.values()
    }
    return [
        AssetObservation(asset, partition=partition, tags={DATA_VERSION_TAG: version})
        for (asset, partition), version in current.items()
        if latest[asset].get(partition) != version
    ]


def report_changes(
    instance: DagsterInstance, resources: Mapping[str, object], files: Iterable[InboxFile]
) -> int:
    observations = changed_observations(instance, resources, files)
    for observation in observations:
        instance.report_runless_asset_event(observation)
    return len(observations)


@dataclass(frozen=True)
class PartitionPlan:
    partition_key: str
    assets: tuple[str, ...]  # what must run, in graph order; empty when everything is fresh
    reasons: tuple[str, ...]


def _last_run_failed(instance: DagsterInstance, key: str) -> bool:
    runs = instance.get_runs(filters=RunsFilter(tags={PARTITION_NAME_TAG: key}), limit=1)
    return bool(runs) and runs[0].is_failure


def plan_runs(
    instance: DagsterInstance, asset_graph, partition_keys: Iterable[str]
) -> list[PartitionPlan]:
    """Which steps each document needs, from Dagster's stale status.

    A missing asset or a failed last run re-runs the whole document (a failed blocking check
    leaves an older downstream in place that must not be rebuilt from what failed); otherwise the
    stale steps and everything below them run.
    """
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=asset_graph,
    )
    resolver = CachingStaleStatusResolver(instance, asset_graph, view)
    plans = []
    for key in partition_keys:
        status = {a: resolver.get_status(AssetKey(a), key) for a in PIPELINE}
        missing = [a for a in PIPELINE if status[a] == StaleStatus.MISSING]
        if missing or _last_run_failed(instance, key):
            reasons = [f"{a} missing" for a in missing] or ["last run failed"]
            plans.append(PartitionPlan(key, tuple(PIPELINE), tuple(reasons)))
            continue
        stale = [a for a in PIPELINE if status[a] == StaleStatus.STALE]
        if not stale:
            plans.append(PartitionPlan(key, (), ()))
            continue
        first = PIPELINE.index(stale[0])
        reasons = [
            f"{a}: {cause.reason}"
            + (f" ({cause.dependency.asset_key.to_user_string()})" if cause.dependency else "")
            for a in stale[:1]
            for cause in resolver.get_stale_causes(AssetKey(a), key)
        ]
        plans.append(PartitionPlan(key, tuple(PIPELINE[first:]), tuple(reasons)))
    return plans
