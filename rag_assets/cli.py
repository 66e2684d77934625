"""`rag-assets`: ingest documents, query the index, inspect chunks, open the UI."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn, get_origin

from pydantic import BaseModel

from rag_assets.settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env(args.data_dir)
    overrides = {f"force_{k}": getattr(args, k, None) for k in ("template", "parser")}
    return settings.model_copy(update={k: v for k, v in overrides.items() if v})


def cmd_ingest(args: argparse.Namespace) -> int:
    import logging

    from rag_assets.interrupts import Interrupted, StopSignals
    from rag_assets.runner.receipt import replay

    # Waits (for the data folder, a pool slot, the Milvus Lite file) are said at INFO on stderr.
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    project_logger = logging.getLogger("rag_assets")
    project_logger.addHandler(handler)
    project_logger.setLevel(logging.INFO)
    log_level = "DEBUG" if args.verbose else "WARNING"
    settings, paths = _settings(args), [Path(p) for p in args.paths]

    def show(outcome) -> None:
        print(outcome.summary(), flush=True)  # as each document ends: a long ingest shows progress

    signum = None
    try:
        with StopSignals():
            # Unchanged since the last ingest: its receipt, without importing Dagster.
            outcomes = replay(settings, paths)
            if outcomes is None:
                from rag_assets.runner.ingest import IngestInterrupted, ingest

                try:
                    outcomes = ingest(settings, paths, log_level=log_level, report=show)
                except IngestInterrupted as stopped:
                    outcomes, signum = stopped.outcomes, stopped.signum
            else:
                for outcome in outcomes:
                    show(outcome)
    except Interrupted as stopped:  # before any document started (a wait, the receipt, imports)
        outcomes, signum = [], stopped.signum
    finally:
        # main() may run again in the same process (tests, scripts): one handler per call.
        project_logger.removeHandler(handler)
    documents = [o for o in outcomes if not o.skipped]
    failed = [o for o in documents if not o.success]
    skipped = len(outcomes) - len(documents)
    summary = f"{len(documents) - len(failed)} of {len(documents)} documents indexed" + (
        f", {skipped} files skipped" if skipped else ""
    )
    if signum is not None:
        interrupted = sum(1 for o in documents if o.stopped == "interrupted")
        not_started = sum(1 for o in documents if o.stopped == "not started")
        print(
            f"{summary}; stopped by {signal.Signals(signum).name}: {interrupted} interrupted, "
            f"{not_started} not started (run the same ingest again to finish)"
        )
        return 128 + signum  # the shell's convention for a process ended by a signal
    print(summary)
    return 1 if failed else 0


def cmd_remove(args: argparse.Namespace) -> int:
    from rag_assets.defs.lifecycle import remove_documents
    from rag_assets.defs.partitions import documents_partitions
    from rag_assets.defs.resources import MilvusResource
    from rag_assets.instance import hold_data_folder, open_instance
    from rag_assets.removal import DataFolder
    from rag_assets.sources.keys import is_valid_partition_key
    from rag_assets.storage import resolve_doc_id

    settings = _settings(args)
    folder = DataFolder.of(settings)
    # Held as an ingest holds it: no document is removed while an ingest writes it.
    with hold_data_folder(settings.data_dir):
        instance = open_instance(settings)
        known = set(instance.get_dynamic_partitions(documents_partitions.name))
        keys = []
        for document in args.documents:
            if is_valid_partition_key(document) and document in known | folder.keys_with_copies():
                keys.append(document)
                continue
            try:
                keys.append(resolve_doc_id(settings, document))
            except LookupError as error:
                print(f"rag-assets remove: {error}", file=sys.stderr)
                return 1
        milvus = MilvusResource(
            uri=settings.resolved_milvus_uri,
            token=settings.milvus_token,
            text_analyzer=settings.text_analyzer,
            bm25_k1=settings.bm25_k1,
            bm25_b=settings.bm25_b,
        )
        removed = remove_documents(instance, folder, milvus, keys)
        for key in set(keys) & known:
            instance.delete_dynamic_partition(documents_partitions.name, key)
    for done in removed:
        print(done.summary())
    return 0


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


def cmd_query(args: argparse.Namespace) -> int:
    from rag_assets.errors import ConfigurationError
    from rag_assets.retrieval.search import SearchFilters, citation, citation_dict, search

    filters = SearchFilters(
        doc_ids=args.doc,
        source_glob=args.source,
        templates=args.filter_template,
        chunk_types=args.chunk_type,
        header_path_prefix=args.section,
        page_from=args.pages[0] if args.pages else None,
        page_to=args.pages[1] if args.pages else None,
    )
    try:
        result = search(_settings(args), args.text, top_k=args.top_k, filters=filters)
    except ConfigurationError as error:
        print(f"rag-assets query: {error}", file=sys.stderr)
        return 1
    if args.json:
        answer = result.model_dump(exclude={"hits"})
        answer["hits"] = [citation_dict(h) for h in result.hits]
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return 0
    if not result.hits:
        print("no results (is anything ingested? try `rag-assets ingest PATH`)")
        return 0
    weights = ", ".join(f"{name} {weight:g}" for name, weight in result.weights.items())
    print(f"# language {result.language}; fusion {weights}; {result.rerank_note}")
    for rank, hit in enumerate(result.hits, 1):
        found = ", ".join(f"{name} #{r}" for name, r in sorted(hit.found_by.items()))
        rerank = f" rerank={hit.rerank_score:.3f}" if hit.rerank_score is not None else ""
        print(f"[{rank}] {citation(hit)}  score={hit.score:.3f}{rerank}  found by {found}")
        body = " ".join(hit.text.split())
        print(f"    {body[:300]}{' …' if len(body) > 300 else ''}")
    return 0


def cmd_chunks(args: argparse.Namespace) -> int:
    from rag_assets.storage import read_chunks

    settings = _settings(args)
    try:
        chunks = read_chunks(settings, args.document)
    except LookupError as error:
        print(f"rag-assets chunks: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([c.model_dump() for c in chunks], ensure_ascii=False, indent=2))
        return 0
    for c in chunks:
        print(
            f"--- {c.doc_id} #{c.chunk_index} {c.chunk_type} {c.header_path} p.{c.page_start}-{c.page_end} ({c.token_count} tokens)"
        )
        print(c.text)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from rag_assets.defs.status import documents_status
    from rag_assets.instance import open_instance
    from rag_assets.sources.inbox import scan_inbox

    settings = _settings(args)
    paths = {f.partition_key: f.relative_path for f in scan_inbox(settings.inbox_dir)}
    found = documents_status(open_instance(settings), paths)
    if args.json:
        print(json.dumps([s.as_dict() for s in found], ensure_ascii=False, indent=2))
        return 0
    for status in found:
        print(status.line())
    failed = sum(1 for s in found if s.outcome == "FAILED")
    print(f"{len(found)} documents, {failed} failed")
    return 0


def _describe(element) -> str:
    level = f" h{element.level}" if element.level else ""
    pages = f"p.{element.page_start}" + (
        f"-{element.page_end}" if element.page_end != element.page_start else ""
    )
    first_line = element.text.strip().splitlines()[0] if element.text.strip() else ""
    return f"{element.type}{level:4} {pages:8} {first_line[:100]}"


def cmd_parse(args: argparse.Namespace) -> int:
    from rag_assets.errors import ConfigurationError, DocumentError
    from rag_assets.parsers.routing import ParserRouter
    from rag_assets.parsing import parse_file

    settings = _settings(args)
    try:
        router = ParserRouter(
            settings.force_parser or settings.parser,
            settings.docling_artifacts_path,
            settings.parse_workers,
        )
        result = parse_file(Path(args.path), router)
    except (DocumentError, ConfigurationError, FileNotFoundError) as error:
        print(f"rag-assets parse: {error}", file=sys.stderr)
        return 1
    doc = result.document
    if args.json:
        print(doc.model_dump_json(indent=2))
        return 0
    if args.markdown:
        print(doc.markdown)
        return 0
    print(
        f"# {doc.source_path}: parser {result.choice.parser} {doc.parser_version} ({result.choice.reason})"
    )
    for note in [*result.choice.fallbacks, *result.parsed.notes]:
        print(f"# note: {note}")
    for note in doc.metadata.get("degraded", []):
        print(f"# degraded: {note}")
    print(
        f"# {doc.page_count or 'no'} pages, {len(doc.elements)} elements, title: {doc.title or '-'}"
    )
    for element in doc.elements:
        print(_describe(element))
    print("\n" + doc.markdown)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from rag_assets.runner.evaluation import comparison_of, evaluate

    settings = _settings(args)
    if args.eval_dir:
        settings = settings.model_copy(update={"eval_dir": Path(args.eval_dir).resolve()})
    result = evaluate(settings, templates=args.templates)
    comparison = comparison_of(result)
    if comparison is None:
        failure = next((e for e in result.all_events if e.is_step_failure), None)
        error = failure.event_specific_data.error if failure else None
        print(
            f"rag-assets evaluate: {error.message.strip() if error else 'failed'}", file=sys.stderr
        )
        return 1
    print(comparison.markdown_table())
    print(
        f"{comparison.questions} questions over {comparison.documents} documents"
        + (
            f", {len(comparison.skipped)} skipped (document not ingested)"
            if comparison.skipped
            else ""
        )
    )
    checks = result.get_asset_check_evaluations()
    for check in checks:
        print(
            f"check {check.check_name}: {'passed' if check.passed else 'FAILED'} {check.description or ''}"
        )
    return 0 if all(c.passed for c in checks) else 1


def cmd_ui(args: argparse.Namespace) -> int:
    from rag_assets.instance import ensure_dagster_home

    settings = _settings(args)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(ensure_dagster_home(settings)),
        "RAG_ASSETS_DATA_DIR": str(settings.data_dir),
    }
    workspace = Path(__file__).resolve().parents[1] / "workspace.yaml"
    target = ["-w", str(workspace)] if workspace.is_file() else ["-m", "rag_assets.definitions"]
    command = [
        sys.executable,
        "-m",
        "dagster",
        "dev",
        "-h",
        "127.0.0.1",
        "-p",
        str(args.port),
        *target,
    ]
    os.execvpe(command[0], command, env)


def cmd_tool(args: argparse.Namespace) -> int:
    """Run a typed retrieval tool on the index; print its results as JSON or as the tool shows
    them."""
    from rag_assets.errors import ConfigurationError
    from rag_assets.retrieval.tools.registry import TOOLS
    from rag_assets.retrieval.tools.toolbox import open_toolbox

    tool = TOOLS[args.tool]
    values = {
        name: getattr(args, name)
        for name in tool.accepted.model_fields
        if getattr(args, name) is not None
    }
    try:
        with open_toolbox(_settings(args)) as box:
            if box is None:
                print("nothing indexed yet; try `rag-assets ingest PATH`", file=sys.stderr)
                return 1
            # Validated once the index is open: with nothing indexed, that is what is said.
            options = tool.accepted.model_validate(values)
            results = tool.run(box, options)
    except (ConfigurationError, LookupError) as error:
        print(f"rag-assets {args.command}: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([r.model_dump() for r in results], ensure_ascii=False, indent=2))
    elif not results:
        print(tool.nothing(options))
    for result in [] if args.json else results:
        print(tool.show(result))
    return 0


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


def cmd_answer(args: argparse.Namespace) -> int:
    from rag_assets.errors import ConfigurationError
    from rag_assets.retrieval.answer import answer, model_client
    from rag_assets.retrieval.followup import read_session
    from rag_assets.retrieval.tools.toolbox import open_toolbox

    session = Path(args.session) if args.session else None
    try:
        history = read_session(session) if session and session.is_file() else []
    except ValueError as error:
        print(f"rag-assets answer: session file {session}: {error}", file=sys.stderr)
        return 2
    settings = _settings(args)
    threshold = {"threshold": args.threshold} if args.threshold is not None else {}
    try:
        with open_toolbox(settings) as box:
            if box is None:
                print("nothing indexed yet; try `rag-assets ingest PATH`", file=sys.stderr)
                return 1
            result = answer(args.text, box, model_client(settings), history, **threshold)
    except ConfigurationError as error:
        print(f"rag-assets answer: {error}", file=sys.stderr)
        return 1
    if session:
        turns = [t.model_dump() for t in [*history, result.turn()]]
        session.write_text(json.dumps(turns, ensure_ascii=False, indent=2), encoding="utf-8")
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    if result.standalone_question != result.question:
        print(f"# asked as: {result.standalone_question}")
    print(result.answer)
    if result.status == "answered":
        print()
        for c in result.citations:
            print(f"[{c.marker}] {c.citation}")
    tools = ", ".join(f"{t.name} ({t.chosen_by}, {t.results})" for t in result.tools_used)
    print(f"\n# {result.status}; tools: {tools}; evidence {result.evidence.score:.2f}")
    for note in result.notes:
        print(f"# note: {note}")
    return 0


class _Parser(argparse.ArgumentParser):
    """Argument errors in one line, as every other refusal (usage stays behind --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from rag_assets.retrieval.tools.registry import TOOLS

    parser = _Parser(prog="rag-assets", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str, description: str | None = None) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=description)
        command.add_argument(
            "--data-dir", help="data folder (default: $RAG_ASSETS_DATA_DIR, then ./data)"
        )
        return command

    ingest = add("ingest", "put files in the inbox and materialize every asset for them")
    ingest.add_argument(
        "--template", help="chunking template for these files, over rag_collections.yaml"
    )
    ingest.add_argument(
        "--parser", help="auto, docling or pymupdf for these files, over rag_collections.yaml"
    )
    ingest.add_argument("--verbose", action="store_true", help="show every run event")
    ingest.add_argument("paths", nargs="+", help="files or folders")
    ingest.set_defaults(func=cmd_ingest)

    remove = add("remove", "remove documents: inbox file, stored outputs, caches, index rows, runs")
    remove.add_argument(
        "documents", nargs="+", help="a path in the inbox, a file name, or a doc id"
    )
    remove.set_defaults(func=cmd_remove)

    query = add("query", "hybrid dense + BM25 retrieval with citations")
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
    query.add_argument("text")
    query.set_defaults(func=cmd_query)

    chunks = add("chunks", "print a document's stored chunks (every document without an argument)")
    chunks.add_argument("--json", action="store_true")
    chunks.add_argument("document", nargs="?", help="a path in the inbox, a file name, or a doc id")
    chunks.set_defaults(func=cmd_chunks)

    status = add("status", "every document: its last run's outcome, chunks and failing checks")
    status.add_argument("--json", action="store_true", help="print the documents as JSON")
    status.set_defaults(func=cmd_status)

    parse = add("parse", "print what a parser made of a file (the IR), without Dagster")
    parse.add_argument(
        "--parser", help="auto, docling or pymupdf (default: $RAG_ASSETS_PARSER, then auto)"
    )
    shape = parse.add_mutually_exclusive_group()
    shape.add_argument("--markdown", action="store_true", help="only the IR's markdown")
    shape.add_argument("--json", action="store_true", help="the whole IR as JSON")
    parse.add_argument("path")
    parse.set_defaults(func=cmd_parse)

    evaluate = add("evaluate", "score retrieval per template on evaluation sets, as a table")
    evaluate.add_argument(
        "--eval-dir",
        help="folder of evaluation sets (default: $RAG_ASSETS_EVAL_DIR, then DATA/eval)",
    )
    evaluate.add_argument(
        "--templates", nargs="+", help="templates to compare (default: fixed semantic auto)"
    )
    evaluate.set_defaults(func=cmd_evaluate)

    for tool in TOOLS.values():
        command = add(tool.command, tool.summary, tool.description)
        _add_tool_arguments(command, tool.accepted)
        command.set_defaults(func=cmd_tool, tool=tool.name)

    ask = add("answer", "a cited answer from the indexed documents, or 'not found'")
    ask.add_argument("--session", help="a JSON file of earlier turns, read and appended to")
    ask.add_argument(
        "--threshold", type=float, help="minimum evidence score (default: the calibrated one)"
    )
    ask.add_argument("--json", action="store_true")
    ask.add_argument("text")
    ask.set_defaults(func=cmd_answer)

    ui = add("ui", "open the Dagster UI on 127.0.0.1 for this data folder")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(func=cmd_ui)
    return parser


def main(argv: list[str] | None = None) -> int:
    from pydantic import ValidationError

    from rag_assets.errors import ConfigurationError
    from rag_assets.retrieval.inputs import InvalidInput, one_line

    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()
    except (InvalidInput, ValidationError) as error:
        # A value refused at the boundary: one line naming it, never a traceback.
        message = one_line(error) if isinstance(error, ValidationError) else str(error)
        print(f"rag-assets {args.command}: {message}", file=sys.stderr)
        return 2
    except ConfigurationError as error:
        # A setting or rag_collections.yaml the command cannot run with; the message names it.
        print(f"rag-assets {args.command}: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader left early (`| head -1`): stop quietly, as Unix tools do, with the status of a
        # process ended by SIGPIPE. stdout goes to /dev/null so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return code


if __name__ == "__main__":
    sys.exit(main())
