"""Incremental runs: what Dagster cannot see by itself, reported as observations, then staleness.

The inbox files and each document's settings are observable source assets whose data versions
are the file's sha256 and a digest of the settings that step reads. The CLI, the sensor and the refresh
schedule report a new observation only when a version changed; Dagster's stale status then says
exactly which documents and which steps must run again (a new file: all of them; a new template
for one collection: `document_chunks` and below for its documents; nothing changed: none).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from dagster import (
    AssetKey,
    AssetObservation,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    DataVersion,
    DataVersionsByPartition,
    MetadataValue,
    ObserveResult,
    SourceAsset,
    observable_source_asset,
)

from rag_assets.defs.dagster_private import (
    DATA_VERSION_TAG,
    AssetGraphView,
    CachingStaleStatusResolver,
    StaleStatus,
    TemporalContext,
    events_written_together,
    extract_data_provenance_from_entry,
    get_current_datetime,
)
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.pipeline import pipeline_order
from rag_assets.defs.status import latest_document_runs
from rag_assets.index.schema import ENGINE_BM25
from rag_assets.redaction import redact_url
from rag_assets.sources.inbox import InboxFile, scan_folder, sha256_file
from rag_assets.vocabulary import packs_fingerprint

RESOURCES = ["inbox", "parser", "collections", "embedding", "llm", "milvus"]


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


@dataclass(frozen=True)
class Reading:
    """An observed source's version and the values it is the hash of, shown in the UI."""

    version: str
    values: dict[str, Any]

    def metadata(self) -> dict[str, Any]:
        return {name: _shown(value) for name, value in self.values.items()}


def _shown(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return MetadataValue.json(value)
    return MetadataValue.text("(none)") if value is None else value


def _settings(values: dict[str, Any]) -> Reading:
    return Reading(digest(values), values)


def _inbox_file(r, file: InboxFile) -> Reading:
    sha = sha256_file(file.path)
    return Reading(sha, {"path": file.relative_path, "size_bytes": file.size, "sha256": sha})


def _parser_settings(r, file: InboxFile) -> Reading:
    plan = r.collections.plan(file.relative_path)
    return _settings({"parser": plan.parser, "docling": r.parser.docling_artifacts_path})


def _template_settings(r, file: InboxFile) -> Reading:
    plan = r.collections.plan(file.relative_path)
    llm = r.llm.settings()
    return _settings(
        {
            "template": plan.template,
            "options": plan.options,
            "vocabularies": packs_fingerprint(plan.options.get("vocabularies")),
            "tokenizer": r.embedding.model,
            "llm": llm.model if llm.enabled else None,
        }
    )


def _vision_settings(r) -> Reading:
    llm = r.llm.settings()
    return _settings(
        {
            "vision_model": (llm.vision_model or llm.model) if llm.vision_enabled else None,
            "dpi": r.llm.vision_dpi,
            "picture_tables": r.llm.include_picture_tables,
        }
    )


def _embedding_settings(r) -> Reading:
    values = {"model": r.embedding.model, "kind": r.embedding.kind}
    # FlagEmbedding keeps the digest it had; another runtime's vectors differ, so re-embed.
    runtime = r.embedding.vectors_version()
    return _settings(values | ({"runtime": runtime} if runtime else {}))


def _index_settings(r) -> Reading:
    bm25 = (r.milvus.bm25_k1, r.milvus.bm25_b)
    values = {"uri": r.milvus.uri, "analyzer": r.milvus.text_analyzer, "model": r.embedding.model}
    # The engine's own k1 and b keep the version indexes had before these were settings.
    reading = _settings(values | ({"bm25": list(bm25)} if bm25 != ENGINE_BM25 else {}))
    # The URI may carry credentials: hashed into the version, shown redacted.
    return Reading(reading.version, reading.values | {"uri": redact_url(r.milvus.uri)})


# How each observed asset is read: per document, or one for all documents.
PER_DOCUMENT: dict[str, Callable[[Any, InboxFile], Reading]] = {
    "inbox_files": _inbox_file,
    "parser_settings": _parser_settings,
    "template_settings": _template_settings,
}
SHARED: dict[str, Callable[[Any], Reading]] = {
    "normalize_settings": lambda r: _settings({"repairs_off": sorted(r.parser.repairs_off)}),
    "vision_settings": _vision_settings,
    "embedding_settings": _embedding_settings,
    "index_settings": _index_settings,
}
# Each step of a document's run reads one of these besides its parents (its `deps`).
OBSERVED_SOURCES = [*PER_DOCUMENT, *SHARED]
DESCRIPTIONS = {
    "inbox_files": "A document's file in the inbox: its path, size and sha256 (its data version).",
    "parser_settings": "The parser a document gets (collections, settings, Docling models).",
    "template_settings": "The template and options a document gets, the tokenizer and any LLM.",
    "normalize_settings": "The IR repairs left out (RAG_ASSETS_REPAIRS_OFF).",
    "vision_settings": "The vision model and rendering options for tables.",
    "embedding_settings": "The embedding model, its kind and the runtime that encodes with it.",
    "index_settings": "The Milvus URI, the text analyzer, BM25's k1 and b and the model the collection is named after.",
}


def observation(asset: str, reading: Reading, partition: str | None = None) -> AssetObservation:
    """What the UI shows for an observed source: the values on the observation, their hash as
    its data version."""
    return AssetObservation(
        asset,
        partition=partition,
        tags={DATA_VERSION_TAG: reading.version},
        metadata=reading.metadata(),
    )


def _known_files(context) -> list[InboxFile]:
    inbox = context.resources.inbox
    known = set(context.instance.get_dynamic_partitions(documents_partitions.name))
    scan = scan_folder(inbox.inbox, inbox.follow_symlinks)
    return [f for f in scan.files if f.partition_key in known]


def _per_document_source(name: str) -> SourceAsset:
    @observable_source_asset(
        name=name,
        partitions_def=documents_partitions,
        group_name="sources",
        required_resource_keys=set(RESOURCES),
        description=DESCRIPTIONS[name],
    )
    def observe(context) -> DataVersionsByPartition:
        # Logged here with their values: Dagster's DataVersionsByPartition carries no metadata.
        for file in _known_files(context):
            reading = PER_DOCUMENT[name](context.resources, file)
            context.log_event(observation(name, reading, file.partition_key))
        return DataVersionsByPartition({})

    return observe


def _shared_source(name: str) -> SourceAsset:
    @observable_source_asset(
        name=name,
        group_name="sources",
        required_resource_keys=set(RESOURCES),
        description=DESCRIPTIONS[name],
    )
    def observe(context) -> ObserveResult:
        reading = SHARED[name](context.resources)
        return ObserveResult(data_version=DataVersion(reading.version), metadata=reading.metadata())

    return observe


# Observable sources: "Observe" in the UI reads them all again; the CLI, the inbox sensor and the
# refresh schedule report only what changed.
observed_sources = [
    *(_per_document_source(name) for name in PER_DOCUMENT),
    *(_shared_source(name) for name in SHARED),
]


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
    r = SimpleNamespace(**resources)
    current: dict[tuple[str, str | None], Reading] = {
        (asset, None): read(r) for asset, read in SHARED.items()
    }
    for file in files:
        for asset, read in PER_DOCUMENT.items():
            current[(asset, file.partition_key)] = read(r, file)
    keys = [f.partition_key for f in files]
    latest = {
        asset: _latest_versions(instance, asset, keys if asset in PER_DOCUMENT else None)
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
    with events_written_together(instance):  # one write for a folder of new files
        for observation in observations:
            instance.report_runless_asset_event(observation)
    return len(observations)


@dataclass(frozen=True)
class PartitionPlan:
    partition_key: str
    assets: tuple[str, ...]  # what must run, in graph order; empty when everything is fresh
    reasons: tuple[str, ...]


def _fresh_documents(instance: DagsterInstance, asset_graph, keys: list[str]) -> set[str]:
    """The documents whose every step is fresh, read in one or two queries per asset for all.

    A step is fresh when its latest materialization recorded the step's current code version, no
    partitioned input has a record after the one the step saw, and each shared input still has
    the version the step saw: what Dagster's stale status checks one partition at a time, in
    several queries each. Anything else (missing, changed, re-observed, no code version) is left
    to Dagster's resolver.
    """
    pipeline = pipeline_order(asset_graph.assets_defs)
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
    shared = {name: _latest_versions(instance, name, None).get(None) for name in SHARED}
    recorded = {}
    for asset in pipeline:
        ids = [id_ for (name, _), id_ in latest.items() if name == asset]
        if ids:
            records = instance.fetch_materializations(
                AssetRecordsFilter(asset_key=AssetKey(asset), storage_ids=ids), limit=len(ids)
            ).records
            for record in records:
                recorded[(asset, record.partition_key)] = extract_data_provenance_from_entry(
                    record.event_log_entry
                )

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
    `_fresh_documents` are not asked one by one.
    """
    partition_keys = list(partition_keys)
    pipeline = pipeline_order(asset_graph.assets_defs)
    fresh = _fresh_documents(instance, asset_graph, partition_keys)
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
