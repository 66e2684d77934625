"""Plain text as it is: lines kept, no markdown reading (a `.txt` is often extracted PDF text)."""

from __future__ import annotations

from pathlib import Path

from charset_normalizer import from_bytes

from rag_assets import __version__
from rag_assets.errors import DocumentError
from rag_assets.parsers.base import ParsedDocument
from rag_assets.sources.encoding import to_utf8


def _decode(raw: bytes, path: Path) -> tuple[str, list[str]]:
    data, encoding = to_utf8(raw)  # a BOM names the encoding for sure: no guess
    try:
        return data.decode("utf-8"), [f"decoded as {encoding}, not UTF-8"] if encoding else []
    except UnicodeDecodeError:
        best = from_bytes(raw).best()
        if best is None:
            raise DocumentError(
                f"{path.name}: not readable as text in any known encoding"
            ) from None
        return str(best), [f"decoded as {best.encoding}, not UTF-8"]


class PlainTextParser:
    name = "plaintext"

    def parse(self, path: Path, file_format: str = "txt") -> ParsedDocument:
        if file_format != "txt":
            raise DocumentError(
                f"{path.name}: the plaintext parser reads .txt only, not {file_format}"
            )
        text, notes = _decode(path.read_bytes(), path)
        if not text.strip():
            raise DocumentError(f"{path.name}: the file holds no text")
        return ParsedDocument(
            parser=self.name,
            parser_version=__version__,
            source_path=str(path),
            file_format="txt",
            native={"text": text},
            notes=notes,
        )
