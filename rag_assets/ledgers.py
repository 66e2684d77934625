"""A ledger open for the length of a block, in this thread or task only: another step doing
the same work at the same time in the same process keeps its own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TypeVar

Ledger = TypeVar("Ledger")


@contextlib.contextmanager
def opened(slot: ContextVar[Ledger | None], ledger: Ledger) -> Iterator[Ledger]:
    """`ledger` in `slot` inside the block; the slot's earlier ledger, if any, after it."""
    token = slot.set(ledger)
    try:
        yield ledger
    finally:
        slot.reset(token)
