"""The search API's Milvus calls, one by one, in Milvus Lite or on a Milvus server.

    .venv/bin/python bench/search_latency.py [--sizes 10000,100000] [--queries 100]
        [--uri http://127.0.0.1:19530] [--db DIR]

Without `--uri` the engine is Milvus Lite (the project's default, in `--db` or a temporary
folder); with it, the Milvus server at that address.

Rows and queries are `bench/latency.py`'s (Zipf-weighted English, one chunk in ten Chinese,
random unit vectors, 3-6 word queries); query vectors are precomputed, so no model runs. The
collection has the project's fields, jieba BM25 function and FLAT / SPARSE_INVERTED indexes,
plus a second copy of the vectors under a COSINE index. Per query, median and p95 of:

- `dense IP` / `dense COSINE`: one dense search (20 candidates, ids only) on the project's
  index (inner product over unit vectors) and on the COSINE copy; their ranked ids must agree;
- `dense, shown fields`: the same search returning every field a hit shows (text, metadata,
  provenance), and `10 rows by key`: the read of the shown rows that the id-only searches need;
- `Retriever dense`, `bm25`, `hybrid`: the project's `Retriever.search` (top 10): the id-only
  searches, weighted RRF, one primary-key query for the shown rows;
- `hybrid_search`: one `hybrid_search` call with Milvus' RRFRanker (ids only, no per-retriever
  ranks, which `found_by` needs) plus the same row query: what fusing in Milvus would cost.

`CPU ms` is the mean CPU time per call of this process and Milvus Lite's engine (its child)
plus, with `--server-pid`, the server's (from /proc): on a shared machine, what a call costs on
an idle core.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from latency import CHUNKS_PER_DOC, DIM, Corpus, FixedQueries, cpu_seconds, unit_vectors

from rag_assets.index.rows import IndexRow
from rag_assets.index.schema import (
    ANALYZERS,
    ENGINE_BM25,
    SCALAR_FIELDS,
    collection_indexes,
    collection_schema,
)
from rag_assets.index.store import MilvusIndex
from rag_assets.retrieval.search import Retriever
from rag_assets.settings.fusion import FusionSettings

POOL = 20  # candidates per retriever, as FusionSettings' default
TOP_K = 10
INSERT_BATCH = 1000


def create(client: Any, name: str) -> None:
    """The project's collection (jieba BM25 with the engine's k1 and b), plus the vectors again
    under a COSINE index."""
    from pymilvus import DataType

    schema = collection_schema(client, DIM, False, {}, ANALYZERS["jieba"])
    schema.add_field("dense_cosine", DataType.FLOAT_VECTOR, dim=DIM)
    indexes = collection_indexes(client, False, *ENGINE_BM25)
    indexes.add_index("dense_cosine", index_type="FLAT", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=indexes)


def build(index: MilvusIndex, size: int, corpus: Corpus) -> tuple[str, list[str], float]:
    """The collection of `size` rows (reused when complete) and the chunk texts."""
    client = index._client  # the raw client: this collection is made here, not by MilvusIndex
    name = f"search_latency_{size}"
    texts = [corpus.chunk(chinese=i % 10 == 9) for i in range(size)]
    if client.has_collection(name):
        client.load_collection(name)
        counted = client.query(name, filter="", output_fields=["count(*)"])[0]["count(*)"]
        if counted == size:
            return name, texts, 0.0
        client.drop_collection(name)
    started = time.perf_counter()
    create(client, name)
    vectors = unit_vectors(np.random.default_rng(size), size)
    for start in range(0, size, INSERT_BATCH):
        entities = []
        for i in range(start, start + INSERT_BATCH):
            row = IndexRow(
                chunk_id=f"{i:08d}",
                doc_id=f"doc-{i // CHUNKS_PER_DOC:04d}",
                text=texts[i],
                dense=vectors[i],
                source_path=f"doc-{i // CHUNKS_PER_DOC:04d}.pdf",
                template="semantic",
                page_start=1 + i % CHUNKS_PER_DOC // 4,
                page_end=1 + i % CHUNKS_PER_DOC // 4,
                chunk_index=i,
            ).model_dump(exclude={"sparse_learned"})
            entities.append({**row, "dense_cosine": row["dense"]})
        client.insert(name, entities)
        print(f"  {size}: {start + INSERT_BATCH} rows", end="\r", file=sys.stderr)
    print(file=sys.stderr)
    client.flush(name)  # Milvus Lite searches unflushed rows by brute force
    client.load_collection(name)
    return name, texts, time.perf_counter() - started


def server_cpu_s(pid: int | None) -> float:
    """CPU seconds the server process has used (0 without a pid)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def timed(
    call: Callable[[int], object], count: int, server_pid: int | None
) -> tuple[float, float, float]:
    """Wall p50 and p95, and the mean CPU time per call of this process and the server: on a
    shared machine the CPU time is the figure that other work does not inflate."""
    call(0)  # warm: a cold segment builds its BM25 index on first use
    samples = []
    cpu_started = cpu_seconds() + server_cpu_s(server_pid)
    for i in range(count):
        started = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - started)
    cpu = cpu_seconds() + server_cpu_s(server_pid) - cpu_started
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[94] * 1000, cpu / count * 1000


def measure(index: MilvusIndex, size: int, queries: int, server_pid: int | None) -> list[dict]:
    from pymilvus import AnnSearchRequest, RRFRanker

    corpus = Corpus()
    name, texts, build_s = build(index, size, corpus)
    print(f"  {size}: " + (f"built in {build_s:.0f} s" if build_s else "reused"), file=sys.stderr)
    index._loaded[name] = False  # ready, without a learned sparse field (see `build`)
    picks = np.random.default_rng(size).choice(size, queries, replace=False)
    texts_q = [corpus.query(texts[i], chinese=i % 10 == 9) for i in picks]
    vectors = unit_vectors(np.random.default_rng(0), queries)
    embedder = FixedQueries(dict(zip(texts_q, vectors, strict=True)))
    client = index._client

    def retriever(fusion: FusionSettings) -> Callable[[int], object]:
        found = Retriever(index, name, embedder, fusion=fusion)  # type: ignore[arg-type]
        return lambda i: found.search(texts_q[i], top_k=TOP_K)

    ranked: dict[str, list[list[str]]] = {"dense": [], "dense_cosine": []}

    def dense(field: str, metric: str) -> Callable[[int], object]:
        def call(i: int) -> None:
            hits = client.search(
                name,
                data=[vectors[i].tolist()],
                anns_field=field,
                limit=POOL,
                output_fields=["chunk_id"],
                search_params={"metric_type": metric},
            )[0]
            ranked[field].append([h["chunk_id"] for h in hits])

        return call

    def hybrid_search(i: int) -> None:
        requests = [
            AnnSearchRequest([vectors[i].tolist()], "dense", {"metric_type": "IP"}, POOL),
            AnnSearchRequest([texts_q[i]], "sparse_bm25", {"metric_type": "BM25"}, POOL),
        ]
        fused = client.hybrid_search(
            name, requests, RRFRanker(60), limit=TOP_K, output_fields=["chunk_id"]
        )[0]
        index.rows_for_hits(name, [h["chunk_id"] for h in fused])

    calls = {
        "dense IP": dense("dense", "IP"),
        "dense COSINE": dense("dense_cosine", "COSINE"),
        "dense, shown fields": lambda i: client.search(
            name,
            data=[vectors[i].tolist()],
            anns_field="dense",
            limit=POOL,
            output_fields=SCALAR_FIELDS,
            search_params={"metric_type": "IP"},
        ),
        "10 rows by key": lambda i: index.rows_for_hits(name, ranked["dense"][i][:TOP_K]),
        "Retriever dense": retriever(FusionSettings(bm25_weight=0)),
        "Retriever bm25": retriever(FusionSettings(dense_weight=0)),
        "Retriever hybrid": retriever(FusionSettings()),
        "hybrid_search": hybrid_search,
    }
    rows = []
    for mode, call in calls.items():
        p50, p95, cpu = timed(call, queries, server_pid)
        print(f"  {size} {mode}: p50 {p50:.1f} p95 {p95:.1f} ms", file=sys.stderr)
        rows.append({"rows": size, "mode": mode, "p50": p50, "p95": p95, "cpu": cpu})
    same = ranked["dense"] == ranked["dense_cosine"]
    print(f"  {size}: IP and COSINE ranked ids identical on {queries} queries: {same}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--uri", help="a Milvus server (default: Milvus Lite in --db)")
    parser.add_argument("--db", type=Path, help="folder of a Milvus Lite file to keep and reuse")
    parser.add_argument("--label", default="", help="what runs at --uri, for the heading")
    parser.add_argument("--server-pid", type=int, help="the server's process, for its CPU time")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if any(s % INSERT_BATCH or s <= 0 for s in sizes):
        parser.error(f"sizes must be positive multiples of {INSERT_BATCH}")
    with tempfile.TemporaryDirectory() as scratch:
        uri = args.uri or str((args.db or Path(scratch)) / "search_latency.db")
        with MilvusIndex(uri) as index:
            rows = [
                row for size in sizes for row in measure(index, size, args.queries, args.server_pid)
            ]
    lite = f"Milvus Lite {importlib.metadata.version('milvus-lite')}"
    engine = f"{args.label or 'server'} at {args.uri}" if args.uri else lite
    print(
        f"{engine}, {args.queries} queries per cell, {POOL} candidates, top {TOP_K}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print("| rows | call | p50 ms | p95 ms | CPU ms |\n|---:|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['rows']} | {r['mode']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['cpu']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
