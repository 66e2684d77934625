"""Reading a document's bytes before a parser sees them, with errors a person can act on."""

from __future__ import annotations

import re
from pathlib import Path

from rag_assets.errors import DocumentError

# YAML front matter opening a Markdown file is metadata; a Markdown reader would take it
# for a setext heading over a paragraph, which would then sit in every header path.
_FRONT_MATTER = re.compile(
    rb"\A---\r?\n[A-Za-z_][\w.-]*[ \t]*:.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL
)


def read_document_bytes(path: Path, file_format: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    if not data:
        raise DocumentError(f"{path} is empty (0 bytes): there is no {file_format.upper()} in it")
    return data


def strip_front_matter(data: bytes) -> tuple[bytes, list[str]]:
    """The Markdown without its YAML front matter, and a note when there was some."""
    front = _FRONT_MATTER.match(data)
    if front is None:
        return data, []
    lines = front.group().count(b"\n")
    return data[front.end() :], [f"YAML front matter ({lines} lines) left out"]
