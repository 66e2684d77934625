"""The inbox sensor and the checked part sensor ticked by hand, what they request applied or run
as the daemon does."""

from __future__ import annotations

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterInstance,
    Definitions,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    build_sensor_context,
)
from dagster._core.definitions.partitions.context import partition_loading_context

from rag_assets.defs.dagster_private import PARTITION_NAME_TAG, execute_in_process, job_origins
from rag_assets.defs.jobs import INGEST_JOB
from rag_assets.runner.ingest import LOCATION_MODULE, WORKSPACE_YAML


def inbox_sensor_tick(
    defs: Definitions, instance: DagsterInstance, cursor: str | None
) -> SensorResult:
    sensor = defs.get_sensor_def("inbox_sensor")
    result = sensor(
        build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources)
    )
    for request in result.dynamic_partitions_requests:
        keys = list(request.partition_keys or [])
        if isinstance(request, AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, keys)
        else:
            for key in keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
    return result


def _origins():
    return job_origins(INGEST_JOB, WORKSPACE_YAML, LOCATION_MODULE)


def run_status_tick(defs: Definitions, instance: DagsterInstance, cursor: str | None, name: str):
    """A run status sensor's tick as the daemon evaluates it, in the code location's context: a
    request for each run of its status since `cursor` (None: the sensor starts, and requests
    nothing)."""
    remote, _ = _origins()
    context = SensorEvaluationContext(
        instance_ref=None,
        cursor=cursor,
        repository_name=remote.repository_origin.repository_name,
        repository_def=defs.get_repository_def(),
        instance=instance,
        sensor_name=name,
        code_location_origin=remote.repository_origin.code_location_origin,
    )
    # The daemon's sensor process loads dynamic partitions from the instance, as here.
    with partition_loading_context(dynamic_partitions_store=instance):
        return defs.get_sensor_def(name).evaluate_tick(context)


def checked_part_tick(defs: Definitions, instance: DagsterInstance, cursor: str | None):
    """checked_part_sensor's tick: the checked part of each landing run that succeeded."""
    return run_status_tick(defs, instance, cursor, "checked_part_sensor")


def batch_split_tick(defs: Definitions, instance: DagsterInstance, cursor: str | None):
    """batch_split_sensor's tick: each failed batch run split."""
    return run_status_tick(defs, instance, cursor, "batch_split_sensor")


def requested_documents(instance: DagsterInstance, request: RunRequest) -> list[str]:
    """The documents a request's run carries: its partition, or its range's keys."""
    if request.partition_key is not None:
        return [request.partition_key]
    keys = instance.get_dynamic_partitions("documents")
    start, end = request.partition_key_range.start, request.partition_key_range.end
    return keys[keys.index(start) : keys.index(end) + 1]


def run_as_the_daemon(defs: Definitions, instance: DagsterInstance, request: RunRequest):
    """The ingest job's run the daemon launches for `request` (created with the code location's
    origins, as a sensor's are), executed here as its run worker would."""
    job_def = defs.resolve_job_def(INGEST_JOB)
    remote, python = _origins()
    partition = {PARTITION_NAME_TAG: request.partition_key} if request.partition_key else {}
    run = instance.create_run_for_job(
        job_def,
        tags={**job_def.run_tags, **partition, **request.tags},
        asset_selection=frozenset(request.asset_selection),
        remote_job_origin=remote,
        job_code_origin=python,
    )
    return execute_in_process(job_def, run, instance)
