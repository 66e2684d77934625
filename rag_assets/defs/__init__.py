"""The Dagster skin: partitions, assets, checks, sensors, resources, IO manager."""
