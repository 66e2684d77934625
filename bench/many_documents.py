"""Many short documents for bench/throughput.py (`--set many-documents`): where a run's fixed
costs (creating it, storing its events, planning) weigh most against the work done.

The corpus is real pages: N short PDFs cut from the SEC filings of
../shared/financebench-dev/pdfs, the filings taken in turn, each read on from its third page
(the cover and contents left out), named by filing and first page (from 0): `f03-p0042.pdf`.
With `--mixed` every 4th document is the same pages' text as Markdown, DOCX or HTML instead.
`rag-assets ingest` and the naive script then index the same files, and the table shows the
figures the targets are set on: runs, orchestration seconds a document and the ratio of the
wall times; then the embedding against the model's ceiling, measured between the two, how long
the runs and the parse workers waited for each other, and the busy cores per step.
"""

from __future__ import annotations

import argparse
import html
import time
from pathlib import Path

from embedding_ceiling import ceiling_run, embedding_against_ceiling
from parse_overlap import parse_overlap_report
from pipelines import end_to_end, naive_path
from step_usage import busy_report, step_rows, table

SKIPPED_PAGES = 2  # each filing's cover and contents
INGEST, NAIVE = "rag-assets ingest", "naive script"
MIXED_FORMATS = (".md", ".docx", ".html")


def page_sizes(spec: str) -> list[int]:
    """`2` -> [2]; `1-3` -> [1, 2, 3]: the documents' page counts, in turn."""
    low, _, high = spec.partition("-")
    sizes = list(range(int(low), int(high or low) + 1))
    if not sizes or sizes[0] < 1:
        raise SystemExit(f"--pages-per-document {spec}: a count or a range like 1-3")
    return sizes


def cuts(lengths: list[int], count: int, sizes: list[int]) -> list[tuple[int, int, int]]:
    """(filing, first page, last page) of each document: the filings in turn, each read on
    from where its last document ended, so no two documents share a page."""
    next_page = [SKIPPED_PAGES] * len(lengths)
    found: list[tuple[int, int, int]] = []
    turn = 0
    while len(found) < count:
        size = sizes[len(found) % len(sizes)]
        room = [f for f, length in enumerate(lengths) if next_page[f] + size <= length]
        if not room:
            raise SystemExit(
                f"the filings hold {len(found)} documents of {sizes} pages, not {count}"
            )
        f = min(room, key=lambda f: (f - turn) % len(lengths))
        found.append((f, next_page[f], next_page[f] + size - 1))
        next_page[f] += size
        turn = f + 1
    return found


def _paragraphs(source, first: int, last: int) -> list[str]:
    """The pages' text blocks, each on one line."""
    return [
        " ".join(block[4].split())
        for page in range(first, last + 1)
        for block in source[page].get_text("blocks")
        if block[6] == 0 and block[4].strip()
    ]


def _write_text(path: Path, title: str, paragraphs: list[str]) -> None:
    if path.suffix == ".md":
        path.write_text(f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n")
    elif path.suffix == ".html":
        body = "".join(f"<p>{html.escape(p)}</p>\n" for p in paragraphs)
        path.write_text(
            f"<!DOCTYPE html>\n<html><head><title>{html.escape(title)}</title></head><body>\n"
            f"<h1>{html.escape(title)}</h1>\n{body}</body></html>\n"
        )
    else:
        import docx

        document = docx.Document()
        document.add_heading(title, level=1)
        for p in paragraphs:
            document.add_paragraph(p)
        document.save(str(path))


def write_documents(
    filings: list[Path], folder: Path, count: int, sizes: list[int], mixed: bool
) -> tuple[list[Path], int]:
    """The corpus's files in `folder` and the filing pages they hold."""
    import pymupdf

    folder.mkdir(parents=True)
    sources = [pymupdf.open(f) for f in filings]
    files, pages = [], 0
    for i, (f, first, last) in enumerate(cuts([len(s) for s in sources], count, sizes)):
        stem = f"f{f:02d}-p{first:04d}"
        if mixed and i % 4 == 3:
            path = folder / (stem + MIXED_FORMATS[i // 4 % len(MIXED_FORMATS)])
            title = f"{filings[f].stem}, pages {first + 1}-{last + 1}"
            _write_text(path, title, _paragraphs(sources[f], first, last))
        else:
            path = folder / f"{stem}.pdf"
            document = pymupdf.open()
            document.insert_pdf(sources[f], from_page=first, to_page=last)
            document.save(path)
            document.close()
        files.append(path)
        pages += last - first + 1
    for s in sources:
        s.close()
    return files, pages


def dagster_figures(data_dir: Path) -> tuple[int, float]:
    """Runs on the data folder's instance and their steps' summed seconds."""
    from rag_assets.instance import open_instance
    from rag_assets.settings import Settings

    with open_instance(Settings(data_dir=data_dir)) as instance:
        run_ids = instance.get_run_ids()
        steps = sum(
            s.end_time - s.start_time
            for run_id in run_ids
            for s in instance.get_run_step_stats(run_id)
            if s.start_time and s.end_time
        )
    return len(run_ids), steps


def many_documents_run(args: argparse.Namespace, work: Path, filings: list[Path]) -> None:
    """The naive script, then `rag-assets ingest`, on the same short documents."""
    started = time.perf_counter()
    sizes = page_sizes(args.pages_per_document)
    files, pages = write_documents(filings, work / "documents", args.documents, sizes, args.mixed)
    n = len(files)
    formats = ", ".join(sorted({f.suffix for f in files}))
    print(
        f"many-documents: {n} documents ({formats}), {pages} filing pages, "
        f"{args.pages_per_document} a document, written in {time.perf_counter() - started:.1f} s\n"
    )
    # The naive script first, in its own process: the model and parse workers the ingest
    # leaves in this process would count in its peak memory otherwise.
    naive_seconds, naive_chunks, naive_spans, naive_samples, naive_tokens = naive_path(
        files, work / "naive"
    )
    ceiling = ceiling_run(filings)  # right before the ingest, on the machine it runs on
    seconds, chunks, spans, sampler = end_to_end(files, work / "e2e")
    runs, step_seconds = dagster_figures(work / "e2e")
    ingest_steps = step_rows(INGEST, spans, sampler.samples, pages)
    naive_steps = step_rows(NAIVE, naive_spans, naive_samples, pages)
    orchestration = (seconds - step_seconds) / n
    ratio = seconds / naive_seconds

    def row(figure: str, ingest, naive, ratio="", target="", met: bool | None = None) -> dict:
        met_text = "" if met is None else ("yes" if met else "no")
        return {
            "": figure,
            INGEST: ingest,
            NAIVE: naive,
            "ingest / naive": ratio,
            "target": target,
            "met": met_text,
        }

    rows = [
        row(
            "wall s",
            round(seconds, 1),
            round(naive_seconds, 1),
            f"{ratio:.2f}",
            "<= 0.6",
            ratio <= 0.6,
        ),
        row("pages/s", round(pages / seconds, 2), round(pages / naive_seconds, 2)),
        row("documents/s", round(n / seconds, 2), round(n / naive_seconds, 2)),
        row("Dagster runs", runs, "—", "", f"<= {n / 20:g}", runs <= n / 20),
        row(
            "orchestration s a document",
            f"{orchestration:.3f}",
            "—",
            "",
            "<= 0.050",
            orchestration <= 0.05,
        ),
        row("chunks / windows indexed", chunks, naive_chunks),
        row(
            "peak memory GiB (process + children)",
            ingest_steps[-1]["peak_rss_gib"],
            naive_steps[-1]["peak_rss_gib"],
        ),
    ]
    print(
        "## Many documents, default settings\n"
        + table(rows)
        + f"\n\ningest: steps {step_seconds:.1f} s of {seconds:.1f} s, over {runs} runs"
        + "\n\n## Per step (summed over the runs)\n"
        + table(ingest_steps + naive_steps)
        + "\n"
    )
    naive = (naive_tokens, naive_spans)
    print(embedding_against_ceiling(ceiling, pages, work / "e2e", naive, (INGEST, NAIVE)))
    print(parse_overlap_report(work / "e2e"))
    paths = {
        INGEST: (seconds, chunks, spans, sampler.samples),
        NAIVE: (naive_seconds, naive_chunks, naive_spans, naive_samples),
    }
    print(busy_report(paths))
