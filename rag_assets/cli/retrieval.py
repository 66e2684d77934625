"""The commands that read the index: a query's hits, a retrieval tool's results, an answer."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rag_assets.cli.settings import command_settings
from rag_assets.errors import ConfigurationError
from rag_assets.text.terminal import visible, visible_line

if TYPE_CHECKING:
    from rag_assets.retrieval.search import RetrievedHit

# A page's further hits printed under it; a statement page can have a dozen.
_SAME_PAGE_SHOWN = 3


def cmd_query(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
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
        result = search(
            command_settings(args),
            args.text,
            top_k=args.top_k,
            filters=filters,
            infer=not args.no_infer,
            group_pages=args.group_pages,
        )
    except ConfigurationError as error:
        print(f"rag-assets query: {visible_line(str(error))}", file=sys.stderr)
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
    if result.documents is not None:
        named = result.documents
        print(
            visible_line(
                f"# documents named by {', '.join(repr(w) for w in named.words)} ({named.reason}): "
                f"{', '.join(named.doc_ids)}; searched alone too (--no-infer: flat search only)"
            )
        )
    if result.sections:
        print(
            f"# sections asked for: {visible_line(', '.join(result.sections))}; their chunks searched "
            "alone too (--no-infer: flat search only)"
        )
    if result.pages_grouped:
        ranked = (
            "by its best hit and the retrievers' votes for pages"
            if result.page_votes
            else "by its best hit (RAG_ASSETS_FUSION_PAGE_VOTES=false)"
        )
        print(
            f"# a result a page, ranked {ranked}; its further hits below it "
            "(--chunks: a result a chunk)"
        )
    for rank, hit in enumerate(result.hits, 1):
        rerank = f" rerank={hit.rerank_score:.3f}" if hit.rerank_score is not None else ""
        print(
            f"[{rank}] {visible_line(citation(hit))}  score={hit.score:.3f}{rerank}  found by {_ranks(hit)}"
        )
        print(f"    {_excerpt(hit.text, 300)}")
        for other in hit.same_page[:_SAME_PAGE_SHOWN]:
            section = " / ".join(other.metadata.get("headings") or []) or other.header_path
            print(
                f"    + {visible_line(section)}  score={other.score:.3f}  found by {_ranks(other)}"
            )
            print(f"      {_excerpt(other.text, 160)}")
        if len(hit.same_page) > _SAME_PAGE_SHOWN:
            more = len(hit.same_page) - _SAME_PAGE_SHOWN
            print(f"    + {more} more on this page (--json lists them)")
    return 0


def _ranks(hit: RetrievedHit) -> str:
    return ", ".join(f"{name} #{rank}" for name, rank in sorted(hit.found_by.items()))


def _excerpt(text: str, length: int) -> str:
    body = visible_line(" ".join(text.split()))
    return f"{body[:length]}{' …' if len(body) > length else ''}"


def cmd_tool(args: argparse.Namespace) -> int:
    """Run a typed retrieval tool on the index; print its results as JSON or as the tool shows
    them."""
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.retrieval.tools.registry import TOOLS
    from rag_assets.retrieval.tools.toolbox import open_toolbox

    tool = TOOLS[args.tool]
    values = {
        name: getattr(args, name)
        for name in tool.accepted.model_fields
        if getattr(args, name) is not None
    }
    try:
        with open_toolbox(command_settings(args)) as box:
            if box is None:
                print("nothing indexed yet; try `rag-assets ingest PATH`", file=sys.stderr)
                return 1
            # Validated once the index is open: with nothing indexed, that is what is said.
            options = tool.accepted.model_validate(values)
            results = tool.run(box, options)
    except (ConfigurationError, LookupError) as error:
        print(f"rag-assets {args.command}: {visible_line(str(error))}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([r.model_dump() for r in results], ensure_ascii=False, indent=2))
    elif not results:
        print(visible(tool.nothing(options)))
    for result in [] if args.json else results:
        print(visible(tool.show(result)))
    return 0


def cmd_answer(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.retrieval.answer import answer, model_client
    from rag_assets.retrieval.followup import read_session
    from rag_assets.retrieval.tools.toolbox import open_toolbox

    session = Path(args.session) if args.session else None
    try:
        history = read_session(session) if session and session.is_file() else []
    except ValueError as error:
        print(
            f"rag-assets answer: session file {session}: {visible_line(str(error))}",
            file=sys.stderr,
        )
        return 2
    settings = command_settings(args)
    threshold = {"threshold": args.threshold} if args.threshold is not None else {}
    try:
        with open_toolbox(settings) as box:
            if box is None:
                print("nothing indexed yet; try `rag-assets ingest PATH`", file=sys.stderr)
                return 1
            result = answer(args.text, box, model_client(settings), history, **threshold)
    except ConfigurationError as error:
        print(f"rag-assets answer: {visible_line(str(error))}", file=sys.stderr)
        return 1
    if session:
        turns = [t.model_dump() for t in [*history, result.turn()]]
        session.write_text(json.dumps(turns, ensure_ascii=False, indent=2), encoding="utf-8")
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    if result.standalone_question != result.question:
        print(f"# asked as: {visible_line(result.standalone_question)}")
    print(visible(result.answer))
    if result.status == "answered":
        print()
        for c in result.citations:
            print(f"[{c.marker}] {visible_line(c.citation)}")
    tools = ", ".join(f"{t.name} ({t.chosen_by}, {t.results})" for t in result.tools_used)
    print(f"\n# {result.status}; tools: {tools}; evidence {result.evidence.score:.2f}")
    for note in result.notes:
        print(f"# note: {visible_line(note)}")
    return 0
