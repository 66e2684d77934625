"""Runs as the daemon creates them: where the UI finds a job's runs (`job_origins`), a created
run executed in this process (`execute_in_process`), a signal taken before the run's own
handlers are in place stopping it at its first step (`mark_interrupt_received`), and the
partition tags naming a run's documents (`partition_tags`, `run_documents`)."""

from __future__ import annotations

import sys
from pathlib import Path

from dagster._core.code_pointer import CodePointer
from dagster._core.definitions.job_base import InMemoryJob
from dagster._core.definitions.repository_definition.valid_definitions import (
    SINGLETON_REPOSITORY_NAME,
)
from dagster._core.execution.api import execute_run
from dagster._core.origin import RepositoryPythonOrigin
from dagster._core.remote_origin import RemoteRepositoryOrigin
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG,
)
from dagster._core.workspace.load import (
    location_origin_from_module_name,
    location_origins_from_yaml_paths,
)
from dagster._utils import interrupts

from rag_assets.defs.partitions import documents_partitions


def job_origins(job_name: str, workspace_yaml: Path, location_module: str):
    """Where the UI finds `job_name`: its code location's remote origin (the run list, the
    timeline and the job's Runs tab select runs by it) and the Python origin a run worker loads."""
    if workspace_yaml.is_file():
        (location,) = location_origins_from_yaml_paths([str(workspace_yaml)])
    else:
        location = location_origin_from_module_name(location_module, None, None)
    target = location.loadable_target_origin
    python = RepositoryPythonOrigin(
        target.executable_path or sys.executable,
        CodePointer.from_module(target.module_name, "defs", target.working_directory),
    )
    remote = RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME)
    return remote.get_job_origin(job_name), python.get_job_origin(job_name)


def partition_tags(keys: list[str]) -> dict[str, str]:
    """A run's partition tags: one document's key, or a batch's range (first and last key in
    partition order), as a backfill tags the runs it cuts."""
    if len(keys) == 1:
        return {PARTITION_NAME_TAG: keys[0]}
    return {ASSET_PARTITION_RANGE_START_TAG: keys[0], ASSET_PARTITION_RANGE_END_TAG: keys[-1]}


def run_documents(instance, run) -> list[str]:
    """The documents a run carried, in partition order: its partition, or its range's keys."""
    if PARTITION_NAME_TAG in run.tags:
        return [run.tags[PARTITION_NAME_TAG]]
    start = run.tags.get(ASSET_PARTITION_RANGE_START_TAG)
    end = run.tags.get(ASSET_PARTITION_RANGE_END_TAG)
    if start is None or end is None:
        return []
    keys = instance.get_dynamic_partitions(documents_partitions.name)
    if start not in keys or end not in keys:
        return []
    return keys[keys.index(start) : keys.index(end) + 1]


def execute_in_process(job_def, run, instance):
    """Execute a run created for `job_def` here, as a run worker would; its events, not raised."""
    return execute_run(InMemoryJob(job_def), run, instance, raise_on_error=False)


def mark_interrupt_received() -> None:
    """Set where Dagster's own handlers would put a signal they took: the run being created
    stops at its first step."""
    interrupts._received_interrupt["received"] = True
