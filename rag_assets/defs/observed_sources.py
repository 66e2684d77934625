"""What Dagster cannot see by itself, as observable source assets: the inbox files and each
document's settings, whose data versions are the file's sha256 and a digest of the settings that
step reads. Each step of a document's run reads one of them besides its parents, so Dagster's
stale status says which documents and steps a change re-runs (a new file: all of them; a new
template for one collection: `document_chunks` and below for its documents; nothing changed:
none)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    DagsterEventType,
    DagsterInstance,
    DataVersion,
    DataVersionsByPartition,
    MetadataValue,
    ObserveResult,
    SourceAsset,
    observable_source_asset,
)

from rag_assets.defs.dagster_private import DATA_VERSION_TAG
from rag_assets.defs.data_versions import digest
from rag_assets.defs.partitions import documents_partitions
from rag_assets.index.schema import ENGINE_BM25
from rag_assets.redaction import redact_url
from rag_assets.sources.inbox import InboxFile, scan_folder, sha256_file
from rag_assets.vocabulary import packs_fingerprint

RESOURCES = ["inbox", "parser", "collections", "embedding", "llm", "milvus"]


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
    return _settings({"parser": plan.parser, "docling": r.parser.parsing.docling_artifacts_path})


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
    # Vectors of the context (the first choice) keep the digest they had before the choice.
    part = r.embedding.embedded_part()
    return _settings(
        values
        | ({"runtime": runtime} if runtime else {})
        | ({"embedded": part} if part != "context" else {})
    )


def _index_settings(r) -> Reading:
    index = r.milvus.index
    bm25 = (index.bm25_k1, index.bm25_b)
    values = {"uri": r.milvus.uri, "analyzer": index.text_analyzer, "model": r.embedding.model}
    # The engine's own k1 and b keep the version indexes had before these were settings.
    reading = _settings(values | ({"bm25": list(bm25)} if bm25 != ENGINE_BM25 else {}))
    # The URI may carry credentials: hashed into the version, shown redacted. The English
    # analyzer is shown but not versioned: a collection keeps the one it was made with, so
    # re-indexing its documents would change nothing.
    shown = {"uri": redact_url(r.milvus.uri), "english_analyzer": index.english_analyzer}
    return Reading(reading.version, reading.values | shown)


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
# Dagster's partition status counts materializations only, so each of a per-document source's
# partitions is also recorded as materialized, with the same values and data version, whenever
# it is observed with a new version: the graph and the Partitions tab show every document's file
# and settings, while what a step reads stays versioned by the observations.
OBSERVED_PER_DOCUMENT = (
    "observed for each document (inbox sensor, `rag-assets ingest`, refresh schedule, Observe); "
    "each new version also recorded as the document's materialization"
)
PER_DOCUMENT_NOTE = (
    f"\n\nThis source is {OBSERVED_PER_DOCUMENT}, so its Partitions tab shows every document "
    "with the values last read. Nothing runs to make it: a document's file or settings are "
    "read where they are."
)


def observation(asset: str, reading: Reading, partition: str | None = None) -> AssetObservation:
    """What the UI shows for an observed source: the values on the observation, their hash as
    its data version."""
    return AssetObservation(
        asset,
        partition=partition,
        tags={DATA_VERSION_TAG: reading.version},
        metadata=reading.metadata(),
    )


def recorded(asset: str, reading: Reading, partition: str) -> AssetMaterialization:
    """A per-document source's partition as Dagster's partition status counts it: the same
    values and version as its observation, reported after it. A step's input provenance reads
    the latest event of its parent (a materialization, once there is one) as its cursor, so each
    observation is followed by its materialization and no observation is newer than that."""
    return AssetMaterialization(
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
        description=DESCRIPTIONS[name] + PER_DOCUMENT_NOTE,
        metadata={"status": OBSERVED_PER_DOCUMENT},
    )
    def observe(context) -> DataVersionsByPartition:
        # Logged here with their values: Dagster's DataVersionsByPartition carries no metadata.
        for file in _known_files(context):
            reading = PER_DOCUMENT[name](context.resources, file)
            context.log_event(observation(name, reading, file.partition_key))
            context.log_event(recorded(name, reading, file.partition_key))
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


def latest_versions(
    instance: DagsterInstance, asset: str, partitions: list[str] | None
) -> dict[str | None, str]:
    """The data versions last observed for `asset`: per partition, or one (under None) for a
    shared source."""
    key = AssetKey(asset)
    if partitions is None:
        record = instance.get_latest_data_version_record(key, is_source=True)
        tags = record.event_log_entry.tags if record else {}
        return {None: tags[DATA_VERSION_TAG]} if DATA_VERSION_TAG in tags else {}
    latest = instance.event_log_storage.get_latest_tags_by_partition(
        key, DagsterEventType.ASSET_OBSERVATION, [DATA_VERSION_TAG], asset_partitions=partitions
    )
    return {p: tags[DATA_VERSION_TAG] for p, tags in latest.items() if DATA_VERSION_TAG in tags}
