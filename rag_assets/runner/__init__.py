"""What drives Dagster from the CLI: an ingest's runs, created and executed in this process
as the daemon would launch them, and the receipt that lets an unchanged ingest skip Dagster.
`defs/` holds the definitions these runs execute; Dagster's private APIs are reached only
through the package `defs/dagster_private/`."""
