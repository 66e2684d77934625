"""Parser quality on the real PDFs in ../shared/fixtures/pdf, every available parser side by side.

    .venv/bin/python bench/parser_quality.py [--fixtures DIR] [--json OUT]

For each PDF and parser: heading precision / recall / F1 on text, the share of
matched headings at the reference's level, tables found vs expected and their
cell agreement, and pages per second (parse + adapter + repairs). The
reference is the `*.groundtruth.md` beside each PDF (Docling's full pipeline);
the row `docling-reference` runs our Docling adapter on the `*.groundtruth.json`
export of that same pipeline, to show what the adapter keeps of it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.routing import ParserRouter
from rag_assets.quality.groundtruth import (
    heading_scores,
    ir_headings,
    ir_tables,
    markdown_headings,
    markdown_tables,
    table_scores,
)

DEFAULT_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "pdf"
PARSERS = ("pymupdf", "unstructured", "docling")


def docling_export(pdf: Path) -> ParsedDocument | None:
    """Docling's own ground-truth export beside a fixture PDF, as a parser's output, if any."""
    exported = pdf.with_suffix(".groundtruth.json")
    if not exported.is_file():
        return None
    return ParsedDocument(
        parser="docling",
        parser_version="reference",
        source_path=str(pdf),
        file_format="pdf",
        native=json.loads(exported.read_text(encoding="utf-8")),
    )


def _available(name: str) -> tuple[bool, str]:
    try:
        router = ParserRouter(requested=name)
        if name == "docling":
            return router.parser_for("docling").pdf_models_available()
        router.parser_for(name)
    except Exception as error:  # an optional parser may be missing in any way
        return False, f"{type(error).__name__}: {error}"
    return True, ""


def _measure(doc, seconds: float, reference: Path | None) -> dict:
    row = {"pages": doc.page_count, "seconds": round(seconds, 2)}
    row["pages_per_s"] = round((doc.page_count or 0) / seconds, 2) if seconds else None
    if reference and reference.is_file():
        markdown = reference.read_text(encoding="utf-8")
        h = heading_scores(ir_headings(doc), markdown_headings(markdown))
        t = table_scores(ir_tables(doc), markdown_tables(markdown))
        row.update(
            heading_p=round(h.precision, 3),
            heading_r=round(h.recall, 3),
            heading_f1=round(h.f1, 3),
            level_acc=round(h.level_accuracy, 3),
            tables=f"{t.found}/{t.expected}",
            cell_agreement=round(t.cell_agreement, 3),
        )
    return row


def run(fixtures: Path) -> list[dict]:
    rows = []
    availability = {name: _available(name) for name in PARSERS}
    for name, (ok, why) in availability.items():
        if not ok:
            print(f"# {name}: not available for PDF here ({why})", file=sys.stderr)
    for pdf in sorted(fixtures.glob("*.pdf")):
        reference = pdf.with_suffix(".groundtruth.md")
        for name in PARSERS:
            if not availability[name][0]:
                continue
            router = ParserRouter(requested=name)
            started = time.perf_counter()
            try:
                parsed, _ = router.parse(pdf, "pdf")
                doc = to_ir(parsed, doc_id=pdf.stem, source_sha256="-")
            except Exception as error:  # a benchmark reports a failing parser, it does not stop
                rows.append({"document": pdf.name, "parser": name, "error": str(error)[:120]})
                continue
            rows.append(
                {
                    "document": pdf.name,
                    "parser": name,
                    **_measure(doc, time.perf_counter() - started, reference),
                }
            )
        parsed = docling_export(pdf)
        if parsed is not None:
            started = time.perf_counter()
            doc = to_ir(parsed, doc_id=pdf.stem, source_sha256="-")
            row = _measure(doc, time.perf_counter() - started, reference)
            rows.append(
                {"document": pdf.name, "parser": "docling-reference", **row, "pages_per_s": None}
            )
    return rows


def print_table(rows: list[dict]) -> None:
    columns = [
        "document",
        "parser",
        "pages",
        "heading_p",
        "heading_r",
        "heading_f1",
        "level_acc",
        "tables",
        "cell_agreement",
        "pages_per_s",
        "error",
    ]
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print(
            "  ".join(
                str(row.get(c, "") if row.get(c) is not None else "-").ljust(widths[c])
                for c in columns
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    rows = run(args.fixtures)
    print_table(rows)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
