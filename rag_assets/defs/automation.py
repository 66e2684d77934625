"""Declarative automation: a new upstream version flows down when the daemon runs, once.

A tick reads the steps' updates from a snapshot taken as it starts, but whether a step is in
progress live: a step of a running document that ends during the tick looks neither updated nor
in progress, and anything that made it a candidate requested it a second time. So nothing a
run is doing may make a candidate. The inbox sensor's runs name their steps, as the refresh
schedule's and automation's own do, and `any_deps_updated` ignores a parent updated by a run
that also executes the child, or by a document's landing run (`defs/landing.py`): its checked
part follows it as a run of its own. Eager's other reason, a partition becoming missing, is left
out: partitions come with their run (the inbox sensor, the CLI), and that reason stayed set
from the partition's creation until the step ran.
"""

from dagster import (
    AssetsDefinition,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DagsterInstance,
    DefaultSensorStatus,
)

from rag_assets.defs.dagster_private import (
    InstigatorType,
    get_auto_materialize_paused,
    set_auto_materialize_paused,
)
from rag_assets.defs.jobs import LAUNCHED_BY_TAG
from rag_assets.defs.landing import LANDING_PART, PART_TAG
from rag_assets.defs.observed_sources import OBSERVED_SOURCES

# A parent updated by a run that did not execute this asset, since this asset last ran or was
# requested. Dagster's any_deps_updated, leaving out landing runs, whose next part the CLI or
# checked_part_sensor runs.
UPSTREAM_UPDATED = (
    AutomationCondition.any_deps_match(
        (
            AutomationCondition.newly_updated()
            & ~AutomationCondition.executed_with_root_target()
            & ~AutomationCondition.executed_with_tags(tag_values={PART_TAG: LANDING_PART})
        ).with_label("newly_updated_by_another_run")
        | AutomationCondition.will_be_requested()
    )
    .since_last_handled()
    .with_label("upstream_updated")
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


def automation_running(instance: DagsterInstance) -> bool:
    """Whether `automation_sensor` evaluates: as stored once started or stopped in the UI, else
    as its default status says."""
    states = [
        state
        for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
        if state.name == automation_sensor.name
    ]
    if not states:
        return automation_sensor.default_status == DefaultSensorStatus.RUNNING
    return any(state.is_running for state in states)


def show_automation_state(instance: DagsterInstance) -> bool:
    """Set the instance's automation switch to what `automation_sensor` does, and return it.

    Dagster's UI tags jobs and asset groups "Auto-materialize on/off" from the switch of its
    pre-sensor asset daemon, which reads "off" until set. Here automation runs as a sensor
    (dagster.yaml: `auto_materialize: use_sensors: true`), which that switch does not drive:
    left alone, the tag reads "off" while the sensor launches runs.
    """
    if instance.schedule_storage is None:  # an in-memory instance: no sensor, no UI
        return False
    running = automation_running(instance)
    if get_auto_materialize_paused(instance) == running:  # written only when it changes
        set_auto_materialize_paused(instance, not running)
    return running
