"""Data versions and metadata Dagster records for partitions: a step's input version of an
observed partitioned parent, read from its observations (`_partitions_data_version`), and each
document's own data version and metadata on a batch's output (`set_partition_data_versions`,
`add_partition_metadata`). Its replacements of Dagster's functions are installed on import of
the package (`install`)."""

from __future__ import annotations

from collections.abc import Mapping
from hashlib import sha256

from dagster import (
    AssetMaterialization,
    DagsterEventType,
    DagsterInvariantViolationError,
    DataVersion,
)
from dagster._core.definitions.data_version import (
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
)
from dagster._core.execution.context.data_version_cache import DataVersionCache
from dagster._core.execution.plan import execute_step


def _partitions_data_version(self: DataVersionCache, key, partition_keys):
    """Dagster's input version of a partitioned parent, read from its observations when it is
    observed rather than materialized (dagster-io/dagster#33988, fixed this way by the open
    #34051): Dagster 1.13 reads materializations only, so every step reading an observed source
    recorded `input_data_version/<source>` as the hash of nothing (e3b0c442...). An observed
    source's partitions also carry materializations, which Dagster's partition status counts
    (`observed_sources.recorded`): its observations stay what it is versioned by. The same hash
    of the partitions' versions, sorted by partition, as Dagster computes for materializations."""
    storage = self._context.instance.event_log_storage
    # As Dagster's stale status reads a partitioned parent's versions (`_is_dep_updated`).
    observed = self._context.job_def.asset_layer.asset_graph.get(key).is_external
    event_type = (
        DagsterEventType.ASSET_OBSERVATION if observed else DagsterEventType.ASSET_MATERIALIZATION
    )
    tags = storage.get_latest_tags_by_partition(
        key, event_type, [DATA_VERSION_TAG], asset_partitions=list(partition_keys)
    )
    versions = [tags[partition][DATA_VERSION_TAG] for partition in sorted(tags)]
    return DataVersion(sha256("".join(versions).encode("utf8")).hexdigest())


# {(run id, asset key): {partition: data version}}: a batch's outputs' own versions, set by the
# step just before its output (`set_partition_data_versions`) and taken as its events are made.
_PARTITION_DATA_VERSIONS: dict[tuple[str, object], dict[str, str]] = {}


def add_partition_metadata(context, metadata: Mapping[str, Mapping[str, object]]) -> None:
    """Each partition's own metadata on the materializations of the step's next output, as
    `context.add_asset_metadata(partition_key=)` adds it, with the step's partitions read once:
    Dagster reads every partition of the definition back from the instance on each call, so a
    batch's metadata cost its documents times all documents known."""
    targeted = set(context.partition_keys)
    if stray := sorted(set(metadata) - targeted):
        raise DagsterInvariantViolationError(f"partitions not targeted by the step: {stray}")
    step = context.op_execution_context._step_execution_context
    for key, values in metadata.items():
        step._metadata_accumulator = step._metadata_accumulator.with_additional_asset_metadata(
            asset_key=context.assets_def.key, metadata=values, partition_key=key
        )


def set_partition_data_versions(context, versions: dict[str, str]) -> None:
    """The data version of each partition of the output the step yields next: Dagster takes one
    version for a step's output, so a batch's documents would otherwise share Dagster's logical
    one, and a document re-made identically in a batch would not leave its children fresh as it
    does alone."""
    _PARTITION_DATA_VERSIONS[(context.run.run_id, context.assets_def.key)] = versions


def _with_partition_data_versions(*args):
    """Dagster's materialization events for an output, each partition's data version its own
    where the step set one (as a document alone sets it on its Output). The arguments are
    Dagster's: (asset_key, asset_partitions, output, output_def, io_manager_metadata,
    step_context, execution_type), checked by test_dagster_private."""
    asset_key, step_context = args[0], args[5]
    versions = _PARTITION_DATA_VERSIONS.pop((step_context.run_id, asset_key), {})
    events = DAGSTER_OUTPUT_ASSET_EVENTS(*args)
    for event in events:
        version = versions.get(getattr(event, "partition", None))
        if version is None or not isinstance(event, AssetMaterialization):
            yield event
            continue
        yield AssetMaterialization(
            asset_key=event.asset_key,
            partition=event.partition,
            metadata=event.metadata,
            tags={
                **event.tags,
                DATA_VERSION_TAG: version,
                DATA_VERSION_IS_USER_PROVIDED_TAG: "true",
            },
        )


# Dagster's originals, kept to check (test_dagster_private) that what is replaced is still
# Dagster's, as it was.
DAGSTER_PARTITIONS_DATA_VERSION = DataVersionCache._get_partitions_data_version_from_keys
DAGSTER_OUTPUT_ASSET_EVENTS = execute_step._get_output_asset_events


def install() -> None:
    """An observed parent's input version and a batch's per-partition versions in place of
    Dagster's."""
    DataVersionCache._get_partitions_data_version_from_keys = _partitions_data_version
    execute_step._get_output_asset_events = _with_partition_data_versions
