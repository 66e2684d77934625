"""What each IR repair earns: its edits on real documents and retrieval with it switched off.

    .venv/bin/python bench/repairs.py                               # corpus, sample and fixtures
    .venv/bin/python bench/repairs.py --sets sample --repairs tables_merged heading_levels
    .venv/bin/python bench/repairs.py --no-corpus --sets fixtures

Per repair, one table: how many edits it made (and in how many documents) on the robustness
corpus (`../shared/corpus`, every file that parses) and on each evaluation set's documents, and
each set's MRR@10 and Recall@10 with that repair switched off (`RAG_ASSETS_REPAIRS_OFF` in the
pipeline), beside all repairs on. Edits are counted with all repairs on, as the pipeline runs
them. Retrieval is `bench/retrieval.py`'s: the `auto` template, hybrid search, the configured
embedding model, a Milvus Lite file in a temporary folder.

Files are parsed once, in a worker process (a file that crashes or hangs the parser fails
alone), and the parser's output is kept under `bench/results/repairs/parsed/` by the file's
hash: re-runs only normalize, chunk, embed and index again. A configuration whose documents
come out the same as with all repairs on (the repair made no edit there) has the same metrics
and is not evaluated again.
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.embedding.models import Embedder, EmbeddingBatch, EmbeddingSpec
from rag_assets.embedding.selection import select_embedder
from rag_assets.errors import DocumentError
from rag_assets.index.store import MilvusIndex
from rag_assets.normalize.adapt import to_ir
from rag_assets.normalize.repairs import REPAIR_NAMES
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.routing import ParserRouter
from rag_assets.retrieval.evaluation.comparison import RunSpec, compare_templates
from rag_assets.retrieval.evaluation.sets import EvalQuestion, load_eval_set
from rag_assets.settings import Settings
from rag_assets.sources.formats import detect_format
from rag_assets.sources.inbox import sha256_file
from rag_assets.sources.keys import partition_key_for
from rag_assets.tables.structure import structure_markdown, with_table_markdown
from rag_assets.templates.tokens import TokenCounter, TokenizerCounter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval import NAMED_SETS  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
CACHE = REPO / "bench" / "results" / "repairs" / "parsed"
# A file whose parse takes longer is recorded as failed (the corpus contract's own limit).
PARSE_TIMEOUT_S = 300
ALL_ON = "all on"


# --- parsing, once per file, in a worker process ----------------------------------------------


def _cached(path: Path) -> Path:
    return CACHE / f"{sha256_file(path)[:32]}.json"


def _failed(path: Path) -> Path:
    return _cached(path).with_suffix(".error")


def parse_worker() -> int:
    """Parse the paths read from stdin, saying which one starts before parsing it."""
    router = ParserRouter()
    for line in sys.stdin:
        path = Path(line.strip())
        print(path, flush=True)
        try:
            parsed, _ = router.parse(path, detect_format(path))
            _cached(path).write_text(parsed.model_dump_json())
        except Exception as error:  # a file the parsers refuse fails alone
            _failed(path).write_text(f"{type(error).__name__}: {error}".split("\n")[0])
    return 0


def parse_all(paths: Sequence[Path]) -> dict[Path, ParsedDocument]:
    """Every path's parse, from the cache or from worker processes; files that fail are left out."""
    CACHE.mkdir(parents=True, exist_ok=True)

    def todo() -> list[Path]:
        return [p for p in paths if not (_cached(p).exists() or _failed(p).exists())]

    while pending := todo():
        print(f"parsing {len(pending)} files", flush=True)
        worker = subprocess.Popen(
            [sys.executable, __file__, "--parse-worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write("".join(f"{p}\n" for p in pending).encode())
        worker.stdin.close()
        current: Path | None = None
        hung = False
        buffer = b""
        # Raw reads: a line held in a file object's buffer would look like silence to select.
        while True:
            if not select.select([worker.stdout], [], [], PARSE_TIMEOUT_S)[0]:
                hung = True
                worker.kill()
                break
            chunk = os.read(worker.stdout.fileno(), 65536)
            if not chunk:
                break
            *lines, buffer = (buffer + chunk).split(b"\n")
            if lines:
                current = Path(lines[-1].decode())
        code = worker.wait()
        if current is not None and not (_cached(current).exists() or _failed(current).exists()):
            reason = "timed out" if hung else f"parser process ended with {code}"
            _failed(current).write_text(reason)
    return {
        p: ParsedDocument.model_validate_json(_cached(p).read_text())
        for p in paths
        if _cached(p).exists()
    }


def normalize(
    parsed: dict[Path, ParsedDocument], skip: Sequence[str] = ()
) -> list[StandardizedDocument]:
    """The documents as normalized_documents leaves them; those it fails are left out."""
    documents = []
    for path, native in parsed.items():
        try:
            doc = to_ir(
                native,
                doc_id=partition_key_for(path.name),
                source_sha256=sha256_file(path),
                skip=skip,
            )
        except DocumentError:
            continue
        documents.append(doc.model_copy(update={"source_path": path.name}))
    return documents


def with_tables(documents: Sequence[StandardizedDocument]) -> list[StandardizedDocument]:
    """Tables in their chosen markdown, as table_markdown gives them to the chunks (vision off)."""
    return [with_table_markdown(doc, structure_markdown(doc)) for doc in documents]


def edits(documents: Sequence[StandardizedDocument]) -> dict[str, tuple[int, int]]:
    """Per repair: its edits over all documents, and how many documents it edited."""
    total: Counter[str] = Counter()
    touched: Counter[str] = Counter()
    for doc in documents:
        for name, count in doc.metadata.get("repairs", {}).items():
            total[name] += count
            touched[name] += count > 0
    return {name: (total[name], touched[name]) for name in REPAIR_NAMES}


# --- retrieval ---------------------------------------------------------------------------------


class EmbeddedOnce:
    """The embedder, each chunk text encoded once over all configurations: a repair switched
    off changes the chunks of a few documents, and only those are encoded again."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._rows: dict[str, tuple[np.ndarray, dict | None]] = {}

    def __getattr__(self, name: str):
        return getattr(self._embedder, name)

    def encode_documents(self, texts: list[str]) -> EmbeddingBatch:
        new = [t for t in dict.fromkeys(texts) if t not in self._rows]
        if new:
            batch = self._embedder.encode_documents(new)
            for i, text in enumerate(new):
                self._rows[text] = (batch.dense[i], batch.sparse[i] if batch.sparse else None)
        return EmbeddingBatch(
            dense=np.stack([self._rows[t][0] for t in texts]),
            sparse=[self._rows[t][1] for t in texts] if self._embedder.has_sparse else None,
        )


def evaluate(
    documents: Sequence[StandardizedDocument],
    questions: Sequence[EvalQuestion],
    embedder: Embedder,
    counter: TokenCounter,
    settings: Settings,
) -> tuple[float, float]:
    """MRR@10 and Recall@10 of the `auto` template's hybrid search over the documents."""
    with tempfile.TemporaryDirectory() as folder:
        uri = str(Path(folder) / "milvus.db")
        comparison = compare_templates(
            documents,
            questions,
            [RunSpec("auto")],
            embedder,
            counter,
            lambda prefix: MilvusIndex(
                uri,
                collection_prefix=prefix,
                text_analyzer=settings.text_analyzer,
                bm25_k1=settings.bm25_k1,
                bm25_b=settings.bm25_b,
            ),
            options={
                "max_tokens": settings.chunk_max_tokens,
                "overlap_tokens": settings.chunk_overlap_tokens,
            },
            fusion=settings.fusion,
        )
    metrics = comparison.runs[0].slices["all"].metrics
    return metrics["mrr@10"], metrics["recall@10"]


def _same(a: Sequence[StandardizedDocument], b: Sequence[StandardizedDocument]) -> bool:
    return all(x.elements == y.elements for x, y in zip(a, b, strict=True))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="*", default=list(NAMED_SETS), choices=list(NAMED_SETS))
    parser.add_argument("--repairs", nargs="+", default=list(REPAIR_NAMES), choices=REPAIR_NAMES)
    parser.add_argument("--no-corpus", action="store_true", help="skip the robustness corpus")
    parser.add_argument("--parse-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.parse_worker:
        return parse_worker()
    started = time.perf_counter()
    counts: dict[str, dict[str, tuple[int, int]]] = {}
    if not args.no_corpus:
        files = sorted(
            p
            for p in CORPUS.rglob("*")
            if p.is_file() and p.parent != CORPUS  # README, MANIFEST
        )
        parsed = parse_all(files)
        counts["corpus"] = edits(normalize(parsed))
        print(
            f"corpus: {len(parsed)} of {len(files)} files parsed "
            f"({time.perf_counter() - started:.0f} s so far)",
            flush=True,
        )

    settings = Settings.from_env()
    embedder, fallback = select_embedder(
        EmbeddingSpec(model=settings.embedding_model, runtime=settings.embedding_runtime)
    )
    if fallback:
        print(fallback)
    counter = TokenizerCounter.from_model_dir(embedder.model_dir)
    reused = EmbeddedOnce(embedder)
    metrics: dict[str, dict[str, tuple[float, float] | None]] = {}
    for name in args.sets:
        set_path, paths = NAMED_SETS[name]
        missing = [p for p in paths if not p.is_file()]
        if missing:
            print(f"missing documents (is ../shared beside the checkout?): {missing}")
            return 1
        questions = load_eval_set(set_path).questions
        parsed = parse_all(paths)
        baseline = normalize(parsed)
        counts[name] = edits(baseline)
        baseline = with_tables(baseline)
        began = time.perf_counter()
        metrics[name] = {ALL_ON: evaluate(baseline, questions, reused, counter, settings)}
        print(
            f"{name}: {len(questions)} questions, {len(parsed)} documents; all repairs on: "
            f"{metrics[name][ALL_ON]}, evaluated in {time.perf_counter() - began:.0f} s",
            flush=True,
        )
        for repair in args.repairs:
            began = time.perf_counter()
            documents = with_tables(normalize(parsed, skip=[repair]))
            metrics[name][repair] = (
                None  # no edit there: the same documents, the same metrics
                if _same(documents, baseline)
                else evaluate(documents, questions, reused, counter, settings)
            )
            print(
                f"{name} without {repair}: {metrics[name][repair]} "
                f"({time.perf_counter() - began:.0f} s)",
                flush=True,
            )

    print_table(args.repairs, counts, metrics)
    print(
        f"\nmodel {settings.embedding_model} ({embedder.runtime}), template auto, hybrid search; "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    return 0


def print_table(
    repairs: Sequence[str],
    counts: dict[str, dict[str, tuple[int, int]]],
    metrics: dict[str, dict[str, tuple[float, float] | None]],
) -> None:
    """Edits per place, then each set's MRR@10 / Recall@10 with the repair off (`=`: no edit
    there, so as with all on)."""
    head = [f"edits {place} (docs)" for place in counts]
    head += [f"{name} MRR@10 / R@10 off" for name in metrics]
    print("\n| repair | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * len(head))
    on = [f"{m[ALL_ON][0]:.3f} / {m[ALL_ON][1]:.3f}" for m in metrics.values()]
    print(f"| {ALL_ON} | " + " | ".join([""] * len(counts) + on) + " |")
    for repair in repairs:
        cells = [f"{counts[place][repair][0]} ({counts[place][repair][1]})" for place in counts]
        for found in metrics.values():
            off = found.get(repair, ())
            if off is None:
                cells.append("=")
            elif off:
                base = found[ALL_ON]
                cells.append(
                    f"{off[0]:.3f} / {off[1]:.3f} ({off[0] - base[0]:+.3f} / {off[1] - base[1]:+.3f})"
                )
            else:
                cells.append("")
        print(f"| {repair} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
