"""Vision answers on disk, keyed by what determines them: the image, the model, the prompt.

The model's raw answer is stored, not the verdict on it, so a change in validation
re-judges old answers without calling the model again. Nothing here holds the API key.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ValidationError

log = logging.getLogger(__name__)


def cache_key(image_sha256: str, model: str, prompt_version: str) -> str:
    return hashlib.sha256(f"{image_sha256}\n{model}\n{prompt_version}".encode()).hexdigest()


class CachedAnswer(BaseModel):
    image_sha256: str
    model: str  # as configured (what the key holds), not as the server reports it
    prompt_version: str
    answer: str
    reply_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None

    @property
    def key(self) -> str:
        return cache_key(self.image_sha256, self.model, self.prompt_version)


class VisionCache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, image_sha256: str, model: str, prompt_version: str) -> CachedAnswer | None:
        path = self._path(cache_key(image_sha256, model, prompt_version))
        try:
            return CachedAnswer.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError) as error:
            log.warning("ignoring unreadable vision cache entry %s: %s", path, error)
            return None

    def put(self, entry: CachedAnswer) -> Path:
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
