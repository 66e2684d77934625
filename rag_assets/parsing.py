"""Layers 1 and 2 in one call, without Dagster: what `rag-assets parse` shows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.routing import ParserChoice, ParserRouter
from rag_assets.sources.formats import detect_format
from rag_assets.sources.inbox import sha256_file
from rag_assets.sources.keys import partition_key_for


@dataclass(frozen=True)
class ParseResult:
    document: StandardizedDocument
    parsed: ParsedDocument
    choice: ParserChoice


def parse_file(path: Path, router: ParserRouter) -> ParseResult:
    """Detect the format, run the chosen parser and its adapter (plus the IR repairs)."""
    file_format = detect_format(path)
    parsed, choice = router.parse(path, file_format)
    document = to_ir(
        parsed,
        doc_id=partition_key_for(path.name),
        source_sha256=sha256_file(path),
        source_path=path.name,
    )
    return ParseResult(document, parsed, choice)
