"""Which vocabulary packs a document uses: shipped ones by name, a collection's own by path.

`vocabularies` (a template option, from `rag_collections.yaml` or `RAG_ASSETS_VOCABULARIES`):
`auto` (the default) gives a document the shipped packs whose `kinds` include its profile's
kind, so filings get `finance` and a manual gets none; a list names the packs (`[finance]`,
or `[packs/hr.yaml]`, a path relative to the working folder); `none` (or `[]`) gives none.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import yaml
from pydantic import ValidationError

from rag_assets.errors import ConfigurationError
from rag_assets.vocabulary.pack import Vocabulary

PACKS_DIR = Path(__file__).parent / "packs"
AUTO = "auto"
NONE = "none"
_NAME = re.compile(r"^[\w-]+$")


def shipped_packs() -> list[str]:
    return sorted(path.stem for path in PACKS_DIR.glob("*.yaml"))


def load_pack(name: str) -> Vocabulary:
    """A shipped pack by its name (`finance`), else the pack in the YAML file at `name`."""
    shipped = bool(_NAME.match(name))
    path = (PACKS_DIR / f"{name}.yaml" if shipped else Path(name)).resolve()
    if not path.is_file():
        raise ConfigurationError(
            f"unknown vocabulary {name!r}: not a shipped pack ({', '.join(shipped_packs())}) "
            "nor a YAML file"
        )
    return _read(path, path.stat().st_mtime_ns, name if shipped else str(path))


@functools.cache
def _read(path: Path, modified: int, source: str) -> Vocabulary:
    """Read once per file version (`modified` keys the cache)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Vocabulary.model_validate(
            {**(data if isinstance(data, dict) else {}), "source": source}
        )
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError) as error:
        reason = str(error).splitlines()
        raise ConfigurationError(
            f"vocabulary {path}: {' '.join(line.strip() for line in reason[:4])}"
        ) from None


def chosen_packs(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """The packs a setting names (None: `auto`); `finance, hr` and `[finance, hr]` alike."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip().lower() == AUTO:
            return None
        value = [] if value.strip().lower() == NONE else value.split(",")
    names = tuple(dict.fromkeys(name.strip() for name in value if name.strip()))
    for name in names:
        load_pack(name)  # an unknown pack fails where it is configured
    return names


def packs_for(chosen: Sequence[str] | None, kind: str | None) -> list[Vocabulary]:
    """The packs a document uses: `chosen`, or under `auto` (None) the shipped packs made for
    its profile's kind."""
    if chosen is not None:
        return [load_pack(name) for name in chosen]
    if not kind:
        return []
    return [pack for pack in map(load_pack, shipped_packs()) if kind in pack.kinds]


def packs_fingerprint(value: str | Sequence[str] | None) -> dict[str, str]:
    """Each pack a document may be chunked with under `value` (under `auto`, every shipped
    pack) -> its file's digest: a pack edited re-chunks the documents that use it. A value
    that names no pack fails where the document is chunked, with the reason."""
    try:
        chosen = chosen_packs(value)
    except ConfigurationError as error:
        return {"unloadable": str(error)}
    names = shipped_packs() if chosen is None else chosen
    return {
        name: hashlib.sha256(
            (PACKS_DIR / f"{name}.yaml" if _NAME.match(name) else Path(name)).read_bytes()
        ).hexdigest()
        for name in names
    }
