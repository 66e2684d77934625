"""Our tables, cell by cell, against the tables other projects expect from the same files.

    .venv/bin/python bench/tables.py [--shared DIR] [--parsers pymupdf docling unstructured]
                                     [--docling-artifacts DIR] [--json OUT]
    .venv/bin/python bench/tables.py --statements [--shared DIR] [--parsed-cache DIR] [--json OUT]

The expectations, bench/tables/expected.json, restate pdfplumber's table tests and Docling's
ground-truth tables for the files of ../shared they cover (its `about` says how; Camelot's
test PDFs are none of ours). Each file is read by every parser path we ship for its format
(PDF: PyMuPDF, Docling's standard pipeline, Unstructured's `fast` strategy; DOCX and HTML:
Docling's model-free pipeline, Unstructured), normalized into the IR, and each table given the
structure markdown the pipeline writes without a vision model. The tables on the expected page
are scored against the expected one (rag_assets/quality/table_scores.py): the share of exact
cells in the best-aligned table, and TEDS where the peer states the whole table. Means are per
parser and format, over the expected tables. `docling-export` runs our Docling adapter on the
ground-truth JSON beside a fixture PDF: what the Docling PDF path gives where its models are
missing here, not a parse. A parser path that cannot run here is listed as skipped, with why.

`--statements` reads the filings of ../shared/financebench-dev/pdfs instead, as
bench/retrieval.py parses them (the default PDF path; `--parsed-cache` as there), and scores
whether each financial statement's values stay under their periods, row by row
(rag_assets/quality/statement_columns.py defines rows, periods, kept and shifted). A table is a
statement when the finance vocabulary pack finds it the section of one (`section_of`) from its
headings, innermost last: the headings between the table before it and it, on its page or the
page before; before them the page headers of its page (some filings title a statement only
there); with no such headings and the table before it ending on its page or the page before,
that table's headings outermost (a statement cut in parts). The pack also reads a title the
parser left in the table's first row. A continued table is one merged over pages
(`continued_on_pages`): it kept its heads when it has period columns and no shifted row (the IR
keeps no row where a part starts, so the whole table is judged). A split part is a statement
table with no heading of its own, or one saying it is continued (JPMorgan's `Selected
Consolidated balance sheets data (continued)`), that follows a table of its kind with period
columns ending on the page before: it kept its heads when it has period columns of its own.
The same scores over every table with period columns, statement or not, come as context;
`--json` lists the shifted rows of all of them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import NamedTuple

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file
from rag_assets.quality.statement_columns import RowScore, TableScore, score_statement
from rag_assets.quality.table_scores import Grid, expected_from_entry, markdown_grid, score_tables
from rag_assets.settings import Settings
from rag_assets.sources.formats import detect_format
from rag_assets.tables.structure import structure_markdown, with_table_markdown
from rag_assets.templates.base import HEADING_TYPES, heading_title
from rag_assets.vocabulary import Vocabulary, load_pack

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parser_quality import docling_export  # noqa: E402
from retrieval import parse_documents  # noqa: E402

EXPECTED = Path(__file__).resolve().parent / "tables" / "expected.json"
DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared"
PATHS = {
    "pdf": ("pymupdf", "docling", "unstructured"),
    "docx": ("docling", "unstructured"),
    "html": ("docling", "unstructured"),
}
EXPORT = "docling-export"
FILINGS = Path("financebench-dev") / "pdfs"
SHIFTED_SHOWN = 40  # shifted rows listed after the figures
STATEMENT_FIGURES = (
    "tables",
    "no_periods",
    "rows",
    "kept",
    "shifted",
    "markers",
    "continued",
    "continued_kept",
    "split",
    "split_kept",
)
EVERY_TABLE_FIGURES = ("tables", "rows", "kept")


def short_name(path: str) -> str:
    """The file's own name, without the corpus's `tests__pdfs__`-style folder prefix."""
    return Path(path).name.rsplit("__", 1)[-1]


def table_label(entry: dict) -> str:
    which = entry["table"]
    return f"#{which['index']}" if "index" in which else f"'{which['contains']}'"


def peer(entry: dict) -> str:
    return entry["source"]["repo"].split("/")[-1]


def with_markdown(doc: StandardizedDocument) -> StandardizedDocument:
    return with_table_markdown(doc, structure_markdown(doc))


def page_tables(doc: StandardizedDocument, page: int | None) -> list[Grid]:
    """The grids of the page's tables; a table of contents counts (our IR types a TOC table
    `toc`, the peers keep it among their tables)."""
    grids = [
        markdown_grid(element.text)
        for element in doc.elements
        if element.type in ("table", "toc")
        and (page is None or element.page_start <= page <= element.page_end)
    ]
    return [grid for grid in grids if grid]


class Parsers:
    """Each parser path built once; each file read once per path; what cannot run, and why."""

    def __init__(self, names: list[str], docling_artifacts: str | None) -> None:
        self.routers = {
            n: ParserRouter(requested=n, docling_artifacts_path=docling_artifacts) for n in names
        }
        self.skipped: dict[tuple[str, str], str] = {}
        self._documents: dict[tuple[str, Path], StandardizedDocument | str] = {}

    def why_not(self, name: str, file_format: str) -> str | None:
        key = (name, file_format)
        if key not in self.skipped:
            self.skipped[key] = self._why_not(name, file_format)
        return self.skipped[key] or None

    def _why_not(self, name: str, file_format: str) -> str:
        try:
            parser = self.routers[name].parser_for(name)
            if name == "docling" and file_format == "pdf":
                available, why = parser.pdf_models_available()
                return "" if available else why
        except Exception as error:  # an optional parser may be missing in any way
            return f"{type(error).__name__}: {error}"
        return ""

    def document(self, name: str, path: Path) -> StandardizedDocument | str:
        """The IR with its tables' markdown, or why the file could not be read."""
        key = (name, path)
        if key not in self._documents:
            try:
                self._documents[key] = with_markdown(parse_file(path, self.routers[name]).document)
            except Exception as error:  # a benchmark reports a failing file, it does not stop
                self._documents[key] = f"{type(error).__name__}: {str(error)[:100]}"
        return self._documents[key]


@cache
def exported_document(pdf: Path) -> StandardizedDocument | None:
    """Our Docling adapter on the Docling ground-truth export beside a fixture PDF, if any."""
    parsed = docling_export(pdf)
    if parsed is None:
        return None
    return with_markdown(to_ir(parsed, doc_id=pdf.stem, source_sha256="-"))


def score_entry(entry: dict, parser: str, doc: StandardizedDocument | str) -> dict:
    row = {
        "file": short_name(entry["path"]),
        "page": entry["page"],
        "table": table_label(entry),
        "peer": peer(entry),
        "parser": parser,
        "exact": None,
        "teds": None,
        "where": "",
    }
    if isinstance(doc, str):
        return row | {"where": f"failed: {doc}"}
    tables = page_tables(doc, entry["page"])
    score = score_tables(expected_from_entry(entry), tables)
    row |= {"exact": score.exact, "teds": score.teds}
    if score.table is None:
        row["where"] = "no table on the page" if entry["page"] else "no table"
    else:
        row["where"] = f"ours {score.table + 1}/{len(tables)}"
        if score.offset != (0, 0):
            row["where"] += f", shifted {score.offset[0]:+d} rows {score.offset[1]:+d} cols"
    return row


def run(shared: Path, names: list[str], docling_artifacts: str | None) -> tuple[list, list, dict]:
    """Score rows, shape rows, and {(parser, format): why it was skipped}."""
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    parsers = Parsers(names, docling_artifacts)
    unscored: dict[tuple[str, str], int] = defaultdict(int)

    def documents(relative: str):
        """(parser, its document) for each path of `relative`'s format that runs here."""
        path = shared / relative
        file_format = detect_format(path)
        for name in (n for n in PATHS[file_format] if n in names):
            if parsers.why_not(name, file_format):
                unscored[(name, file_format)] += 1
            else:
                yield name, parsers.document(name, path)
        if file_format == "pdf" and (exported := exported_document(path)) is not None:
            yield EXPORT, exported

    rows = [
        score_entry(entry, name, doc)
        for entry in expected["tables"]
        for name, doc in documents(entry["path"])
    ]
    shape_rows = [
        shape_row(shape, name, doc)
        for shape in expected["shapes"]
        for name, doc in documents(shape["path"])
        if name != EXPORT
    ]
    skipped = {
        key: f"{unscored[key]} expectations not scored: {why}"
        for key, why in parsers.skipped.items()
        if why
    }
    return rows, shape_rows, skipped


def shape_row(shape: dict, parser: str, doc: StandardizedDocument | str) -> dict:
    expected = f"{len(shape['rows'])} tables of {', '.join(map(str, shape['rows']))} rows"
    if "cols" in shape:
        expected += f" x {', '.join(map(str, shape['cols']))} cols"
    row = {"file": short_name(shape["path"]), "page": shape["page"], "parser": parser}
    if isinstance(doc, str):
        return row | {"expected": expected, "ours": f"failed: {doc}", "same": False}
    tables = page_tables(doc, shape["page"])
    ours = f"{len(tables)} tables of {', '.join(str(len(t)) for t in tables) or '-'} rows"
    same = [len(t) for t in tables] == shape["rows"]
    if "cols" in shape:
        ours += f" x {', '.join(str(max(map(len, t), default=0)) for t in tables) or '-'} cols"
        same = same and [max(map(len, t), default=0) for t in tables] == shape["cols"]
    if word := shape.get("last_row_contains"):
        expected += f", every last-row cell with '{word}'"
        holds = bool(tables) and all(t and all(word in c for c in t[-1]) for t in tables)
        ours += f", last rows {'all' if holds else 'not all'} with '{word}'"
        same = same and holds
    return row | {"expected": expected, "ours": ours, "same": same}


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _teds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def print_report(rows: list[dict], shape_rows: list[dict], skipped: dict) -> None:
    print("## Tables against the peers' expectations\n")
    print("| file | page | peer's table | peer | parser | exact cells % | TEDS | where |")
    print("|---|---:|---|---|---|---:|---:|---|")
    for r in rows:
        print(
            f"| {r['file']} | {r['page'] or '-'} | {r['table']} | {r['peer']} | {r['parser']} "
            f"| {_percent(r['exact'])} | {_teds(r['teds'])} | {r['where']} |"
        )
    for (name, file_format), why in sorted(skipped.items()):
        print(f"| (every {file_format}) | | | | {name} | skipped | skipped | {why} |")

    print("\n## Means per parser path (over the expected tables; TEDS over whole tables)\n")
    print("| parser | format | tables | exact cells % | whole tables | TEDS |")
    print("|---|---|---:|---:|---:|---:|")
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["parser"], Path(r["file"]).suffix.lstrip("."))].append(r)
        groups[(r["parser"], "all")].append(r)
    for (name, file_format), members in sorted(groups.items()):
        exact = [r["exact"] or 0.0 for r in members]
        teds = [r["teds"] for r in members if r["teds"] is not None]
        print(
            f"| {name} | {file_format} | {len(members)} | {_percent(_mean(exact))} "
            f"| {len(teds)} | {_teds(_mean(teds))} |"
        )
    for (name, file_format), why in sorted(skipped.items()):
        print(f"| {name} | {file_format} | skipped | | | {why} |")

    if shape_rows:
        print("\n## Tables the peers describe by count and size (not scored)\n")
        print("| file | page | parser | peer expects | ours | same |")
        print("|---|---:|---|---|---|---|")
        for r in shape_rows:
            print(
                f"| {r['file']} | {r['page']} | {r['parser']} | {r['expected']} | {r['ours']} "
                f"| {'yes' if r['same'] else 'no'} |"
            )


# --- statements -------------------------------------------------------------------------------


class FoundTable(NamedTuple):
    element: DocumentElement
    headings: list[str]  # outermost first
    continues: bool  # no heading of its own, or its own says it is continued


def table_headings(doc: StandardizedDocument) -> list[FoundTable]:
    """Each table with the headings its kind of statement is read from (the module docstring
    says which)."""
    page_headers: dict[int, list[str]] = defaultdict(list)
    for element in doc.elements:
        if element.type == "page_header":
            page_headers[element.page_start].append(" ".join(element.text.split()))
    tables = []
    since: list[tuple[int, str]] = []  # (page, title) of the headings since the last table
    before: tuple[int, list[str]] | None = None  # the last table's last page, its headings
    for element in doc.elements:
        if element.type in HEADING_TYPES:
            since.append((element.page_start, heading_title(element)))
        elif element.type == "table" and element.table is not None:
            near = element.page_start - 1
            own = [title for page, title in since if page >= near]
            carried = before[1] if not own and before is not None and before[0] >= near else []
            # Innermost last: the page's own headers name a statement the page before's don't.
            headings = [*carried, *page_headers[element.page_start], *own]
            continues = not own or "continued" in own[-1].casefold()
            tables.append(FoundTable(element, headings, continues))
            since, before = [], (element.page_end, own or carried)
    return tables


def statement_tables(
    doc: StandardizedDocument, pack: Vocabulary
) -> list[tuple[FoundTable, str | None, TableScore]]:
    """Every table, its kind of statement (None: not one) and its score."""
    return [
        (
            found,
            pack.section_of(found.headings, found.element.text),
            score_statement(found.element.table.grid()),  # table_headings keeps tables with one
        )
        for found in table_headings(doc)
    ]


def _period_heads(grid: Grid, score: TableScore) -> dict[int, str]:
    """The period columns' heads, each from the lowest header row naming one."""
    heads = {}
    for column in sorted(score.columns.periods):
        cells = [row[column] for row in grid[: score.columns.header_end] if row[column].strip()]
        heads[column] = cells[-1] if cells else ""
    return heads


def _why(row: RowScore) -> str:
    reasons = [
        f"{name} col {', '.join(map(str, columns))}"
        for name, columns in (("bare", row.bare), ("two amounts in", row.crowded), ("cut", row.cut))
        if columns
    ]
    return "; ".join(reasons)


def score_filing(doc: StandardizedDocument, pack: Vocabulary) -> tuple[dict, dict, list[dict]]:
    """The filing's statement figures, the figures of all its tables with period columns, and
    the shifted rows of these (`statement` None: of no statement)."""
    name = Path(doc.source_path).stem
    figures = dict.fromkeys(STATEMENT_FIGURES, 0)
    every = dict.fromkeys(EVERY_TABLE_FIGURES, 0)
    shifted = []
    previous: tuple[str, int, bool] | None = None  # the table before: kind, last page, periods
    for found, kind, score in statement_tables(doc, pack):
        element = found.element
        periods = bool(score.columns.periods)
        kept = sum(row.kept for row in score.rows)
        if periods:
            every["tables"] += 1
            every["rows"] += len(score.rows)
            every["kept"] += kept
        grid = element.table.grid()
        for row in score.rows:
            if not row.kept:
                shifted.append(
                    {
                        "filing": name,
                        "page": element.page_start,
                        "statement": kind,
                        "periods": _period_heads(grid, score),
                        "cells": grid[row.row],
                        "why": _why(row),
                    }
                )
        if kind is None:
            previous = None
            continue
        figures["tables"] += 1
        figures["no_periods"] += not periods
        figures["rows"] += len(score.rows)
        figures["kept"] += kept
        figures["shifted"] += len(score.rows) - kept
        figures["markers"] += score.markers
        if element.metadata.get("continued_on_pages"):
            figures["continued"] += 1
            figures["continued_kept"] += periods and kept == len(score.rows)
        if found.continues and previous == (kind, element.page_start - 1, True):
            figures["split"] += 1
            figures["split_kept"] += periods
        previous = (kind, element.page_end, periods)
    return {"filing": name, **figures}, every, shifted


def run_statements(folder: Path, cache: Path | None) -> tuple[list[dict], dict, list[dict]]:
    pack = load_pack("finance")
    rows, shifted = [], []
    every = dict.fromkeys(EVERY_TABLE_FIGURES, 0)
    for doc in parse_documents(sorted(folder.glob("*.pdf")), cache):
        figures, all_tables, rows_shifted = score_filing(doc, pack)
        rows.append(figures)
        shifted += rows_shifted
        every = {key: every[key] + all_tables[key] for key in every}
    total = {"filing": "total"} | {key: sum(r[key] for r in rows) for key in STATEMENT_FIGURES}
    return [*rows, total], every, shifted


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}" if whole else "-"


def print_statements(rows: list[dict], every: dict, shifted: list[dict]) -> None:
    print("## Statements: values under their periods\n")
    print(
        "| filing | statement tables | without periods | rows scored | kept | kept % | shifted "
        "| detached markers | continued (kept heads) | split parts (kept heads) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['filing']} | {r['tables']} | {r['no_periods']} | {r['rows']} | {r['kept']} "
            f"| {_share(r['kept'], r['rows'])} | {r['shifted']} | {r['markers']} "
            f"| {r['continued']} ({r['continued_kept']}) | {r['split']} ({r['split_kept']}) |"
        )
    print(
        f"\nEvery table with period columns, statement or not: {every['tables']} tables, "
        f"{every['rows']} rows scored, {every['kept']} kept ({_share(every['kept'], every['rows'])} %)."
    )
    shifted = [s for s in shifted if s["statement"]]
    if shifted:
        print("\n### Shifted statement rows\n")
        for s in shifted[:SHIFTED_SHOWN]:
            print(
                f"- {s['filing']} p.{s['page']} ({s['statement']}): {s['why']}; "
                f"periods {s['periods']}; row {s['cells']}"
            )
        if len(shifted) > SHIFTED_SHOWN:
            print(f"- ... and {len(shifted) - SHIFTED_SHOWN} more (in --json)")


def statements(args: argparse.Namespace) -> None:
    folder = args.shared / FILINGS
    if not any(folder.glob("*.pdf")):
        sys.exit(f"no PDF in {folder} (is ../shared beside the checkout?)")
    started = time.perf_counter()
    rows, every, shifted = run_statements(folder, args.parsed_cache)
    print_statements(rows, every, shifted)
    print(f"\n{len(rows) - 1} filings in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {"filings": rows, "every_table": every, "shifted": shifted}
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--parsers", nargs="+", default=["pymupdf", "docling", "unstructured"])
    parser.add_argument(
        "--docling-artifacts",
        default=Settings().docling_artifacts_path,
        help="folder with Docling's layout models (default: RAG_ASSETS_DOCLING_ARTIFACTS)",
    )
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument(
        "--statements",
        action="store_true",
        help="score the financebench-dev filings' statements: values under their periods",
    )
    parser.add_argument(
        "--parsed-cache",
        type=Path,
        help="with --statements: folder keeping the parser's output between runs (as "
        "bench/retrieval.py's; empty it after changing a parser)",
    )
    args = parser.parse_args()
    if args.statements:
        statements(args)
        return
    if not (args.shared / "corpus").is_dir() or not (args.shared / "fixtures").is_dir():
        sys.exit(f"{args.shared} has no corpus/ and fixtures/ (is ../shared beside the checkout?)")
    started = time.perf_counter()
    rows, shape_rows, skipped = run(args.shared, args.parsers, args.docling_artifacts)
    print_report(rows, shape_rows, skipped)
    print(f"\n{len(rows)} scores in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "rows": rows,
            "shapes": shape_rows,
            "skipped": [list(k) + [v] for k, v in skipped.items()],
        }
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
