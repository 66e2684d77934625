"""Throughput, side by side in one run: parsing, embedding, the whole graph and a straight script.

    .venv/bin/python bench/throughput.py [--pages 1000] [--parts parse,embed,e2e,script,sensor]
    .venv/bin/python bench/throughput.py --set financebench-dev [--files N]
    .venv/bin/python bench/throughput.py --set many-documents [--documents N] [--mixed]

On the generated corpus (bench/generated_corpus.py: numbered sections, two columns, register
tables) and the fixture PDFs when ../shared is there:

- parse: pages/s and CPU seconds a page per parser (parser + adapter + repairs) against
  pypdfium2's raw text extraction, the floor on the work any parser must do; PyMuPDF in
  process and split over one parse worker per core, with the peak RSS of each;
- embed: chunks/s of the bundled model per runtime (FlagEmbedding, ONNX Runtime fp32 and int8)
  and batch size on the corpus's own chunks, with each runtime's cosine agreement with FlagEmbedding;
- e2e: `rag-assets ingest` of the corpus through every asset (wall time, pages/s, peak RSS), and
  per asset its summed step seconds and the peak RSS (this process and its parse workers) sampled
  while one of its steps ran;
- script: the same library calls with no Dagster (parse, template, embed, Milvus), and the
  ratio of the two (target: e2e at most 1.2x the script);
- sensor: one inbox scan + change plan over 10,000 files (target: under 2 s).

`--set financebench-dev` runs e2e, naive and script on the real SEC filings of
../shared/financebench-dev/pdfs (the first N by name with `--files N`) and prints them side by
side: wall time, pages/s, CPU seconds and chunks a page, peak RSS, the ratios ingest / naive
script (bench/naive_script.py: pymupdf4llm, fixed windows, MiniLM, Milvus Lite, no code of
ours) and ingest / script (Dagster's share), and per step (per asset for ingest) seconds, CPU
seconds a page and peak RSS. With e2e, right before the ingest, the embedding model's ceiling
on these cores (bench/embedding_ceiling.py), then the ingest's embedding against it (word
pieces embedded and padded, word pieces/s while encoding, share of the ceiling, word pieces a
page beside the naive script's), how long its runs waited on the parse workers and the workers
on its runs (bench/parse_overlap.py); and for every path, per step, the share of its wall time
with all the cores busy, fewer, none.

`--set many-documents` cuts N short documents (`--pages-per-document`, 2 or a range like 1-3)
from those filings, Markdown, DOCX and HTML among them with `--mixed`, and runs the naive
script and ingest on them: wall time, pages and documents/s, Dagster runs, orchestration
seconds a document and peak RSS against their targets (bench/many_documents.py), then the
embedding against the ceiling, the waits of parse and runs and the busy cores as above.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from embedding_ceiling import ceiling_run, embedding_against_ceiling  # noqa: E402
from generated_corpus import write_corpus  # noqa: E402
from many_documents import many_documents_run  # noqa: E402
from parse_overlap import parse_overlap_report  # noqa: E402
from pipelines import end_to_end, naive_path, straight_script  # noqa: E402
from step_usage import (  # noqa: E402
    UsageSampler,
    busy_report,
    cpu_seconds,
    side_by_side,
    step_rows,
    table,
)

SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures" / "pdf"
FILINGS = SHARED / "financebench-dev" / "pdfs"
PARSERS = ("pymupdf", "unstructured")
INGEST, NAIVE, SCRIPT = "rag-assets ingest", "naive script", "straight script (no Dagster)"


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def page_count(path: Path) -> int:
    import pypdfium2

    document = pypdfium2.PdfDocument(str(path))
    try:
        return len(document)
    finally:
        document.close()


def raw_text(path: Path) -> int:
    import pypdfium2

    document = pypdfium2.PdfDocument(str(path))
    try:
        return sum(len(page.get_textpage().get_text_range()) for page in document)
    finally:
        document.close()


def bench_parse(files: list[Path], label: str, parsers: list[str]) -> list[dict]:
    """pages/s and CPU seconds a page (this process and its parse workers) per parser; PyMuPDF
    in this process and split over one worker per core, each warmed on the first file."""
    from rag_assets.cores import available_cores
    from rag_assets.parsers.routing import ParserRouter
    from rag_assets.parsing import parse_file

    # Workers started for one corpus serve the next, as over one ingest, not stopped when idle.
    os.environ.setdefault("RAG_ASSETS_PARSE_WORKERS_IDLE_S", "3600")
    pages = sum(page_count(f) for f in files)
    rows = []
    cpu, started = cpu_seconds(), time.perf_counter()
    for f in files:
        raw_text(f)
    rows.append(_rate(label, "pypdfium2 text (floor)", pages, started, cpu))
    for name in parsers:
        for workers in (1, available_cores()) if name == "pymupdf" else (1,):
            router = ParserRouter(requested=name, parse_workers=workers)
            parse_file(files[0], router)  # warm: imports, model loads, workers started
            cpu, started = cpu_seconds(), time.perf_counter()
            for f in files:
                parse_file(f, router)
            what = f"{name}, {workers} workers" if workers > 1 else name
            rows.append(_rate(label, what, pages, started, cpu))
    return rows


def workers_peak_rss_gib() -> float:
    """The largest peak RSS (VmHWM) among this process's live children, 0 without any."""
    import psutil

    peaks = []
    for child in psutil.Process().children(recursive=True):
        status = Path(f"/proc/{child.pid}/status").read_text()
        peaks += [int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")]
    return max(peaks, default=0) / 2**20


def _rate(corpus: str, what: str, pages: int, started: float, cpu: tuple[float, float]) -> dict:
    seconds = time.perf_counter() - started
    own, total = cpu_seconds()
    return {
        "corpus": corpus,
        "what": what,
        "pages": pages,
        "seconds": round(seconds, 2),
        "pages_per_s": round(pages / seconds, 2),
        "cpu_s_per_page": round((total - cpu[1]) / pages, 3),
        # the serial part: joining ranges, serializing, adapter and repairs in the caller
        "caller_cpu_s_per_page": round((own - cpu[0]) / pages, 3),
        "peak_rss_gib": round(peak_rss_gib(), 2),
        "workers_peak_rss_gib": round(workers_peak_rss_gib(), 2),
    }


def corpus_chunks(files: list[Path], limit: int) -> list[str]:
    """What chunk_embeddings encodes for the first files: each chunk's context_text."""
    from rag_assets.embedding.models import EmbeddingSpec, resolve_model
    from rag_assets.parsers.routing import ParserRouter
    from rag_assets.parsing import parse_file
    from rag_assets.templates.registry import build_template
    from rag_assets.templates.tokens import TokenizerCounter

    router = ParserRouter(requested="auto")
    counter = TokenizerCounter.from_model_dir(resolve_model(EmbeddingSpec()).path)
    template = build_template("semantic")
    texts: list[str] = []
    for f in files:
        if len(texts) >= limit:
            break
        chunks = template.chunk(parse_file(f, router).document, counter)
        texts.extend(c.context_text or c.text for c in chunks)
    return texts[:limit]


def bench_embed(texts: list[str], batch_sizes: list[int]) -> list[dict]:
    """chunks/s and CPU ms a chunk (every thread of this process) of the bundled model per
    runtime and batch size on the same texts, and each runtime's agreement with FlagEmbedding
    (cosine per text: least and mean)."""
    import numpy as np

    from rag_assets.embedding.models import EmbeddingSpec, load_embedder
    from rag_assets.settings.groups import RUNTIMES

    reference = None
    rows = []
    for runtime in ("flag", *(r for r in RUNTIMES if r != "flag")):
        for batch_size in batch_sizes:
            embedder = load_embedder(EmbeddingSpec(runtime=runtime, batch_size=batch_size))
            embedder.encode_documents(texts[:8])
            started, cpu = time.perf_counter(), time.process_time()
            dense = embedder.encode_documents(texts).dense
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            reference = dense if reference is None else reference
            agreement = (dense * reference).sum(axis=1)
            rows.append(
                {
                    "runtime": embedder.runtime,
                    "batch": batch_size,
                    "chunks": len(texts),
                    "seconds": round(seconds, 1),
                    "chunks_per_s": round(len(texts) / seconds, 1),
                    "cpu_ms_per_chunk": round(1000 * cpu / len(texts), 1),
                    "cosine_least": round(float(agreement.min()), 4),
                    "cosine_mean": round(float(np.mean(agreement)), 4),
                }
            )
    return rows


def bench_sensor(root: Path, files: int = 10_000) -> dict:
    from rag_assets.sources.inbox import scan_inbox
    from rag_assets.sources.watch import plan_inbox_changes

    inbox = root / "inbox"
    for i in range(files):
        folder = inbox / f"batch-{i // 500:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\nBody {i}.\n")
    first = plan_inbox_changes(scan_inbox(inbox), {}, set(), lambda key: None)
    known = set(first.add_partitions)
    started = time.perf_counter()
    quiet = plan_inbox_changes(scan_inbox(inbox), first.state, known, lambda key: None)
    seconds = time.perf_counter() - started
    assert not quiet.runs and not quiet.add_partitions
    return {"inbox_files": files, "quiet_tick_s": round(seconds, 3)}


def filings(limit: int | None) -> list[Path]:
    """The FinanceBench filings in ../shared, the first `limit` by name."""
    found = sorted(FILINGS.glob("*.pdf"))
    if not found:
        raise SystemExit(
            f"no PDFs in {FILINGS}: --set financebench-dev reads ../shared beside the checkout"
        )
    return found[:limit]


def filings_run(args: argparse.Namespace, work: Path) -> None:
    """`rag-assets ingest`, the naive script and the straight script on the same filings."""
    parts = args.parts.split(",") if args.parts else ["e2e", "naive", "script"]
    files = filings(args.files)
    pages = sum(page_count(f) for f in files)
    print(f"financebench-dev: {len(files)} filings, {pages} pages ({FILINGS})\n")
    measured: dict[str, tuple[float, int, dict, list]] = {}
    naive_tokens = None
    if "naive" in parts:  # its own process: nothing of ours in its memory
        *naive_figures, naive_tokens = naive_path(files, work / "naive")
        measured[NAIVE] = tuple(naive_figures)
    if "script" in parts:  # before ingest, as in the generated corpus's run
        with UsageSampler() as sampler:
            seconds, chunks, _, spans = straight_script(files, work / "script")
        measured[SCRIPT] = (seconds, chunks, spans, sampler.samples)
    if "e2e" in parts:
        ceiling = ceiling_run(files)  # right before the ingest, on the machine it runs on
        seconds, chunks, spans, sampler = end_to_end(files, work / "e2e")
        measured[INGEST] = (seconds, chunks, spans, sampler.samples)
    paths = {name: measured[name] for name in (INGEST, NAIVE, SCRIPT) if name in measured}
    ratios = [(INGEST, NAIVE), (INGEST, SCRIPT)]
    print("## End to end, default settings\n" + side_by_side(pages, paths, ratios) + "\n")
    if "e2e" in parts:
        naive = (naive_tokens, measured[NAIVE][2]) if NAIVE in measured else None
        print(embedding_against_ceiling(ceiling, pages, work / "e2e", naive, (INGEST, NAIVE)))
        print(parse_overlap_report(work / "e2e"))
    print(busy_report(paths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--pages-per-doc", type=int, default=50)
    parser.add_argument(
        "--set",
        choices=("generated", "financebench-dev", "many-documents"),
        default="generated",
        help="the generated corpus, ingest and the scripts on ../shared/financebench-dev/pdfs, "
        "or on many short documents cut from them",
    )
    parser.add_argument("--documents", type=int, default=200, help="with many-documents")
    parser.add_argument(
        "--pages-per-document", default="2", help="with many-documents: 2, or 1-3 for a mix"
    )
    parser.add_argument(
        "--mixed", action="store_true", help="with many-documents: every 4th one MD/DOCX/HTML"
    )
    parser.add_argument("--files", type=int, help="only the first N files by name")
    parser.add_argument(
        "--parts",
        help="default parse,embed,script,e2e,sensor; with financebench-dev e2e,naive,script",
    )
    parser.add_argument("--corpus-dir", type=Path, help="keep the generated corpus here")
    parser.add_argument("--parsers", default=",".join(PARSERS), help="parsers to time in parse")
    parser.add_argument("--embed-chunks", type=int, default=512, help="chunks per embed run")
    parser.add_argument("--embed-batches", default="4,8,16,32", help="batch sizes to embed with")
    args = parser.parse_args()
    if args.files is not None and args.files < 1:
        parser.error("--files must be at least 1")
    if args.set == "financebench-dev" and not set((args.parts or "e2e").split(",")) <= {
        "e2e",
        "naive",
        "script",
    }:
        parser.error("--set financebench-dev runs the parts e2e, naive and script")
    if args.set == "many-documents" and (args.parts or args.documents < 1):
        parser.error("--set many-documents takes --documents N (at least 1) and no --parts")
    parts = set((args.parts or "parse,embed,script,e2e,sensor").split(","))
    work = Path(tempfile.mkdtemp(prefix="rag-throughput-"))
    try:
        if args.set == "financebench-dev":
            filings_run(args, work)
            return
        if args.set == "many-documents":
            many_documents_run(args, work, filings(None))
            return
        corpus_dir = args.corpus_dir or work / "corpus"
        files = write_corpus(corpus_dir, args.pages, args.pages_per_doc)[: args.files]
        pages = sum(page_count(f) for f in files)
        print(f"corpus: {len(files)} PDFs, {pages} pages ({corpus_dir})\n")
        if "parse" in parts:
            parsers = args.parsers.split(",")
            rows = bench_parse(files, "generated", parsers)
            fixtures = sorted(FIXTURES.glob("*.pdf")) if FIXTURES.is_dir() else []
            if fixtures:
                rows += bench_parse(fixtures, "fixtures", parsers)
            print("## Parse (parser + adapter + repairs)\n" + table(rows) + "\n")
        texts: list[str] = []
        ratio_rows = []
        if "script" in parts:
            seconds, chunks, texts, _ = straight_script(files, work / "script")
            ratio_rows.append(
                {
                    "path": "straight script (no Dagster)",
                    "seconds": round(seconds, 1),
                    "pages_per_s": round(pages / seconds, 2),
                    "chunks": chunks,
                    "peak_rss_gib": round(peak_rss_gib(), 2),
                }
            )
        if "e2e" in parts:
            seconds, chunks, spans, sampler = end_to_end(files, work / "e2e")
            ratio_rows.append(
                {
                    "path": "rag-assets ingest (every asset)",
                    "seconds": round(seconds, 1),
                    "pages_per_s": round(pages / seconds, 2),
                    "chunks": chunks,
                    "peak_rss_gib": round(peak_rss_gib(), 2),
                }
            )
        if ratio_rows:
            print("## End to end\n" + table(ratio_rows))
            if len(ratio_rows) == 2:
                print(
                    f"\nratio ingest / script: {ratio_rows[1]['seconds'] / ratio_rows[0]['seconds']:.2f}"
                    " (target <= 1.2); 1,000 pages target: <= 240 s"
                )
            print()
        if "e2e" in parts:
            steps = [
                {
                    "step": row["step"],
                    "runs": row["runs"],
                    "seconds": row["seconds"],
                    "peak_rss_gib": row["peak_rss_gib"],
                }
                for row in step_rows("ingest", spans, sampler.samples, pages)[:-2]
            ]
            print("## Ingest per step (summed over the documents' runs)\n" + table(steps) + "\n")
        if "embed" in parts:
            sample = corpus_chunks(files, args.embed_chunks)
            batches = [int(b) for b in args.embed_batches.split(",")]
            print("## Embedding (bundled model)\n" + table(bench_embed(sample, batches)) + "\n")
        if "sensor" in parts:
            print("## Sensor tick\n" + table([bench_sensor(work / "sensor")]) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
