"""Data versions of what the steps write: an output's version is its own bytes' hash, so an
unchanged result of a re-run leaves everything below it fresh; `digest` is the hash of the
values an observed source reads."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
from dagster import DataVersion


def digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]


def content_version(payload: bytes | str) -> DataVersion:
    """A data version from an output's own bytes: identical output, identical version, so an
    unchanged result of a re-run leaves everything below it fresh."""
    data = payload.encode() if isinstance(payload, str) else payload
    return DataVersion(hashlib.sha256(data).hexdigest()[:32])


def arrow_version(table) -> DataVersion:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return content_version(sink.getvalue().to_pybytes())
