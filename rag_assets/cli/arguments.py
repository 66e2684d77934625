"""`rag-assets`: ingest documents, query the index, inspect chunks, open the UI."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn, get_origin

from pydantic import BaseModel

from rag_assets.cli.documents import cmd_evaluate, cmd_ingest, cmd_remove, cmd_ui
from rag_assets.cli.inspection import cmd_chunks, cmd_parse, cmd_status
from rag_assets.cli.retrieval import cmd_answer, cmd_query, cmd_tool


def _pages(value: str) -> tuple[int, int]:
    """`3` or `3-7`: an inclusive page range."""
    first, _, last = value.partition("-")
    try:
        pages = int(first), int(last or first)
    except ValueError:
        raise argparse.ArgumentTypeError(f"pages must look like 3 or 3-7, got {value!r}") from None
    if pages[0] > pages[1]:
        raise argparse.ArgumentTypeError(f"page range {value!r} runs backwards")
    return pages


def _add_tool_arguments(command: argparse.ArgumentParser, options: type[BaseModel]) -> None:
    """A tool's options as the subcommand's: required ones positional (a list takes one or
    more words), the others `--name`; then `--json`."""
    fields = options.model_fields
    for name, field in fields.items():
        if not field.is_required():
            kind = int if field.annotation is int else None
            command.add_argument(f"--{name.replace('_', '-')}", type=kind, help=field.description)
    command.add_argument("--json", action="store_true")
    for name, field in fields.items():
        if field.is_required():
            many = "+" if get_origin(field.annotation) is list else None
            command.add_argument(name, nargs=many, help=field.description)


class _Parser(argparse.ArgumentParser):
    """Argument errors in one line, as every other refusal (usage stays behind --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


Subcommands = Any  # argparse's _SubParsersAction, which it does not export


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rag-assets", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_document_commands(sub)
    _add_query_command(sub)
    _add_inspection_commands(sub)
    _add_evaluate_command(sub)
    _add_tool_commands(sub)
    _add_ui_command(sub)
    return parser


def _add(
    sub: Subcommands, name: str, help_text: str, description: str | None = None
) -> argparse.ArgumentParser:
    command = sub.add_parser(name, help=help_text, description=description)
    command.add_argument(
        "--data-dir", help="data folder (default: $RAG_ASSETS_DATA_DIR, then ./data)"
    )
    return command


def _add_document_commands(sub: Subcommands) -> None:
    """ingest and remove: documents in and out of a data folder."""
    ingest = _add(sub, "ingest", "put files in the inbox and materialize every asset for them")
    ingest.add_argument(
        "--template", help="chunking template for these files, over rag_collections.yaml"
    )
    ingest.add_argument(
        "--parser", help="auto, docling or pymupdf for these files, over rag_collections.yaml"
    )
    ingest.add_argument("--verbose", action="store_true", help="show every run event")
    ingest.add_argument("paths", nargs="+", help="files or folders")
    ingest.set_defaults(func=cmd_ingest)

    remove = _add(
        sub, "remove", "remove documents: inbox file, stored outputs, caches, index rows, runs"
    )
    remove.add_argument(
        "documents", nargs="+", help="a path in the inbox, a file name, or a doc id"
    )
    remove.set_defaults(func=cmd_remove)


def _add_query_command(sub: Subcommands) -> None:
    query = _add(sub, "query", "hybrid dense + BM25 retrieval with citations")
    query.add_argument("--top-k", type=int, default=5)
    query.add_argument("--json", action="store_true", help="print hits as JSON")
    query.add_argument("--doc", action="append", help="only this doc id (repeatable)")
    query.add_argument("--source", help="only source paths matching this glob, e.g. '*.pdf'")
    query.add_argument(
        "--template", dest="filter_template", action="append", help="only chunks of this template"
    )
    query.add_argument("--chunk-type", action="append", help="only this chunk type (repeatable)")
    query.add_argument("--section", help="only chunks whose header_path starts with this")
    query.add_argument("--pages", type=_pages, help="only chunks overlapping pages A-B (or A)")
    query.add_argument(
        "--no-infer",
        action="store_true",
        help="search flat: do not also search the documents the question names "
        "(by issuer, period or kind) nor the sections its vocabulary packs know it asks for",
    )
    query.add_argument(
        "--chunks",
        dest="group_pages",
        action="store_false",
        default=None,
        help="a hit per chunk: do not group a page's hits into one result",
    )
    query.add_argument("text")
    query.set_defaults(func=cmd_query)


def _add_inspection_commands(sub: Subcommands) -> None:
    """chunks, status and parse: what was made of a document."""
    chunks = _add(
        sub, "chunks", "print a document's stored chunks (every document without an argument)"
    )
    chunks.add_argument("--json", action="store_true")
    chunks.add_argument("document", nargs="?", help="a path in the inbox, a file name, or a doc id")
    chunks.set_defaults(func=cmd_chunks)

    status = _add(
        sub, "status", "every document: its last run's outcome, chunks and failing checks"
    )
    status.add_argument("--json", action="store_true", help="print the documents as JSON")
    status.set_defaults(func=cmd_status)

    parse = _add(sub, "parse", "print what a parser made of a file (the IR), without Dagster")
    parse.add_argument(
        "--parser", help="auto, docling or pymupdf (default: $RAG_ASSETS_PARSER, then auto)"
    )
    shape = parse.add_mutually_exclusive_group()
    shape.add_argument("--markdown", action="store_true", help="only the IR's markdown")
    shape.add_argument("--json", action="store_true", help="the whole IR as JSON")
    parse.add_argument("path")
    parse.set_defaults(func=cmd_parse)


def _add_evaluate_command(sub: Subcommands) -> None:
    evaluate = _add(sub, "evaluate", "score retrieval per template on evaluation sets, as a table")
    evaluate.add_argument(
        "--eval-dir",
        help="folder of evaluation sets (default: $RAG_ASSETS_EVAL_DIR, then DATA/eval)",
    )
    evaluate.add_argument(
        "--templates", nargs="+", help="templates to compare (default: fixed semantic auto)"
    )
    evaluate.add_argument(
        "--generate",
        action="store_true",
        help="write a question set for the ingested documents into the evaluation folder "
        "(asked of the configured LLM, else built from headings, table rows and defined "
        "terms), then stop",
    )
    evaluate.add_argument(
        "--pick-template",
        action="store_true",
        help="score every template on the questions tagged for --collection (or for every "
        "document) and let `auto` chunk that collection with the best one from the next ingest",
    )
    evaluate.add_argument(
        "--collection",
        help="with --generate: only the documents of this collection; with --pick-template: "
        "the collection to pick for",
    )
    evaluate.add_argument(
        "--per-document",
        type=int,
        help="with --generate: questions a document at most (default: a dozen)",
    )
    evaluate.add_argument(
        "--no-llm",
        action="store_true",
        help="with --generate: build the questions from the documents even with an LLM",
    )
    evaluate.set_defaults(func=cmd_evaluate)


def _add_tool_commands(sub: Subcommands) -> None:
    """each retrieval tool, and answer."""
    # The tools' models (and pydantic's) load when the parser is built, not at import.
    from rag_assets.retrieval.tools.registry import TOOLS

    for tool in TOOLS.values():
        command = _add(sub, tool.command, tool.summary, tool.description)
        _add_tool_arguments(command, tool.accepted)
        command.set_defaults(func=cmd_tool, tool=tool.name)

    ask = _add(sub, "answer", "a cited answer from the indexed documents, or 'not found'")
    ask.add_argument("--session", help="a JSON file of earlier turns, read and appended to")
    ask.add_argument(
        "--threshold", type=float, help="minimum evidence score (default: the calibrated one)"
    )
    ask.add_argument("--json", action="store_true")
    ask.add_argument("text")
    ask.set_defaults(func=cmd_answer)


def _add_ui_command(sub: Subcommands) -> None:
    ui = _add(sub, "ui", "open the Dagster UI on 127.0.0.1 for this data folder")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(func=cmd_ui)
