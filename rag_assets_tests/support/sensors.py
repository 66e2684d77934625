"""The inbox sensor ticked by hand, its partition requests applied as the daemon applies them."""

from __future__ import annotations

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterInstance,
    Definitions,
    SensorResult,
    build_sensor_context,
)


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
