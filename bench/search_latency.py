"""Separate per-retriever searches fused in Python vs Milvus' hybrid_search, in Milvus Lite.

    .venv/bin/python bench/search_latency.py [--rows 5000] [--queries 50]

The search API needs each retriever's ranks (`found_by`), which hybrid_search does not
return. This measures what that costs: dense + BM25 as two searches fused by weighted RRF
here, against one hybrid_search (RRFRanker) call alone and hybrid_search plus the two
searches it would still need for the ranks. Vectors are random unit vectors and texts are
drawn from a small vocabulary (the model's speed is not what is measured).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from rag_assets.index.milvus import IndexRow, MilvusIndex
from rag_assets.retrieval.fusion import weighted_rrf

WORDS = [
    "controller",
    "register",
    "buffer",
    "transfer",
    "command",
    "response",
    "interrupt",
    "status",
    "clock",
    "voltage",
    "timing",
    "block",
    "sector",
    "card",
    "host",
    "device",
    "error",
    "timeout",
    "reset",
    "power",
    "寄存器",
    "中断",
    "传输",
    "控制器",
    "错误",
    "时钟",
    "电源",
    "复位",
    "缓冲区",
    "命令",
]
DIM = 384


def rows(count: int, rng: random.Random) -> list[IndexRow]:
    vectors = np.random.default_rng(3).normal(size=(count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = []
    for i in range(count):
        text = " ".join(rng.choices(WORDS, k=40))
        out.append(
            IndexRow(
                chunk_id=f"{i:08d}",
                doc_id=f"doc{i // 100}",
                text=text,
                dense=vectors[i],
                chunk_index=i % 100,
            )
        )
    return out


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return 1000 * (time.perf_counter() - started)


def main() -> None:
    from pymilvus import AnnSearchRequest, RRFRanker

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    rng = random.Random(5)
    root = Path(tempfile.mkdtemp(prefix="latency_bench_"))
    try:
        with MilvusIndex(str(root / "milvus.db")) as index:
            collection = index.ensure_collection("bench-model", DIM, False)
            data = rows(args.rows, rng)
            for start in range(0, len(data), 100):
                batch = data[start : start + 100]
                index.replace_document(collection, batch[0].doc_id, batch)
            client = index._client  # the raw client, for the hybrid_search side
            queries = [
                (" ".join(rng.choices(WORDS, k=4)), data[rng.randrange(len(data))].dense)
                for _ in range(args.queries)
            ]
            pool = 20

            def separate(text: str, vector: list[float]) -> None:
                lists = {
                    "dense": [h.chunk_id for h in index.dense_search(collection, vector, pool)],
                    "bm25": [h.chunk_id for h in index.bm25_search(collection, text, pool)],
                }
                weighted_rrf(lists, {"dense": 1.0, "bm25": 1.0}, 60)

            def hybrid(text: str, vector: list[float]) -> None:
                requests = [
                    AnnSearchRequest([vector], "dense", {"metric_type": "COSINE"}, pool),
                    AnnSearchRequest([text], "sparse_bm25", {"metric_type": "BM25"}, pool),
                ]
                client.hybrid_search(
                    collection, requests, RRFRanker(60), limit=pool, output_fields=["text"]
                )

            def hybrid_and_ranks(text: str, vector: list[float]) -> None:
                hybrid(text, vector)
                index.dense_search(collection, vector, pool)
                index.bm25_search(collection, text, pool)

            print(f"{args.rows} rows, {args.queries} queries, {pool} candidates per retriever")
            for name, call in [
                ("dense + bm25 searches, fused here (chosen)", separate),
                ("hybrid_search alone (no found_by)", hybrid),
                ("hybrid_search + both searches for found_by", hybrid_and_ranks),
            ]:
                call(*queries[0])  # warm
                ms = [timed(lambda q=q, c=call: c(*q)) for q in queries]
                print(
                    f"{name:44} median {statistics.median(ms):6.1f} ms  "
                    f"p90 {statistics.quantiles(ms, n=10)[-1]:6.1f} ms",
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
