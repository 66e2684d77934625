"""Partition keys: stable, unique, sanitized ids derived from a path under the inbox."""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")
_MAX_SLUG = 80
# Exactly what partition_key_for makes: a slug that starts and ends with a letter, digit or
# underscore, never holds "..", then a dash and 8 hex digits.
_MINTED = re.compile(
    rf"(?!.*\.\.)[A-Za-z0-9_](?:[A-Za-z0-9._-]{{0,{_MAX_SLUG - 2}}}[A-Za-z0-9_])?-[0-9a-f]{{8}}"
)


class InvalidPartitionKey(ValueError):
    """A key this project did not mint (added by hand in the UI or through the instance)."""


def partition_key_for(relative_path: str) -> str:
    """`specs/Host Ctrl, v2.pdf` -> `specs--Host-Ctrl-v2.pdf-<8 hex>`.

    The slug keeps the key readable in the UI; the hash of the exact relative
    path keeps it unique when two paths sanitize to the same slug. The record of
    `raw_documents` maps the key back to the path.
    """
    posix = PurePosixPath(relative_path).as_posix()
    parts = [_DOTS.sub(".", _UNSAFE.sub("-", part)).strip("-.") for part in posix.split("/")]
    slug = "--".join(p for p in parts if p)[:_MAX_SLUG].strip("-.") or "document"
    # surrogateescape: a file name that is not valid UTF-8 still gets its own stable key.
    digest = hashlib.sha256(posix.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{slug}-{digest}"


def is_valid_partition_key(key: object) -> bool:
    return isinstance(key, str) and _MINTED.fullmatch(key) is not None


def check_partition_key(key: object) -> str:
    """The key itself, or InvalidPartitionKey saying why it is refused (before any path is built)."""
    if is_valid_partition_key(key):
        return key  # type: ignore[return-value]
    raise InvalidPartitionKey(
        f"partition key {key!r} was not made by rag_assets (keys look like "
        f"'specs--manual.pdf-1a2b3c4d': letters, digits, '.', '_', '-', then 8 hex digits); "
        f"add documents through the inbox or `rag-assets ingest`, not by hand"
    )
