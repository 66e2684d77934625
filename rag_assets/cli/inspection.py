"""The commands that show what was made of a document: its parse, its chunks, its last run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rag_assets.cli.settings import command_settings
from rag_assets.errors import ConfigurationError, DocumentError
from rag_assets.text.terminal import visible, visible_line


def cmd_chunks(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.storage import read_chunks

    settings = command_settings(args)
    try:
        chunks = read_chunks(settings, args.document)
    except LookupError as error:
        print(f"rag-assets chunks: {visible_line(str(error))}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([c.model_dump() for c in chunks], ensure_ascii=False, indent=2))
        return 0
    for c in chunks:
        print(
            visible_line(
                f"--- {c.doc_id} #{c.chunk_index} {c.chunk_type} {c.header_path} p.{c.page_start}-{c.page_end} ({c.token_count} tokens)"
            )
        )
        print(visible(c.text))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.defs.status import documents_status
    from rag_assets.instance import open_instance
    from rag_assets.sources.inbox import scan_inbox

    settings = command_settings(args)
    paths = {f.partition_key: f.relative_path for f in scan_inbox(settings.inbox_dir)}
    found = documents_status(open_instance(settings), paths)
    if args.json:
        print(json.dumps([s.as_dict() for s in found], ensure_ascii=False, indent=2))
        return 0
    for status in found:
        print(visible_line(status.line()))
    failed = sum(1 for s in found if s.outcome == "FAILED")
    print(f"{len(found)} documents, {failed} failed")
    return 0


def _describe(element) -> str:
    level = f" h{element.level}" if element.level else ""
    pages = f"p.{element.page_start}" + (
        f"-{element.page_end}" if element.page_end != element.page_start else ""
    )
    first_line = element.text.strip().splitlines()[0] if element.text.strip() else ""
    return f"{element.type}{level:4} {pages:8} {visible_line(first_line[:100])}"


def cmd_parse(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.parsers.routing import ParserRouter
    from rag_assets.parsing import parse_file

    settings = command_settings(args)
    try:
        router = ParserRouter(
            settings.force_parser or settings.parser,
            settings.docling_artifacts_path,
            settings.parse_workers,
        )
        result = parse_file(Path(args.path), router)
    except (DocumentError, ConfigurationError, FileNotFoundError) as error:
        print(f"rag-assets parse: {visible_line(str(error))}", file=sys.stderr)
        return 1
    doc = result.document
    if args.json:
        print(doc.model_dump_json(indent=2))
        return 0
    if args.markdown:
        print(visible(doc.markdown))
        return 0
    print(
        visible_line(
            f"# {doc.source_path}: parser {result.choice.parser} {doc.parser_version} ({result.choice.reason})"
        )
    )
    for note in [*result.choice.fallbacks, *result.parsed.notes]:
        print(f"# note: {visible_line(note)}")
    for note in doc.metadata.get("degraded", []):
        print(f"# degraded: {visible_line(note)}")
    print(
        f"# {doc.page_count or 'no'} pages, {len(doc.elements)} elements, "
        f"title: {visible_line(doc.title or '-')}"
    )
    for element in doc.elements:
        print(_describe(element))
    print("\n" + visible(doc.markdown))
    return 0
