"""The embedding model's own throughput on this machine, and the ingest's embedding against it.

    .venv/bin/python bench/embedding_ceiling.py [--seconds 3] [--json] [FILE.pdf ...]

The ceiling: windows of exactly 256 word pieces ([CLS], 254 word pieces of running text,
[SEP]: nothing padded) cut from the PDFs' text (pypdfium2, from each one's third page; without
any given, the filings of ../shared/financebench-dev/pdfs, else the generated corpus), run in
full batches through the bundled model's graph on the runtime the ingest plans for this
machine (the default: OpenVINO bf16 where the CPU computes bf16, else fp32), with the ingest's
engine options, for each thread count up to the cores this process may use, one batch at a
time, and as the ingest runs it (one thread a batch, a batch a core side by side), for each
batch size, `--seconds` each after a warm-up. The best word pieces/s is the
ceiling. Only the graph runs: tokenizing and pooling, which the ingest's encode seconds hold,
are left out.

bench/throughput.py measures it in a process of its own, so no session or thread pool stays
in the process the ingest is measured in, and sets against it what chunk_embeddings records
of the ingest: word pieces embedded and padded, and its encode seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from generated_corpus import write_corpus
from step_usage import materialization_records, table

FILINGS = Path(__file__).resolve().parents[2] / "shared" / "financebench-dev" / "pdfs"
WIDTH = 256  # word pieces a window: what sentence-transformers cuts MiniLM's input at
BATCHES = (1, 4, 8, 16, 32)
SECONDS = 3.0
SKIPPED_PAGES = 2  # a filing's cover and contents
TALLIED = ("embedded_tokens", "padding_tokens", "encode_seconds")


def token_windows(ids: list[int], bookends: list[int], count: int) -> list[list[int]]:
    """`count` windows of exactly WIDTH ids: consecutive runs of `ids` between the tokenizer's
    opening and closing special tokens (`bookends`, what it adds around an empty text)."""
    inner = WIDTH - len(bookends)
    if len(ids) < count * inner:
        raise SystemExit(f"{len(ids)} word pieces of text, {count * inner} wanted")
    opening, closing = bookends[:1], bookends[1:]
    return [opening + ids[i * inner : (i + 1) * inner] + closing for i in range(count)]


def text_ids(pdfs: list[Path], tokenizer, wanted: int) -> list[int]:
    """The word pieces of the PDFs' pages, no special tokens, until `wanted` of them."""
    import pypdfium2

    ids: list[int] = []
    for path in pdfs:
        document = pypdfium2.PdfDocument(str(path))
        try:
            for number in range(SKIPPED_PAGES, len(document)):
                text = document[number].get_textpage().get_text_range()
                ids += tokenizer.encode(text, add_special_tokens=False).ids
                if len(ids) >= wanted:
                    return ids
        finally:
            document.close()
    return ids


def timed_runs(graph, feed: dict, seconds: float, side_by_side: int = 1) -> tuple[int, float]:
    """Runs of `feed`, `side_by_side` at a time, and the seconds they took, for at least
    `seconds`, after an untimed one each (the graph's first run, or this batch shape's
    allocations)."""

    def caller(_: int) -> int:
        runs = 0
        while time.perf_counter() - started < seconds:
            graph(feed)
            runs += 1
        return runs

    with ThreadPoolExecutor(side_by_side) as pool:
        list(pool.map(lambda _: graph(feed), range(side_by_side)))
        started = time.perf_counter()
        runs = sum(pool.map(caller, range(side_by_side)))
    return runs, time.perf_counter() - started


def measure(pdfs: list[Path], seconds: float) -> dict:
    """The grid of word pieces/s over thread counts and batch sizes, and the ingest's own
    thread count and batch size."""
    from tokenizers import Tokenizer

    from rag_assets.cores import available_cores
    from rag_assets.embedding.models import EmbeddingSpec, planned_runtime, resolve_model
    from rag_assets.embedding.onnx_encoder import open_graph, texts_a_batch
    from rag_assets.embedding.onnx_export import (
        FP32_FILE,
        TOKENIZER_FILE,
        default_cache_dir,
        ensure_exported,
        read_info,
    )

    spec = EmbeddingSpec()
    model = resolve_model(spec)
    runtime, _ = planned_runtime(spec, model)
    if runtime in ("flag", "onnx-int8"):
        raise SystemExit(f"the ceiling is measured on an fp32 or bf16 export, not on {runtime!r}")
    folder = ensure_exported(model.path, model.name, spec.cache_dir or default_cache_dir())
    info = read_info(folder)
    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    bookends = tokenizer.encode("").ids
    count = max(BATCHES)
    windows = token_windows(
        text_ids(pdfs, tokenizer, count * (WIDTH - len(bookends))), bookends, count
    )
    cores = available_cores()
    # Each thread count running one batch at a time, and the ingest's way: one thread a batch,
    # as many batches side by side as there are cores.
    shapes = [(threads, 1) for threads in range(1, cores + 1)] + ([(1, cores)] if cores > 1 else [])
    grid = []
    for threads, side_by_side in shapes:
        graph = open_graph(folder / FP32_FILE, runtime, side_by_side, threads)
        for batch in BATCHES:
            ids = np.asarray(windows[:batch], dtype=np.int64)
            columns = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),  # one sequence: type 0 throughout
            }
            runs, elapsed = timed_runs(
                graph, {name: columns[name] for name in info.input_names}, seconds, side_by_side
            )
            grid.append(
                {
                    "threads": threads,
                    "side_by_side": side_by_side,
                    "batch": batch,
                    "runs": runs,
                    "seconds": round(elapsed, 2),
                    "tokens_per_s": round(runs * batch * WIDTH / elapsed),
                }
            )
    return {
        "grid": grid,
        "ingest": {
            "threads": 1,
            "side_by_side": cores,
            "batch": texts_a_batch(runtime, spec.batch_size),
        },
        "runtime": runtime,
    }


def ceiling_run(pdfs: list[Path], seconds: float = SECONDS) -> dict:
    """measure() in a process of its own."""
    command = [sys.executable, __file__, "--json", "--seconds", str(seconds)]
    result = subprocess.run(
        command + [str(p) for p in pdfs], capture_output=True, text=True, check=False
    )
    if result.returncode:
        raise SystemExit("embedding ceiling failed:\n" + result.stderr[-4000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def best(grid: list[dict]) -> dict:
    """The cell with the most word pieces/s; the first of equals."""
    return max(grid, key=lambda cell: cell["tokens_per_s"])


def ceiling_report(ceiling: dict) -> str:
    """The grid, the best cell and the ingest's own settings marked, and the ceiling."""
    top, ingest = best(ceiling["grid"]), ceiling["ingest"]
    rows = []
    for cell in ceiling["grid"]:
        marks = ["best"] if cell is top else []
        if all(cell[k] == ingest[k] for k in ("threads", "side_by_side", "batch")):
            marks.append("the ingest's settings")
        rows.append(cell | {"": ", ".join(marks)})
    return (
        f"{table(rows)}\n\nceiling: {top['tokens_per_s']:,} word pieces/s on "
        f"{ceiling['runtime']} (threads a batch {top['threads']}, "
        f"{top['side_by_side']} side by side, "
        f"batch {top['batch']}, {WIDTH} word pieces a text)"
    )


@dataclass(frozen=True)
class EncodeTally:
    tokens: int | None  # None: the runtime counted nothing (FlagEmbedding)
    padding: int | None
    encode_seconds: float


def encode_tally(records: list[dict]) -> EncodeTally:
    """chunk_embeddings' materializations summed: each document's word pieces and padding,
    and each step's encode seconds once (a step records its whole batch's on each document)."""
    steps = {(r["run_id"], r["step_key"]): r["encode_seconds"] for r in records}
    counted = all("embedded_tokens" in r for r in records)
    return EncodeTally(
        tokens=sum(r["embedded_tokens"] for r in records) if counted else None,
        padding=sum(r["padding_tokens"] for r in records) if counted else None,
        encode_seconds=sum(steps.values()),
    )


def chunk_embeddings_records(data_dir: Path) -> list[dict]:
    """Run, step and the TALLIED figures of each chunk_embeddings materialization."""
    return materialization_records(data_dir, "chunk_embeddings", TALLIED)


def embedding_figures(
    ceiling: float, pages: int, tokens: int, seconds: float, padding: int | None
) -> dict[str, str]:
    """What a path embedded and how fast against the ceiling: `tokens` word pieces in `seconds`
    of encoding, with `padding` positions run past the texts' ends (None: not counted)."""
    per_s = tokens / seconds if seconds else 0.0
    run = tokens + (padding or 0)
    return {
        "word pieces embedded": f"{tokens:,}",
        "word pieces a page": f"{tokens / pages:,.0f}",
        "padding (share of the positions run)": "not counted"
        if padding is None
        else f"{padding:,} ({padding / run if run else 0:.1%})",
        "encode seconds (naive script: its embed step)": f"{seconds:.1f}",
        "word pieces/s while encoding": f"{per_s:,.0f}",
        "share of the ceiling": f"{per_s / ceiling:.0%}",
    }


def embedding_report(
    ceiling: dict, pages: int, paths: dict[str, tuple[int | None, float, int | None]]
) -> str:
    """A column per path of its (word pieces, encode seconds, padding) against the ceiling;
    word pieces None: the runtime counted nothing."""
    top = best(ceiling["grid"])["tokens_per_s"]
    columns = {
        path: embedding_figures(top, pages, tokens, seconds, padding)
        for path, (tokens, seconds, padding) in paths.items()
        if tokens is not None
    }
    if not columns:
        return "no word pieces counted: FlagEmbedding counts none"
    figures = list(next(iter(columns.values())))
    return table(
        [
            {"": figure}
            | {path: columns.get(path, {}).get(figure, "not counted") for path in paths}
            for figure in figures
        ]
    )


def embedding_against_ceiling(
    ceiling: dict,
    pages: int,
    data_dir: Path,
    naive: tuple[int, dict] | None,
    names: tuple[str, str],
) -> str:
    """The ceiling's grid, then the ingest's embedding (what chunk_embeddings recorded in
    `data_dir`) and the naive script's (`naive`: its word pieces and its steps' spans)
    against it."""
    tally = encode_tally(chunk_embeddings_records(data_dir))
    paths = {names[0]: (tally.tokens, tally.encode_seconds, tally.padding)}
    if naive:
        tokens, spans = naive
        paths[names[1]] = (tokens, sum(end - start for start, end in spans["embed"]), None)
    return (
        "## Embedding: the model's ceiling on these cores\n"
        + ceiling_report(ceiling)
        + "\n\n## Embedding against the ceiling\n"
        + embedding_report(ceiling, pages, paths)
        + "\n"
    )


def source_pdfs(folder: Path) -> list[Path]:
    """The filings when ../shared holds them, else a generated corpus written into `folder`."""
    found = sorted(FILINGS.glob("*.pdf"))
    if found:
        return found
    return write_corpus(folder, pages=40, pages_per_doc=40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdfs", nargs="*", type=Path)
    parser.add_argument("--seconds", type=float, default=SECONDS, help="timed a cell")
    parser.add_argument("--json", action="store_true", help="one JSON line, for throughput.py")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rag-ceiling-") as work:
        ceiling = measure(args.pdfs or source_pdfs(Path(work)), args.seconds)
    print(json.dumps(ceiling) if args.json else ceiling_report(ceiling))


if __name__ == "__main__":
    main()
