"""Declarative automation: a new upstream version flows down when the daemon runs, once.

A tick reads the steps' updates from a snapshot taken as it starts, but whether a step is in
progress live: a step of a running document that ends during the tick looks neither updated nor
in progress, and anything that made it a candidate requested it a second time. So nothing a
run is doing may make a candidate. The inbox sensor's runs name their steps, as the refresh
schedule's and automation's own do, and `any_deps_updated` ignores a parent updated by a run
that also executes the child. Eager's other reason, a partition becoming missing, is left
out: partitions come with their run (the inbox sensor, the CLI), and that reason stayed set
from the partition's creation until the step ran.
"""

from dagster import (
    AssetsDefinition,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
)

from rag_assets.defs.incremental import OBSERVED_SOURCES
from rag_assets.defs.jobs import LAUNCHED_BY_TAG

# A parent updated by a run that did not execute this asset, since this asset last ran or was
# requested.
UPSTREAM_UPDATED = (
    AutomationCondition.any_deps_updated().since_last_handled().with_label("upstream_updated")
)

# Settings observations are handled where they are reported (CLI, refresh schedule, sensor), which
# run exactly the stale steps; this reacts to new materializations of the assets above.
EAGER = (
    (
        UPSTREAM_UPDATED
        & ~AutomationCondition.any_deps_missing()
        & ~AutomationCondition.any_deps_in_progress()
        & ~AutomationCondition.in_progress()
    )
    .ignore(AssetSelection.assets(*OBSERVED_SOURCES))
    .with_label("eager_without_missing")
)


def eager(assets_def: AssetsDefinition) -> AssetsDefinition:
    return assets_def.map_asset_specs(
        lambda spec: spec.replace_attributes(automation_condition=EAGER)
    )


# Dagster's daemon runs what automation requests as the asset job (`__ASSET_JOB`, "Jobless
# asset materializations" in the UI), never as `ingest_documents`: it picks an implicit job for
# an asset selection. The tag marks them among the runs of the asset job.
automation_sensor = AutomationConditionSensorDefinition(
    "automation_sensor",
    target=AssetSelection.all(),
    run_tags={LAUNCHED_BY_TAG: "automation"},
    default_status=DefaultSensorStatus.RUNNING,
    description="Evaluates the assets' automation conditions (eager below raw_documents).",
)
