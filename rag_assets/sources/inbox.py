"""The inbox folder that holds the collection: one file per partition."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from rag_assets.sources.keys import partition_key_for


@dataclass(frozen=True)
class InboxFile:
    relative_path: str  # posix, relative to the inbox
    path: Path
    partition_key: str
    size: int
    mtime_ns: int


def _is_document(path: Path, inbox: Path) -> bool:
    # Hidden files, editor lock files and partial downloads are not documents.
    parts = path.relative_to(inbox).parts
    name = path.name
    return (
        path.is_file()
        and not any(p.startswith(".") for p in parts)
        and not name.startswith("~$")
        and not name.endswith((".part", ".crdownload", ".tmp"))
    )


def scan_inbox(inbox: Path) -> list[InboxFile]:
    """Every document under the inbox, sorted by relative path."""
    if not inbox.is_dir():
        return []
    files = []
    for path in sorted(inbox.rglob("*")):
        if not _is_document(path, inbox):
            continue
        relative = path.relative_to(inbox).as_posix()
        stat = path.stat()
        files.append(
            InboxFile(relative, path, partition_key_for(relative), stat.st_size, stat.st_mtime_ns)
        )
    return files


def find_in_inbox(inbox: Path, partition_key: str) -> InboxFile | None:
    return next((f for f in scan_inbox(inbox) if f.partition_key == partition_key), None)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
