"""The embedding's speed on an ingest's own chunk texts, alone and beside the parse workers.

    .venv/bin/python bench/embedding_beside_parse.py [--documents 1] [--texts 1500] [--rounds 3]

The ingest embeds the current batch's chunks while the parse workers parse the next batch's
pages on the same cores, at a lower priority (`page_pool.WORKER_NICENESS`). Whether that costs
the embedding anything is measured here on the same texts, rounds interleaved: the chunk texts
of the first `--documents` filings (../shared/financebench-dev/pdfs, else the generated corpus)
as `auto` cuts them, encoded by the runtime the ingest plans (tokenizing, the graph and pooling,
as `chunk_embeddings` times it), alone, then while the ingest's own parse workers (one a core,
their niceness, the layout model on one thread) parse a filing over and over, handed its page
ranges by a thread of this process as a run's read-ahead hands them. The same texts in
windows of 256 word pieces, the width of the ceiling's texts (bench/embedding_ceiling.py), are
encoded alone too: whether the chunks, shorter than those, run slower a word piece.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from embedding_ceiling import source_pdfs  # noqa: E402
from retrieval import parse_documents  # noqa: E402

from rag_assets.cores import available_cores  # noqa: E402
from rag_assets.embedding.models import EmbeddingSpec  # noqa: E402
from rag_assets.embedding.selection import select_embedder  # noqa: E402
from rag_assets.parsers.page_pool import WORKER_NICENESS  # noqa: E402
from rag_assets.parsers.routing import ParserRouter  # noqa: E402
from rag_assets.parsing import parse_file  # noqa: E402
from rag_assets.retrieval.evaluation.comparison import chunk_documents  # noqa: E402
from rag_assets.settings import Settings  # noqa: E402
from rag_assets.templates.tokens import TokenCounter, TokenizerCounter, token_windows  # noqa: E402

WINDOW = 256  # word pieces: the ceiling's texts
WARM_UP_SECONDS = 8.0  # the workers load their model and reach their first pages


def ceiling_windows(texts: list[str], counter: TokenCounter) -> list[str]:
    """The same words as `texts`, four texts joined and cut to the ceiling's width (less the
    two word pieces the model adds)."""
    joined = [" ".join(texts[i : i + 4]) for i in range(0, len(texts), 4)]
    return [text[: token_windows(text, counter, WINDOW - 2)[0][1]] for text in joined]


def word_pieces_per_second(embedder, texts: list[str], word_pieces: int) -> float:
    started = time.perf_counter()
    embedder.encode_documents(texts)
    return word_pieces / (time.perf_counter() - started)


def beside_parsing(pdf: Path, measure) -> float:
    """`measure()` while the parse workers parse `pdf` over and over."""
    stop = threading.Event()

    def parse() -> None:
        router = ParserRouter()
        while not stop.is_set():
            parse_file(pdf, router)

    parsing = threading.Thread(target=parse, name="parse-beside", daemon=True)
    parsing.start()
    try:
        time.sleep(WARM_UP_SECONDS)
        return measure()
    finally:
        stop.set()
        parsing.join()  # the parse under way ends first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1)
    parser.add_argument("--texts", type=int, default=1500, help="chunk texts encoded a round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    settings = Settings()
    with tempfile.TemporaryDirectory(prefix="rag-beside-") as work:
        pdfs = source_pdfs(Path(work))[: args.documents]
        embedder, _ = select_embedder(
            EmbeddingSpec(model=settings.embedding_model, runtime=settings.embedding_runtime)
        )
        counter = TokenizerCounter.from_model_dir(embedder.model_dir)
        options = {
            "max_tokens": settings.chunk_max_tokens,
            "overlap_tokens": settings.chunk_overlap_tokens,
        }
        chunks, _ = chunk_documents(parse_documents(pdfs), "auto", counter, options)
        texts = [chunk.text for chunk in chunks][: args.texts]
        windows = ceiling_windows(texts, counter)
        pieces = {
            "chunks": sum(min(counter.count(t) + 2, embedder.spec.max_length) for t in texts),
            "windows": sum(counter.count(t) + 2 for t in windows),
        }
        embedder.encode_documents(texts[:50])  # compiled and warm before the first round
        rates: dict[str, list[float]] = {"alone": [], "beside": [], "windows": []}
        for _ in range(args.rounds):
            rates["alone"].append(word_pieces_per_second(embedder, texts, pieces["chunks"]))
            rates["windows"].append(word_pieces_per_second(embedder, windows, pieces["windows"]))
            rates["beside"].append(
                beside_parsing(
                    pdfs[0],
                    lambda: word_pieces_per_second(embedder, texts, pieces["chunks"]),
                )
            )
    print(
        f"{len(texts)} chunk texts of {pdfs[0].name} and {len(pdfs) - 1} more, "
        f"{pieces['chunks'] / len(texts):.0f} word pieces each on average; runtime "
        f"{embedder.runtime}, {available_cores()} cores, parse workers at niceness "
        f"{WORKER_NICENESS}\n"
    )
    print(
        f"{pieces['windows'] / len(windows):.0f} word pieces a window\n\n"
        "| encoded | word pieces/s, each round | median |\n|---|---|---:|"
    )
    shown = {
        "alone": "the chunk texts, alone",
        "beside": "the chunk texts, beside the parsing",
        "windows": "the same words in 256-word-piece windows, alone",
    }
    for name, label in shown.items():
        each = ", ".join(f"{r:,.0f}" for r in rates[name])
        print(f"| {label} | {each} | {statistics.median(rates[name]):,.0f} |")


if __name__ == "__main__":
    main()
