"""Partition keys: stable, unique, sanitized ids derived from a path under the inbox."""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")
_MAX_SLUG = 80
# Dagster's partition lists cut a key in its middle past about 36 characters (an asset's
# Partitions tab at 1600 px; test_ui_screenshots.py): a key is the file's name, its folder when
# that fits whole, and the hash, in at most this many.
MAX_KEY = 34
_HASH = 8
# Exactly what the key functions make (this and the earlier scheme): a slug that starts and ends
# with a letter, digit or underscore, never holds "..", then a dash and 8 hex digits.
_MINTED = re.compile(
    rf"(?!.*\.\.)[A-Za-z0-9_](?:[A-Za-z0-9._-]{{0,{_MAX_SLUG - 2}}}[A-Za-z0-9_])?-[0-9a-f]{{{_HASH}}}"
)


class InvalidPartitionKey(ValueError):
    """A key this project did not mint (added by hand in the UI or through the instance)."""


def _clean(part: str) -> str:
    return _DOTS.sub(".", _UNSAFE.sub("-", part)).strip("-.")


def _digest(posix: str) -> str:
    # surrogateescape: a file name that is not valid UTF-8 still gets its own stable key.
    return hashlib.sha256(posix.encode("utf-8", "surrogateescape")).hexdigest()[:_HASH]


def _shortened(name: str, room: int) -> str:
    """`name` in at most `room` characters, its extension kept: the stem is what gets cut."""
    if len(name) <= room:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or len(extension) > 5 or not stem:
        return name[:room].strip("-.")
    return f"{stem[: room - len(extension) - 1].strip('-.')}.{extension}".strip("-.")


def partition_key_for(relative_path: str) -> str:
    """`corpus/Host Ctrl, v2.pdf` -> `Host-Ctrl-v2.pdf--corpus-<8 hex>`.

    The file's name comes first, so the part that tells documents apart is the part the UI
    shows; its folder follows when it fits whole in `MAX_KEY`. The hash of the exact relative
    path keeps the key unique when two paths make the same slug. The record of
    `raw_documents` maps the key back to the path.
    """
    posix = PurePosixPath(relative_path).as_posix()
    parts = [p for p in (_clean(part) for part in posix.split("/")) if p]
    room = MAX_KEY - _HASH - 1
    name = _shortened(parts[-1], room) if parts else ""
    folder = parts[-2] if len(parts) > 1 else ""
    if name and folder and len(name) + 2 + len(folder) <= room:
        name = f"{name}--{folder}"
    return f"{name or 'document'}-{_digest(posix)}"


def legacy_partition_key_for(relative_path: str) -> str:
    """The key the same path had before `partition_key_for` put the file's name first
    (`corpus--Host-Ctrl-v2.pdf-<8 hex>`): a data folder ingested then still holds documents
    under it until they are ingested again (`rag_assets.defs.lifecycle.retire_legacy_keys`)."""
    posix = PurePosixPath(relative_path).as_posix()
    parts = [_clean(part) for part in posix.split("/")]
    slug = "--".join(p for p in parts if p)[:_MAX_SLUG].strip("-.") or "document"
    return f"{slug}-{_digest(posix)}"


def is_valid_partition_key(key: object) -> bool:
    return isinstance(key, str) and _MINTED.fullmatch(key) is not None


def check_partition_key(key: object) -> str:
    """The key itself, or InvalidPartitionKey saying why it is refused (before any path is built)."""
    if is_valid_partition_key(key):
        return key  # type: ignore[return-value]
    raise InvalidPartitionKey(
        f"partition key {key!r} was not made by rag_assets (keys look like "
        f"'manual.pdf--specs-1a2b3c4d': letters, digits, '.', '_', '-', then 8 hex digits); "
        f"add documents through the inbox or `rag-assets ingest`, not by hand"
    )
