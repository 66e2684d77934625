"""The Dagster skin: partitions, assets, checks, sensors, resources, IO manager."""

import warnings

from dagster import BetaWarning, PreviewWarning

# Data versions on outputs, partitioned checks and backfill policies are what incremental runs,
# per-document check history and batch runs are built on, used as documented; a warning per
# output, check or asset is noise.
warnings.filterwarnings("ignore", category=BetaWarning, message=".*`data_version`.*")
warnings.filterwarnings("ignore", category=BetaWarning, message=".*`backfill_policy`.*")
warnings.filterwarnings("ignore", category=BetaWarning, message=".*`observable_source_asset`.*")
warnings.filterwarnings(
    "ignore", category=PreviewWarning, message=".*partitions_def.*AssetCheckSpec"
)
