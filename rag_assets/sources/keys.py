"""Partition keys: stable, unique, sanitized ids derived from a path under the inbox."""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")
_MAX_SLUG = 80
_HASH = 8
# Where a name was shortened: in no name a key is made of (those are cleaned to [A-Za-z0-9._-]).
CUT = "~"
# Advance widths, in thousandths of an em, of Geist (the font of Dagster's UI) for every
# character a key holds.
_WIDTHS = dict(
    zip(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-~",
        (
            *(670, 680, 711, 702, 603, 590, 708, 713, 270, 597, 652, 580, 877),
            *(743, 747, 650, 741, 672, 648, 578, 689, 669, 911, 630, 630, 542),
            *(570, 598, 552, 598, 567, 398, 597, 581, 244, 260, 590, 284, 877),
            *(581, 579, 598, 598, 382, 530, 395, 575, 536, 819, 585, 537, 549),
            *(671, 384, 619, 613, 635, 626, 624, 584, 604, 624, 207, 563, 425, 537),
        ),
        strict=True,
    )
)
# The narrowest list of partition keys in Dagster's UI at 1,600 px, an asset check's
# Partitions tab, is 200 px of 14 px text: 14.3 em (an asset's Partitions tab: 19.5 em). A key
# wider than its list is cut in its middle (test_ui_screenshots.py renders both).
MAX_KEY_WIDTH = 14_000
# Exactly what the key functions make (this and the earlier schemes): a slug that starts and
# ends with a letter, digit or underscore, never holds "..", then a dash and 8 hex digits.
_MINTED = re.compile(
    rf"(?!.*\.\.)[A-Za-z0-9_](?:[A-Za-z0-9._{CUT}-]{{0,{_MAX_SLUG - 2}}}[A-Za-z0-9_])?"
    rf"-[0-9a-f]{{{_HASH}}}"
)


class InvalidPartitionKey(ValueError):
    """A key this project did not mint (added by hand in the UI or through the instance)."""


def key_width(text: str) -> int:
    """How wide `text` is in Dagster's UI, in thousandths of an em."""
    return sum(_WIDTHS[c] for c in text)


def _clean(part: str) -> str:
    return _DOTS.sub(".", _UNSAFE.sub("-", part)).strip("-.")


def _digest(posix: str) -> str:
    # surrogateescape: a file name that is not valid UTF-8 still gets its own stable key.
    return hashlib.sha256(posix.encode("utf-8", "surrogateescape")).hexdigest()[:_HASH]


def _fitted(text: str, room: int, from_end: bool = False) -> str:
    """The longest start (or end) of `text` at most `room` wide."""
    width = 0
    for count, char in enumerate(reversed(text) if from_end else text):
        width += _WIDTHS[char]
        if width > room:
            return text[len(text) - count :] if from_end else text[:count]
    return text


def _shortened(name: str, room: int) -> str:
    """`name` at most `room` wide. What tells a folder's files apart is mostly at the end of
    the stem (`_p003`, `Q2_10Q`, `v2`), so the middle goes: the stem's end keeps two thirds
    of what is left beside the extension, its start the rest, `~` between them."""
    if key_width(name) <= room:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or len(extension) > 5 or not stem:
        stem, extension = name, ""
    suffix = f".{extension}" if extension else ""
    left = room - key_width(suffix) - _WIDTHS[CUT]
    end = _fitted(stem, left * 2 // 3, from_end=True).lstrip("-._") or stem[-1]
    start = _fitted(stem, left - key_width(end)).rstrip("-._")
    return f"{start}{CUT}{end}{suffix}" if start else f"{end}{suffix}"


def partition_key_for(relative_path: str) -> str:
    """`corpus/Host Ctrl, v2.pdf` -> `Host-Ctrl-v2.pdf-<8 hex>`.

    One shape for every file: its name, shortened in the middle to fit the UI's narrowest
    list of keys whole, then the hash of the exact relative path, which keeps the key unique
    (the same name in two folders, two names that shorten alike). The record of
    `raw_documents`, and every asset's metadata, name the path.
    """
    posix = PurePosixPath(relative_path).as_posix()
    parts = [p for p in (_clean(part) for part in posix.split("/")) if p]
    digest = _digest(posix)
    room = MAX_KEY_WIDTH - key_width(f"-{digest}")
    return f"{_shortened(parts[-1], room) if parts else 'document'}-{digest}"


def earlier_partition_keys_for(relative_path: str) -> list[str]:
    """The keys the same path had before (the folder first, `corpus--Host-Ctrl-v2.pdf-<8 hex>`;
    then the name's start and the folder in 34 characters, `Host-Ctrl-v2.pdf--corpus-<8 hex>`)
    that differ from its key now: a data folder ingested then holds documents under them until
    they are ingested again (`rag_assets.defs.lifecycle.retire_superseded`)."""
    posix = PurePosixPath(relative_path).as_posix()
    parts = [p for p in (_clean(part) for part in posix.split("/")) if p]
    digest = _digest(posix)
    folder_first = "--".join(parts)[:_MAX_SLUG].strip("-.") or "document"
    name = _name_start(parts[-1], 25) if parts else ""
    if name and len(parts) > 1 and len(name) + 2 + len(parts[-2]) <= 25:
        name = f"{name}--{parts[-2]}"
    key = partition_key_for(relative_path)
    earlier = (f"{folder_first}-{digest}", f"{name or 'document'}-{digest}")
    return [k for k in dict.fromkeys(earlier) if k != key]


def _name_start(name: str, room: int) -> str:
    """`name` in at most `room` characters, the end of its stem cut (the keys' earlier scheme)."""
    if len(name) <= room:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or len(extension) > 5 or not stem:
        return name[:room].strip("-.")
    return f"{stem[: room - len(extension) - 1].strip('-.')}.{extension}".strip("-.")


def is_valid_partition_key(key: object) -> bool:
    return isinstance(key, str) and _MINTED.fullmatch(key) is not None


def how_to_add_documents(inbox: str) -> str:
    """What a person who added a partition by hand (the UI offers it) does instead."""
    return (
        f"to add a document, put its file in {inbox} or run `rag-assets ingest PATH`; "
        f"the inbox sensor deletes a partition that has no file"
    )


def check_partition_key(key: object, inbox: str = "the inbox") -> str:
    """The key itself, or InvalidPartitionKey saying why it is refused (before any path is built)
    and what to do instead."""
    if is_valid_partition_key(key):
        return key  # type: ignore[return-value]
    raise InvalidPartitionKey(
        f"partition key {key!r} was not made by rag_assets (keys look like "
        f"'manual.pdf-1a2b3c4d': letters, digits, '.', '_', '-', '~', then 8 hex digits); "
        f"{how_to_add_documents(inbox)}"
    )
