"""The anchor for bench/throughput.py: PDFs to a vector index without this project.

    .venv/bin/python bench/naive_script.py MODEL_FOLDER DB_PATH FILE.pdf [FILE.pdf ...]

What one would write in a few lines from the libraries' own docs: `pymupdf4llm.to_markdown`
on the whole PDF (its layout model on, as it is whenever pymupdf_layout is installed; one
process), a DOCX's paragraphs through python-docx and any other file (Markdown, HTML, text)
read as it is; fixed windows of 1,000 characters with 200 of overlap over that text (the
usual defaults of text splitters), the windows embedded with sentence-transformers on the CPU in
batches of 32, and inserted into a Milvus Lite collection made by pymilvus's quick setup
(`create_collection(name, dimension=384)`: an `id` key, a `vector` field, COSINE, AUTOINDEX;
the text and file name go in its dynamic field).

Prints one JSON line: when the imports were done (`ready`, time.time()), the seconds from
then to the end, the windows indexed, each step's (start, end) spans on time.time(), and the
word pieces its windows fed the model (`tokens`, counted once its clock has stopped).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import docx
import pymupdf4llm
from pymilvus import MilvusClient
from sentence_transformers import SentenceTransformer

WINDOW_CHARS = 1000
OVERLAP_CHARS = 200
BATCH_SIZE = 32
COLLECTION = "documents"


def windows(text: str, size: int = WINDOW_CHARS, overlap: int = OVERLAP_CHARS) -> list[str]:
    """Windows of `size` characters, each starting `size - overlap` after the one before; the
    last one ends the text, no window lies wholly inside the one before, blank ones dropped."""
    stride = size - overlap
    starts = range(0, max(len(text) - overlap, 1), stride)
    return [text[i : i + size] for i in starts if text[i : i + size].strip()]


def read(path: Path) -> str:
    if path.suffix == ".pdf":
        return pymupdf4llm.to_markdown(str(path))
    if path.suffix == ".docx":
        return "\n\n".join(p.text for p in docx.Document(str(path)).paragraphs)
    return path.read_text()


def embedded_tokens(model: SentenceTransformer, texts: list[str]) -> int:
    """The word pieces sentence-transformers feeds the model for `texts`: each stripped and cut
    at the model's max_seq_length (256 for MiniLM), [CLS] and [SEP] included."""
    return sum(
        int(model.tokenize(texts[first : first + BATCH_SIZE])["attention_mask"].sum())
        for first in range(0, len(texts), BATCH_SIZE)
    )


def run(model_folder: Path, db_path: Path, files: list[Path]) -> dict:
    ready = time.time()
    spans: dict[str, list[tuple[float, float]]] = {}

    def timed(name: str, start: float) -> None:
        spans.setdefault(name, []).append((start, time.time()))

    start = time.time()
    model = SentenceTransformer(str(model_folder), device="cpu")
    timed("load model", start)
    client = MilvusClient(str(db_path))
    client.create_collection(COLLECTION, dimension=model.get_sentence_embedding_dimension())
    embedded: list[str] = []
    for path in files:
        start = time.time()
        text = read(path)
        timed("parse", start)
        start = time.time()
        texts = windows(text)
        timed("chunk", start)
        start = time.time()
        vectors = model.encode(texts, batch_size=BATCH_SIZE)
        timed("embed", start)
        start = time.time()
        rows = [
            {"id": len(embedded) + i, "vector": vector.tolist(), "text": text, "file": path.name}
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
        ]
        client.insert(COLLECTION, rows)
        timed("index", start)
        embedded += texts
    client.close()
    seconds = time.time() - ready
    return {
        "ready": ready,
        "seconds": seconds,
        "chunks": len(embedded),
        "spans": spans,
        "tokens": embedded_tokens(model, embedded),
    }


def main() -> None:
    model_folder, db_path, *files = sys.argv[1:]
    print(json.dumps(run(Path(model_folder), Path(db_path), [Path(f) for f in files])))


if __name__ == "__main__":
    main()
