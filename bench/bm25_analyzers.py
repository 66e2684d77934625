"""Which BM25 analyzer Milvus Lite accepts, and how well each ranks mixed English / Chinese rows.

    .venv/bin/python bench/bm25_analyzers.py

One collection per analyzer holds the same rows, English and Chinese (some Chinese rows quote
English terms); each query has one right row. The multi-language analyzer gets a per-row
`language` field from our detector and the query's detected language as `analyzer_name`.
Prints top-1 and MRR@5 per analyzer, or the error Milvus Lite gives when it refuses one.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rag_assets.index.schema import ANALYZERS as SCHEMA_ANALYZERS
from rag_assets.language import detect_language

ROWS = [
    "The Host Control Register at offset 0x04 enables interrupts and DMA transfers.",
    "Tenants must give thirty days written notice before ending the lease.",
    "Running the self-test resets all counters to zero.",
    "Solar panels convert sunlight into electricity using photovoltaic cells.",
    "机器学习是人工智能的一个重要分支。",
    "今天天气很好，我们去公园散步。",
    "租户在终止租约前必须提前三十天书面通知。",
    "主机控制寄存器的第八位用于启用中断。",
    "使用 DMA 传输时，必须先配置 Host Control Register。",
    "立法会议员询问政府关于房屋政策的问题，局长回答时间表。",
    "The Legislative Council asked about the housing policy timetable.",
    "第三条 本办法自公布之日起施行。",
    "Error code ZX-4471 indicates that the firmware checksum did not match.",
    "固件校验和不匹配时返回错误码 ZX-4471。",
]
QUERIES = [  # (query, index of the right row)
    ("interrupts DMA", 0),
    ("lease notice", 1),
    ("run self tests", 2),
    ("photovoltaic", 3),
    ("人工智能", 4),
    ("公园散步", 5),
    ("书面通知租约", 6),
    ("控制寄存器 中断", 7),
    ("DMA 传输 配置", 8),
    ("房屋政策时间表", 9),
    ("housing policy timetable", 10),
    ("本办法施行", 11),
    ("host control register", 0),
    ("firmware checksum", 12),
    ("固件校验和", 13),
    ("dma 传输", 8),
]
LOWER = {"tokenizer": "standard", "filter": ["lowercase"]}
JIEBA = {"tokenizer": "jieba", "filter": ["lowercase"]}
ANALYZERS: dict[str, dict] = {
    "standard": {"analyzer_params": {"type": "standard"}},
    "english": {"analyzer_params": {"type": "english"}},
    "chinese": {"analyzer_params": {"type": "chinese"}},
    "icu": {"analyzer_params": {"tokenizer": "icu", "filter": ["lowercase"]}},
    "language_identifier": {
        "analyzer_params": {
            "tokenizer": {
                "type": "language_identifier",
                "analyzers": {"default": LOWER, "English": {"type": "english"}, "Mandarin": JIEBA},
            }
        }
    },
    "multi_analyzer_params (en: standard, zh: jieba)": {
        "multi_analyzer_params": {
            "analyzers": {"en": LOWER, "zh": JIEBA, "default": JIEBA},
            "by_field": "language",
        }
    },
    "jieba": {"analyzer_params": {"tokenizer": "jieba"}},
    "jieba + lowercase (chosen)": {"analyzer_params": JIEBA},
    "jieba + lowercase + english stemmer": {
        "analyzer_params": {
            "tokenizer": "jieba",
            "filter": ["lowercase", {"type": "stemmer", "language": "english"}],
        }
    },
    "jieba-english (English stop words and stems)": {
        "analyzer_params": SCHEMA_ANALYZERS["jieba-english"]
    },
}


def measure(client, name: str, params: dict) -> str:
    from pymilvus import DataType, Function, FunctionType

    collection = "c" + str(abs(hash(name)))
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("language", DataType.VARCHAR, max_length=16)
    schema.add_field("text", DataType.VARCHAR, max_length=4000, enable_analyzer=True, **params)
    schema.add_field("bm25", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["text"],
            output_field_names=["bm25"],
        )
    )
    indexes = client.prepare_index_params()
    indexes.add_index("bm25", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    try:
        client.create_collection(collection, schema=schema, index_params=indexes)
    except Exception as error:  # Milvus Lite refuses unknown tokenizers here
        return f"refused: {getattr(error, 'message', error)}"
    rows = [{"id": i, "language": detect_language(t), "text": t} for i, t in enumerate(ROWS)]
    try:
        client.insert(collection, rows, timeout=10)
        client.flush(collection)
    except Exception as error:  # Milvus 2.5 accepts some tokenizers and fails on the first insert
        return f"accepted, then every insert failed: {str(getattr(error, 'message', error))[:60]}"
    top1, reciprocal = 0, 0.0
    for query, right in QUERIES:
        search = {"metric_type": "BM25"}
        if "multi_analyzer_params" in params:
            search["analyzer_name"] = detect_language(query)
        hits = client.search(collection, [query], anns_field="bm25", limit=5, search_params=search)
        ids = [h["id"] for h in hits[0]]
        rank = ids.index(right) + 1 if right in ids else None
        top1 += rank == 1
        reciprocal += 1 / rank if rank else 0.0
    return f"top-1 {top1}/{len(QUERIES)}  MRR@5 {reciprocal / len(QUERIES):.2f}"


def main() -> None:
    import logging

    from pymilvus import MilvusClient

    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)  # refusals are the result here
    root = Path(tempfile.mkdtemp(prefix="bm25_bench_"))
    try:
        client = MilvusClient(str(root / "bm25.db"))
        print(f"{len(ROWS)} rows, {len(QUERIES)} queries, English and Chinese")
        for name, params in ANALYZERS.items():
            print(f"{name:48} {measure(client, name, params)}", flush=True)
        client.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
