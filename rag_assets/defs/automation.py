"""Declarative automation: a new upstream version flows down when the daemon runs."""

from dagster import (
    AssetsDefinition,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
)

from rag_assets.defs.incremental import OBSERVED

# Settings observations are handled where they are reported (CLI, refresh schedule, sensor), which
# run exactly the stale steps; eager reacts to new materializations of the assets above.
EAGER = AutomationCondition.eager().ignore(AssetSelection.assets(*OBSERVED.values()))


def eager(assets_def: AssetsDefinition) -> AssetsDefinition:
    return assets_def.map_asset_specs(
        lambda spec: spec.replace_attributes(automation_condition=EAGER)
    )


automation_sensor = AutomationConditionSensorDefinition(
    "automation_sensor",
    target=AssetSelection.all(),
    default_status=DefaultSensorStatus.RUNNING,
    description="Evaluates the assets' automation conditions (eager below raw_documents).",
)
