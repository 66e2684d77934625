"""Where a search's time goes inside Milvus Lite 3's engine (no gRPC, no project code).

    .venv/bin/python bench/lite_search_cost.py --db DIR [--size 100000] [--queries 30]

DIR is a folder `bench/latency.py --db DIR` built (close that run first: Milvus Lite serves one
process). Median CPU milliseconds of: one dense and one BM25 search of 20 candidates through
Milvus Lite's `Collection.search`; and, timed alone on the same segments, the parts every
search repeats over every row: the per-row loops of `search/executor_indexed.py` (each primary
key's newest version across segments, then each row's validity) and the FLAT brute force
(a copy of every vector, renormalized for COSINE or not for IP, times the query). The loops are
re-run here as Milvus Lite 3.2.2 writes them, so that they can be timed on their own.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from latency import DIM, Corpus, FixedQueries, unit_vectors


def cpu_ms(call: Callable[[int], object], count: int) -> float:
    call(0)
    samples = []
    for i in range(1, count + 1):
        started = time.process_time()
        call(i)
        samples.append(time.process_time() - started)
    return statistics.median(samples) * 1000


def main(argv: list[str] | None = None) -> int:
    from milvus_lite.db import MilvusLite

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args(argv)
    db = MilvusLite(str(args.db / "latency.db"))
    collection = db.get_collection(
        f"bench_{args.size}__{FixedQueries.name.replace('-', '_')}__{DIM}"
    )
    collection.load()
    corpus = Corpus()
    texts = [corpus.chunk(chinese=i % 10 == 9) for i in range(args.size)]
    picks = random.Random(3).sample(range(args.size), args.queries + 1)
    queries = [corpus.query(texts[i], chinese=i % 10 == 9) for i in picks]
    vectors = unit_vectors(np.random.default_rng(0), args.queries + 1)
    segments, deletions = collection._read_snapshot()

    def dense(i: int) -> None:
        collection.search([vectors[i].tolist()], top_k=20, anns_field="dense")

    def bm25(i: int) -> None:
        collection.search([queries[i]], top_k=20, anns_field="sparse_bm25")

    def row_loops(_: int) -> None:
        newest: dict = {}
        for segment in segments:
            for pk, seq in zip(list(segment.pks), segment.seqs.tolist(), strict=True):
                if pk not in newest or seq > newest[pk]:
                    newest[pk] = seq
        for segment in segments:
            pks, seqs = list(segment.pks), segment.seqs
            valid = np.zeros(len(pks), dtype=bool)
            for row in range(len(pks)):
                pk, seq = pks[row], int(seqs[row])
                valid[row] = newest.get(pk) == seq and not deletions.is_deleted(pk, seq)

    def brute_force(normalize: bool) -> Callable[[int], None]:
        def call(i: int) -> None:
            for segment in segments:
                stored, _ = segment.vector_data("dense")
                copy = stored[np.arange(len(stored))]
                if normalize:
                    copy = copy / np.linalg.norm(copy, axis=1, keepdims=True)
                copy @ vectors[i]

        return call

    print(
        f"Milvus Lite {importlib.metadata.version('milvus-lite')}, {args.size} rows in "
        f"{len(segments)} segments, median CPU ms of {args.queries} calls"
    )
    for name, call in [
        ("dense search (the collection's index)", dense),
        ("BM25 search", bm25),
        ("per-row version and validity loops", row_loops),
        ("FLAT brute force, COSINE", brute_force(True)),
        ("FLAT brute force, IP", brute_force(False)),
    ]:
        print(f"{name:40} {cpu_ms(call, args.queries):7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
