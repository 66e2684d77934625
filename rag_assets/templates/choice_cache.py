"""The LLM's template guesses on disk, keyed by what decides them: the document's content, the
selector's prompt version, the model and the templates it was offered.

The model's guess is stored, not the choice made of it, so a new confidence threshold re-judges
old guesses without calling the model again. Failed calls and invalid answers are not stored:
the next materialization asks again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

log = logging.getLogger(__name__)


def choice_key(
    document_sha256: str, model: str, selector_version: str, templates: Sequence[str]
) -> str:
    fields = [document_sha256, model, selector_version, ",".join(templates)]
    return hashlib.sha256("\n".join(fields).encode()).hexdigest()


class CachedGuess(BaseModel):
    document_sha256: str
    model: str  # as configured (what the key holds), not as the server reports it
    selector_version: str
    templates: list[str]
    template: str
    confidence: float
    reason: str

    @property
    def key(self) -> str:
        return choice_key(self.document_sha256, self.model, self.selector_version, self.templates)


class ChoiceCache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedGuess | None:
        path = self._path(key)
        try:
            return CachedGuess.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError) as error:
            log.warning("ignoring unreadable template choice cache entry %s: %s", path, error)
            return None

    def put(self, entry: CachedGuess) -> Path:
        path = self._path(entry.key)
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
