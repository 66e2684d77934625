"""A folder of pydantic entries, one JSON file per key, written atomically: the model answers
kept by what decides them, so that asking again costs no call."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel, ValidationError

log = logging.getLogger(__name__)

Entry = TypeVar("Entry", bound=BaseModel)


def entry_key(*fields: str) -> str:
    """The key of the entry that `fields` decide (content hash, model, prompt version...): the
    SHA-256 of them one a line, which names the entry's file."""
    return hashlib.sha256("\n".join(fields).encode()).hexdigest()


class JsonCache(Generic[Entry]):
    """Entries under `root/<key[:2]>/<key>.json`; an unreadable entry is a miss, with a warning."""

    entry_type: ClassVar[type[BaseModel]]
    label: ClassVar[str]

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def entries(self) -> Iterator[tuple[Path, Entry]]:
        """Every readable entry with its file (removing a document looks its entries up)."""
        for path in sorted(self.root.glob("??/*.json")) if self.root.is_dir() else []:
            if (entry := self.read(path.stem)) is not None:
                yield path, entry

    def read(self, key: str) -> Entry | None:
        path = self.path(key)
        try:
            return self.entry_type.model_validate_json(path.read_bytes())  # type: ignore[return-value]
        except FileNotFoundError:
            return None
        except (OSError, ValidationError) as error:
            log.warning("ignoring unreadable %s entry %s: %s", self.label, path, error)
            return None

    def put(self, entry: Entry) -> Path:
        path = self.path(entry.key)  # type: ignore[attr-defined]
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a reader (another run, another process) never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(entry.model_dump_json(indent=1))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path


def read_or_ask(
    cache: JsonCache[Entry] | None, key: str, ask: Callable[[], Entry]
) -> tuple[Entry, bool]:
    """The entry under `key` and True; on a miss (or without a cache) `ask()`'s entry, kept in
    `cache`, and False. What `ask` raises propagates and nothing is kept: the next run asks
    again."""
    if cache is not None and (hit := cache.read(key)) is not None:
        return hit, True
    entry = ask()
    if cache is not None:
        cache.put(entry)
    return entry, False
