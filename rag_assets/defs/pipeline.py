"""A document's run: the assets materialized per document, in the order their dependencies give,
so an asset added to the graph takes its place in every run, job and plan."""

from __future__ import annotations

from collections.abc import Iterable
from graphlib import TopologicalSorter

from dagster import AssetsDefinition

from rag_assets.defs.partitions import documents_partitions


def pipeline_order(assets: Iterable[AssetsDefinition]) -> list[str]:
    """The materializable assets partitioned by document, each after every one it reads (those
    ready together by name, so the order never depends on how the assets were listed)."""
    parents = {
        key.to_user_string(): {dep.to_user_string() for dep in definition.dependency_keys}
        for definition in assets
        if definition.is_materializable and definition.partitions_def == documents_partitions
        for key in definition.keys
    }
    # The observed sources each step also reads are not steps of the run.
    sorter = TopologicalSorter({name: deps & parents.keys() for name, deps in parents.items()})
    sorter.prepare()
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        order.extend(ready)
        sorter.done(*ready)
    return order
