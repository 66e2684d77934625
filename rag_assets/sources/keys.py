"""Partition keys: stable, unique, sanitized ids derived from a path under the inbox."""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")
_MAX_SLUG = 80


def partition_key_for(relative_path: str) -> str:
    """`specs/Host Ctrl, v2.pdf` -> `specs--Host-Ctrl-v2.pdf-<8 hex>`.

    The slug keeps the key readable in the UI; the hash of the exact relative
    path keeps it unique when two paths sanitize to the same slug. The record of
    `raw_documents` maps the key back to the path.
    """
    posix = PurePosixPath(relative_path).as_posix()
    parts = [_DOTS.sub(".", _UNSAFE.sub("-", part)).strip("-.") for part in posix.split("/")]
    slug = "--".join(p for p in parts if p)[:_MAX_SLUG].strip("-.") or "document"
    digest = hashlib.sha256(posix.encode("utf-8")).hexdigest()[:8]
    return f"{slug}-{digest}"


def is_valid_partition_key(key: str) -> bool:
    return bool(key) and _UNSAFE.search(key) is None and ".." not in key
