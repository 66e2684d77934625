"""The event log of the project's instances: Dagster's storage (SQLite in a data folder,
PostgreSQL at scale), with check views that stay fast at thousands of documents.

Configured in `dagster.yaml` (a data folder's is written by `rag_assets.instance`; the scale
deployment's names it), so the webserver, which never imports the code location, builds its
instance with it too.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import partition_loading_context
from dagster_postgres import PostgresEventLogStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config

from rag_assets.defs.dagster_private import CachingDynamicPartitionsLoader, SqliteEventLogStorage


class _PartitionKeysReadOnce(CachingDynamicPartitionsLoader):
    """Whether a key is a partition, answered from the definition's keys read in one query.
    Dagster's loader asks the storage once for each key, and a check's partition view asks for
    every document that has a result."""

    def __init__(self, instance):
        super().__init__(instance)
        self._keys: dict[str, frozenset[str]] = {}

    def has_dynamic_partition(self, partitions_def_name: str, partition_key: str) -> bool:
        if partitions_def_name not in self._keys:
            self._keys[partitions_def_name] = frozenset(
                self.get_dynamic_partitions(partitions_def_name)
            )
        return partition_key in self._keys[partitions_def_name]


class _CheckStatesReadPartitionsOnce:
    """A check's partition statuses (the UI's check views) keep the results of documents that
    are still partitions: Dagster asks the storage about each document (20 s a view at 10,000
    documents on SQLite), this reads the documents' partitions once a view."""

    def get_asset_check_state(self, keys: Sequence):
        keys_read_once = _PartitionKeysReadOnce(self._instance)
        with partition_loading_context(dynamic_partitions_store=keys_read_once):
            return super().get_asset_check_state(keys)


class DocumentsEventLogStorage(_CheckStatesReadPartitionsOnce, SqliteEventLogStorage):
    """Dagster's SQLite event log (config: `base_dir`, the folder of its databases)."""

    def __init__(self, base_dir: str, inst_data=None):
        self._tables_there: set[str] = set()
        super().__init__(base_dir, inst_data)

    def has_table(self, table_name: str) -> bool:
        # Dagster asks before every check result it writes and every partition it looks up,
        # each time reading the schema anew; a table once there stays (migrations only add).
        if table_name not in self._tables_there and super().has_table(table_name):
            self._tables_there.add(table_name)
        return table_name in self._tables_there

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> DocumentsEventLogStorage:
        return cls(inst_data=inst_data, **config_value)


class DocumentsPostgresEventLogStorage(_CheckStatesReadPartitionsOnce, PostgresEventLogStorage):
    """Dagster's PostgreSQL event log (config: dagster-postgres's)."""

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> DocumentsPostgresEventLogStorage:
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )
