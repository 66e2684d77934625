"""Dense recall of Milvus Lite's index types against brute force, with and without a poisoned document.

    .venv/bin/python bench/dense_index_types.py [--docs 40] [--rows 100] [--poison 3000]

Documents arrive one at a time and each is flushed, as `vector_index` does, so Milvus Lite
compacts the small segments in the background into merged ones. One "poisoned" document holds
thousands of rows with one identical vector (e.g. a scanned PDF whose pages all embed alike).
Queries are every 10th clean row's vector plus noise; recall@10 is measured against exact
cosine top-10 over the clean rows, after compaction has settled.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

INDEX_TYPES = ["FLAT", "IVF_FLAT", "HNSW", "AUTOINDEX"]
DIM = 384


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def corpus(docs: int, rows: int, seed: int = 7) -> list[np.ndarray]:
    # Clustered like real chunk embeddings: each document near its own topic centre.
    rng = np.random.default_rng(seed)
    centres = unit(rng.normal(size=(docs, DIM)))
    return [unit(c + 0.6 * unit(rng.normal(size=(rows, DIM)))) for c in centres]


def measure(index_type: str, clean: list[np.ndarray], poison: int, root: Path) -> dict:
    from pymilvus import DataType, MilvusClient
    from pymilvus.exceptions import MilvusException

    client = MilvusClient(str(root / f"{index_type.lower()}_{poison}.db"))
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("doc", DataType.INT64)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=DIM)
    params = client.prepare_index_params()
    build = {"nlist": 64} if index_type == "IVF_FLAT" else {}
    params.add_index("dense", index_type=index_type, metric_type="COSINE", params=build)
    try:
        client.create_collection("c", schema=schema, index_params=params)
    except MilvusException as refused:  # Milvus Lite builds only some index types
        client.close()
        return {"refused": refused.message}
    rng = np.random.default_rng(1)
    docs = [(v, range(i * len(v), (i + 1) * len(v))) for i, v in enumerate(clean)]
    if poison:  # ids beyond the clean rows', which are 0..n-1 in `matrix` order
        same = np.repeat(unit(rng.normal(size=(1, DIM))), poison, axis=0)
        docs.insert(len(docs) // 2, (same, range(10**9, 10**9 + poison)))
    started = time.perf_counter()
    for d, (vectors, ids) in enumerate(docs):
        client.insert(
            "c",
            [{"id": i, "doc": d, "dense": v.tolist()} for i, v in zip(ids, vectors, strict=True)],
        )
        client.flush("c")
    time.sleep(3)  # Milvus Lite merges the small segments on a background thread
    client.release_collection("c")  # reload: searches then see the merged segments
    client.load_collection("c")
    ingest_s = time.perf_counter() - started

    matrix = np.concatenate(clean)
    queries = unit(matrix[::10] + 0.05 * rng.normal(size=(len(matrix[::10]), DIM)))
    exact = np.argsort(-queries @ matrix.T, axis=1)[:, :10]
    search = {"nprobe": 8} if index_type == "IVF_FLAT" else {}
    hits, seconds = 0, 0.0
    for q, truth in zip(queries, exact, strict=True):
        t = time.perf_counter()
        got = client.search(
            "c",
            [q.tolist()],
            anns_field="dense",
            limit=10,
            output_fields=["doc"],
            search_params={"metric_type": "COSINE", "params": search},
        )[0]
        seconds += time.perf_counter() - t
        hits += len({h["id"] for h in got} & set(truth.tolist()))
    client.close()
    return {
        "recall@10": hits / (10 * len(queries)),
        "ms/query": 1000 * seconds / len(queries),
        "ingest_s": ingest_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--poison", type=int, default=3000)
    args = parser.parse_args()
    clean = corpus(args.docs, args.rows)
    root = Path(tempfile.mkdtemp(prefix="dense_bench_"))
    try:
        print(
            f"{args.docs} documents x {args.rows} rows, 384-d; poisoned: {args.poison} identical rows"
        )
        print(f"{'index':10} {'poison':>6} {'recall@10':>9} {'ms/query':>8} {'ingest s':>8}")
        for index_type in INDEX_TYPES:
            for poison in (0, args.poison):
                r = measure(index_type, clean, poison, root)
                if "refused" in r:
                    print(f"{index_type:10} {poison:6d} refused: {r['refused'][:70]}", flush=True)
                    continue
                print(
                    f"{index_type:10} {poison:6d} {r['recall@10']:9.3f} "
                    f"{r['ms/query']:8.1f} {r['ingest_s']:8.1f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
