"""The inbox folder that holds the collection: one file per partition."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets.settings.groups import ParsingSettings
from rag_assets.sources.keys import partition_key_for

FOLLOW_SYMLINKS_SETTING = ParsingSettings.env_name("inbox_follow_symlinks")


@dataclass(frozen=True)
class InboxFile:
    relative_path: str  # posix, relative to the inbox
    path: Path
    partition_key: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class SkippedFile:
    relative_path: str  # printable: undecodable bytes shown as \x.. escapes
    reason: str

    def summary(self) -> str:
        return f"skipped {self.relative_path}: {self.reason}"


@dataclass
class InboxScan:
    files: list[InboxFile] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


def printable(name: str) -> str:
    """A name as a person can read it, even when it is not valid UTF-8."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def skip_reason(name: str) -> str | None:
    # Hidden files, editor lock files and partial downloads are not documents.
    if name.startswith("."):
        return "hidden (the name starts with a dot)"
    if name.startswith("~$"):
        return "an editor's lock file"
    if name.endswith((".part", ".crdownload", ".tmp")):
        return "a partial download or temporary file"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "the file name is not valid UTF-8; rename it"
    return None


def _link_reason(path: Path, root: Path, follow_symlinks: bool) -> str | None:
    """Why a symbolic link is not followed, or None when it may be."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "a broken symbolic link"
    if follow_symlinks or target.is_relative_to(root):
        return None
    return (
        f"a symbolic link leading outside {root.name}/ (not followed; "
        f"set {FOLLOW_SYMLINKS_SETTING}=1 to follow)"
    )


def scan_folder(root: Path, follow_symlinks: bool = False) -> InboxScan:
    """Every document under `root`, sorted by relative path, and what was left out and why."""
    scan = InboxScan()
    if not root.is_dir():
        return scan
    root = root.resolve()
    for folder, dirs, names in os.walk(root, followlinks=follow_symlinks):
        here = Path(folder)
        dirs[:] = _kept_folders(here, sorted(dirs), root, follow_symlinks, scan)
        for name in names:
            path = here / name
            relative = path.relative_to(root).as_posix()
            info, reason = _regular_file(path, root, follow_symlinks)
            if info is None:
                scan.skipped.append(SkippedFile(printable(relative), reason))
                continue
            scan.files.append(
                InboxFile(
                    relative, path, partition_key_for(relative), info.st_size, info.st_mtime_ns
                )
            )
    scan.files.sort(key=lambda f: f.relative_path)
    scan.skipped.sort(key=lambda s: s.relative_path)
    return scan


def _kept_folders(
    here: Path, names: list[str], root: Path, follow_symlinks: bool, scan: InboxScan
) -> list[str]:
    """The folders under `here` the walk goes into; the others are added to `scan.skipped`."""
    kept = []
    for name in names:
        relative = (here / name).relative_to(root).as_posix()
        reason = skip_reason(name)
        if reason is None and (here / name).is_symlink():
            reason = (
                _link_reason(here / name, root, follow_symlinks)
                if follow_symlinks
                else f"a symbolic link to a folder (not followed; set {FOLLOW_SYMLINKS_SETTING}=1)"
            )
        if reason:
            scan.skipped.append(SkippedFile(printable(relative) + "/", reason))
        else:
            kept.append(name)
    return kept


def _regular_file(
    path: Path, root: Path, follow_symlinks: bool
) -> tuple[os.stat_result, None] | tuple[None, str]:
    """The file's stat when it is a document to read, else why it is left out."""
    reason = skip_reason(path.name) or (
        _link_reason(path, root, follow_symlinks) if path.is_symlink() else None
    )
    if reason:
        return None, reason
    try:
        info = path.stat()
    except OSError as error:
        return None, f"cannot be read: {error.strerror}"
    if not stat.S_ISREG(info.st_mode):
        return None, "not a regular file (a pipe, socket or device)"
    return info, None


def scan_inbox(inbox: Path, follow_symlinks: bool = False) -> list[InboxFile]:
    """Every document under the inbox, sorted by relative path."""
    return scan_folder(inbox, follow_symlinks).files


def inbox_by_key(inbox: Path, follow_symlinks: bool = False) -> dict[str, InboxFile]:
    """Every document under the inbox, by partition key: read once for a batch's documents."""
    return {f.partition_key: f for f in scan_inbox(inbox, follow_symlinks)}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
