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


def checked_part_tick(defs: Definitions, instance: DagsterInstance, cursor: str | None):
    """checked_part_sensor's tick as the daemon evaluates it, in the code location's context: a
    request for each of its landing runs that succeeded since `cursor` (None: the sensor starts,
    and requests nothing)."""
    remote, _ = _origins()
    context = SensorEvaluationContext(
        instance_ref=None,
        cursor=cursor,
        repository_name=remote.repository_origin.repository_name,
        repository_def=defs.get_repository_def(),
        instance=instance,
        sensor_name="checked_part_sensor",
        code_location_origin=remote.repository_origin.code_location_origin,
    )
    # The daemon's sensor process loads dynamic partitions from the instance, as here.
    with partition_loading_context(dynamic_partitions_store=instance):
        return defs.get_sensor_def("checked_part_sensor").evaluate_tick(context)


def run_as_the_daemon(defs: Definitions, instance: DagsterInstance, request: RunRequest):
    """The ingest job's run the daemon launches for `request` (created with the code location's
    origins, as a sensor's are), executed here as its run worker would."""
    job_def = defs.resolve_job_def(INGEST_JOB)
    remote, python = _origins()
    run = instance.create_run_for_job(
        job_def,
        tags={**job_def.run_tags, PARTITION_NAME_TAG: request.partition_key, **request.tags},
        asset_selection=frozenset(request.asset_selection),
        remote_job_origin=remote,
        job_code_origin=python,
    )
    return execute_in_process(job_def, run, instance)
