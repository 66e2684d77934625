"""The Dagster skin: partitions, assets, checks, sensors, resources, IO manager."""

import warnings

from dagster import BetaWarning, PreviewWarning

# Data versions on outputs and partitioned checks are what incremental runs and per-document
# check history are built on, used as documented; a warning per output or check is noise.
warnings.filterwarnings("ignore", category=BetaWarning, message=".*`data_version`.*")
warnings.filterwarnings("ignore", category=BetaWarning, message=".*`observable_source_asset`.*")
warnings.filterwarnings(
    "ignore", category=PreviewWarning, message=".*partitions_def.*AssetCheckSpec"
)
