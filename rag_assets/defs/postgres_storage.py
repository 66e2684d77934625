"""Dagster's PostgreSQL run and event storage, each keeping one connection open between writes.

dagster-postgres opens a new connection for every statement outside its webserver (NullPool):
a TCP connect, the server forking a backend and the password exchange, several times for each
event a run writes. A batch of 50 short documents writes a few thousand events, and on
PostgreSQL it took three times as long as on SQLite; with one connection kept it takes the same
time (bench/scale.py --postgres). Connections beyond the kept one open and close as before, so
nothing waits for a connection, and each storage holds at most one idle.
"""

from __future__ import annotations

import os
import weakref

from dagster_postgres import PostgresRunStorage
from dagster_postgres.utils import (
    create_pg_engine,
    get_token_provider_from_config,
    pg_url_from_config,
)

# As Dagster's webserver recycles its kept connection (`--db-pool-recycle`).
RECYCLE_SECONDS = 3600
# The engines keeping a connection in this process, forgotten by a forked child (below).
_KEPT_ENGINES: weakref.WeakSet = weakref.WeakSet()


def _forget_parents_connections() -> None:
    """In a forked child: the parent's kept connections are the parent's; they are dropped
    without closing them, and the child opens its own."""
    for engine in list(_KEPT_ENGINES):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_parents_connections)


def keep_a_connection(storage) -> None:
    """Replace `storage`'s engine (Dagster's, from its `__init__`) with one that keeps a
    connection. A connection is checked before use, so a restarted server costs a reconnect, not
    a failed write; a forked child drops the parent's connection without closing it."""
    storage._engine.dispose()
    engine = create_pg_engine(
        storage.postgres_url,
        storage._token_provider,
        isolation_level="AUTOCOMMIT",
        pool_size=1,
        max_overflow=-1,
        pool_recycle=RECYCLE_SECONDS,
        pool_pre_ping=True,
    )
    storage._engine = engine
    _KEPT_ENGINES.add(engine)


class KeptConnection:
    """A dagster-postgres storage (config: dagster-postgres's) that keeps its connection."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        keep_a_connection(self)

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        # dagster-postgres's own returns its class, not this one.
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )


class DocumentsPostgresRunStorage(KeptConnection, PostgresRunStorage):
    """Dagster's PostgreSQL run storage, its connection kept."""
