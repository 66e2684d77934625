"""The three ways from PDFs to a Milvus index that bench/throughput.py times side by side:
`rag-assets ingest` (every asset, through Dagster), the straight script (the same library calls
without Dagster) and bench/naive_script.py (no code of ours); each with its steps' (start, end)
spans on the clock of UsageSampler.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

from step_usage import UsageSampler, dagster_step_spans, samples_from

NAIVE_SCRIPT = Path(__file__).resolve().parent / "naive_script.py"


def straight_script(files: list[Path], data_dir: Path) -> tuple[float, int, list[str], dict]:
    """Parse, chunk, embed and index each file with the library calls the assets make; with
    each step's (start, end) spans, on the clock of UsageSampler."""
    from rag_assets.chunking import chunk_document
    from rag_assets.embedding.models import EmbeddingSpec, load_embedder
    from rag_assets.embedding.rows import embed_rows
    from rag_assets.index.rows import index_rows
    from rag_assets.index.store import MilvusIndex
    from rag_assets.parsers.routing import ParserRouter
    from rag_assets.parsing import parse_file
    from rag_assets.settings import Settings
    from rag_assets.templates.tokens import TokenizerCounter

    spans: dict[str, list[tuple[float, float]]] = {}

    @contextlib.contextmanager
    def step(name: str):
        start = time.time()
        yield
        spans.setdefault(name, []).append((start, time.time()))

    started = time.perf_counter()
    with step("load model"):
        # the settings' default parse workers, as ingest has them
        settings = Settings(data_dir=data_dir)
        router = ParserRouter(requested="auto", parse_workers=settings.parse_workers)
        embedder = load_embedder(EmbeddingSpec())
        counter = TokenizerCounter.from_model_dir(embedder.resolved.path)
    requested = settings.template  # the default, as ingest has it
    texts: list[str] = []
    chunks_total = 0
    with MilvusIndex(str(data_dir / "milvus.db")) as index:
        collection = index.ensure_collection(embedder.name, embedder.dimension, embedder.has_sparse)
        for f in files:
            with step("parse"):
                doc = parse_file(f, router).document
            with step("chunk"):
                chunks = chunk_document(doc, requested, {}, counter).rows
            with step("embed"):
                vectors, _ = embed_rows(embedder, chunks)
            with step("index"):
                index.replace_document(collection, doc.doc_id, index_rows(chunks, vectors))
            chunks_total += len(chunks)
            texts.extend(c.text for c in chunks)
    return time.perf_counter() - started, chunks_total, texts, spans


def naive_path(files: list[Path], data_dir: Path) -> tuple[float, int, dict, list, int]:
    """bench/naive_script.py in a process of its own, with the bundled model; its figures
    from when its imports were done, as the other paths import before their clocks start, and
    the word pieces it embedded."""
    from rag_assets.embedding.models import EmbeddingSpec, resolve_model

    data_dir.mkdir(parents=True)
    model = resolve_model(EmbeddingSpec()).path
    command = [sys.executable, str(NAIVE_SCRIPT), str(model), str(data_dir / "milvus.db")]
    with UsageSampler() as sampler:
        result = subprocess.run(
            command + [str(f) for f in files], capture_output=True, text=True, check=False
        )
    if result.returncode:
        raise SystemExit("naive script failed:\n" + result.stderr[-4000:])
    report = json.loads(result.stdout.strip().splitlines()[-1])
    spans = {step: [tuple(span) for span in found] for step, found in report["spans"].items()}
    return (
        report["seconds"],
        report["chunks"],
        spans,
        samples_from(sampler.samples, report["ready"]),
        report["tokens"],
    )


def end_to_end(files: list[Path], data_dir: Path) -> tuple[float, int, dict, UsageSampler]:
    """`rag-assets ingest` of the files into a fresh data folder; with each asset's step spans
    over the runs and the usage samples taken meanwhile."""
    from rag_assets.runner.ingest import ingest
    from rag_assets.settings import Settings

    settings = Settings(data_dir=data_dir)
    started = time.perf_counter()
    with UsageSampler() as sampler:
        outcomes = ingest(settings, files, log_level="ERROR")
    failed = [o.summary() for o in outcomes if not o.success]
    if failed:
        raise SystemExit("ingest failed:\n" + "\n".join(failed))
    seconds = time.perf_counter() - started
    return seconds, sum(o.chunks for o in outcomes), dagster_step_spans(settings), sampler
