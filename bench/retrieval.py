"""Retrieval quality per template, side by side: fixed windows against the structure templates.

    .venv/bin/python bench/retrieval.py                        # examples/eval/sample on examples/corpus
    .venv/bin/python bench/retrieval.py --set fixtures         # examples/eval/fixtures on ../shared/fixtures
    .venv/bin/python bench/retrieval.py --set financebench-dev # 31 questions on 14 SEC filings
    .venv/bin/python bench/retrieval.py --set fixtures-twins   # paraphrases beside literal twins
    .venv/bin/python bench/retrieval.py --set PATH [--limit N] # a SQuAD / CMRC 2018 JSON or a BEIR folder

Each document is parsed (tables in the parser's structure, as with vision off), chunked with
every template, embedded with the configured model and indexed into a Milvus Lite file in a
temporary folder; every question then goes through the search API. The table gives, per slice
and run, Recall@1/5/10, MRR@10, nDCG@10 and the share of questions whose evidence lies in a
single chunk (`reachable`); rows `<template>:bm25` and `<template>:dense` are one retriever alone.
A SQuAD or CMRC file is passage retrieval: each paragraph is a document of its own.
`--runtimes flag onnx onnx-int8` repeats the whole comparison per embedding runtime on the same
parsed documents and ends with their MRR@10 side by side. `--analyzer` indexes BM25 with another
analyzer (a name the index knows, or Milvus `analyzer_params` as JSON), to compare analyzers.
`--bm25-k1 1.2 0.9 --bm25-b 0.75 0.4` indexes with every k1 and b pair in turn, the chunks
embedded once, and ends with their MRR@10 side by side. `--vocabularies auto none` chunks and
searches with each choice of vocabulary packs in turn (`auto`: the packs made for each
document's kind; `none`; or pack names), and ends with their MRR@10 side by side.
`--fusion-variants section_titles=false document_weight=0` searches each template's chunks
again with each of those fusion settings turned (a row `auto[section_titles=False]`), the
chunks indexed once.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import random
import sys
import tempfile
import time
from itertools import product
from pathlib import Path

import yaml
from pydantic import ValidationError

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.embedding.models import Embedder, EmbeddingBatch, EmbeddingSpec
from rag_assets.embedding.selection import select_embedder
from rag_assets.index.store import MilvusIndex
from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file
from rag_assets.retrieval.evaluation.comparison import compare_templates, run_specs
from rag_assets.retrieval.evaluation.sets import EvalQuestion, load_eval_set, passage_document
from rag_assets.settings import Settings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.settings.groups import RUNTIMES
from rag_assets.sources.inbox import sha256_file
from rag_assets.sources.keys import partition_key_for
from rag_assets.tables.structure import structure_markdown, with_table_markdown
from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.tokens import TokenizerCounter

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"
FINANCEBENCH = REPO.parent / "shared" / "financebench-dev"
NAMED_SETS = {
    "sample": (REPO / "examples/eval/sample/questions.jsonl", sorted((REPO / "examples/corpus").glob("*"))),
    "fixtures": (
        REPO / "examples/eval/fixtures/shared_fixtures.jsonl",
        [
            FIXTURES / "legal/gdpr_eurlex_pdf_extracted.txt",
            FIXTURES / "legal/劳动合同法(2012-12-28).md",
            FIXTURES / "pdf/redp5110_sampled.pdf",
            FIXTURES / "pdf/2305.03393v1-pg9.pdf",
            FIXTURES / "pdf/WARN-Report-for-7-1-2015-to-03-25-2016.pdf",
            FIXTURES / "pdf/issue-336-example_zh_anhui_land_use_standard.pdf",
            FIXTURES / "pdf/normal_4pages.pdf",
            FIXTURES / "html/wiki_duck.html",
            FIXTURES / "md/docling_deployment.md",
            FIXTURES / "qa/docling_faq.md",
            FIXTURES / "qa/ms_vsdocs_zhtw_unit-test-basics.md",
            FIXTURES / "docx/word_tables.docx",
            FIXTURES / "docx/unit_test_headers_numbered.docx",
        ],
    ),
    "fixtures-twins": (
        REPO / "examples/eval/fixtures/shared_fixtures.jsonl",
        [
            FIXTURES / "legal/gdpr_eurlex_pdf_extracted.txt",
            FIXTURES / "legal/劳动合同法(2012-12-28).md",
            FIXTURES / "pdf/redp5110_sampled.pdf",
            FIXTURES / "pdf/2305.03393v1-pg9.pdf",
            FIXTURES / "html/wiki_duck.html",
            FIXTURES / "qa/docling_faq.md",
        ],
    ),
    "financebench-dev": (
        FINANCEBENCH / "questions.jsonl",
        sorted((FINANCEBENCH / "pdfs").glob("*.pdf")) or [FINANCEBENCH / "pdfs"],
    ),
}  # fmt: skip


def parse_documents(paths: list[Path], cache: Path | None = None) -> list[StandardizedDocument]:
    """Each file parsed, normalized and profiled (tables in the parser's structure); with
    `cache`, the parser's output for a file parsed before by this package version is read
    back from there, and normalizing runs again (so repairs and profiles are measured as they
    are now)."""
    router = ParserRouter()
    documents = []
    for path in paths:
        cached = cache / f"{_file_key(path)}.json" if cache else None
        if cached and cached.is_file():
            parsed = ParsedDocument.model_validate_json(cached.read_bytes())
            doc = to_ir(
                parsed,
                doc_id=partition_key_for(path.name),
                source_sha256=sha256_file(path),
                source_path=path.name,
            )
        else:
            result = parse_file(path, router)
            doc = result.document
            if cached:
                cache.mkdir(parents=True, exist_ok=True)
                cached.write_text(result.parsed.model_dump_json())
        documents.append(with_table_markdown(doc, structure_markdown(doc)))
    return documents


def _file_key(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes())
    digest.update(importlib.metadata.version("rag_assets").encode())
    return digest.hexdigest()[:32]


def _analyzer(value: str) -> str | dict:
    return json.loads(value) if value.lstrip().startswith("{") else value


def _pairs(value: str) -> dict[str, str]:
    """`a=1,b=two` as {name: value}, stripped; parts without `=` left out."""
    pairs = (part.split("=", 1) for part in value.split(",") if "=" in part)
    return {k.strip(): v.strip() for k, v in pairs}


def _fusion_variant(value: str) -> tuple[tuple[str, object], ...]:
    """`section_titles=false,document_weight=0` as fusion fields and values, checked."""
    fields = _pairs(value)
    if not fields or set(fields) - set(FusionSettings.model_fields):
        raise argparse.ArgumentTypeError(f"not FIELD=VALUE of the fusion settings: {value!r}")
    try:
        checked = FusionSettings.model_validate(fields)
    except ValidationError as error:
        raise argparse.ArgumentTypeError(f"{value!r}: {error.errors()[0]['msg']}") from None
    return tuple((field, getattr(checked, field)) for field in fields)


class ReusedEmbeddings:
    """The embedder, with each template's chunks encoded once for every BM25 setting."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._documents: dict[tuple[str, ...], EmbeddingBatch] = {}

    def __getattr__(self, name: str):
        return getattr(self._embedder, name)

    def encode_documents(self, texts: list[str]) -> EmbeddingBatch:
        key = tuple(texts)
        if key not in self._documents:
            self._documents[key] = self._embedder.encode_documents(texts)
        return self._documents[key]


def print_side_by_side(title: str, mrr: dict[str, dict[str, float]]) -> None:
    print(f"\n## MRR@10 per {title}\n")
    print("| run / slice | " + " | ".join(mrr) + " |")
    print("|---|" + "---:|" * len(mrr))
    for key in next(iter(mrr.values())):
        print(f"| {key} | " + " | ".join(f"{m.get(key, 0):.3f}" for m in mrr.values()) + " |")


def by_company_halves(questions: list[EvalQuestion]) -> list[EvalQuestion]:
    """Each FinanceBench question tagged `half-a` or `half-b` by its filing's company (the
    companies alternately, in name order): a rule developed on one half is reported on the
    other (the `tag:half-*` slices)."""
    companies = {
        d["doc"]: d["company"]
        for d in json.loads((FINANCEBENCH / "documents.json").read_text())["documents"]
    }
    ordered = sorted(set(companies.values()))
    half = {company: "half-a" if i % 2 == 0 else "half-b" for i, company in enumerate(ordered)}
    return [
        q.model_copy(update={"tags": [*q.tags, half[companies[q.targets[0].doc]]]})
        for q in questions
    ]


def load_set(
    name: str, cache: Path | None
) -> tuple[list[StandardizedDocument], list[EvalQuestion]] | None:
    """A set's documents and questions (a named set's documents parsed; None when they are
    missing), the twins and the company halves added to theirs."""
    if name in NAMED_SETS:
        set_path, paths = NAMED_SETS[name]
        missing = [p for p in paths if not p.is_file()]
        if missing:
            print(f"missing documents (is ../shared beside the checkout?): {missing}")
            return None
        eval_set = load_eval_set(set_path)
        documents = parse_documents(paths, cache)
    else:
        eval_set = load_eval_set(Path(name))
        documents = [passage_document(p) for p in eval_set.passages]
    questions = eval_set.questions
    if name == "fixtures-twins":
        # The fixtures' paraphrased questions and, beside each, its twin in the document's words.
        twins = load_eval_set(REPO / "examples/eval/fixtures/literal_twins.jsonl").questions
        questions = [q for q in questions if "paraphrase" in q.tags] + twins
    if name == "financebench-dev":
        questions = by_company_halves(questions)
    return documents, questions


def _set_options(value: str) -> tuple[str, dict[str, object]]:
    """`financebench-dev:section_titles=true` as the set's name and its documents' template
    options, checked."""
    name, _, pairs = value.partition(":")
    if name not in NAMED_SETS or "=" not in pairs:
        raise argparse.ArgumentTypeError(f"not NAMED_SET:OPTION=VALUE: {value!r}")
    fields = {k: yaml.safe_load(v) for k, v in _pairs(pairs).items()}
    try:
        TemplateOptions.model_validate(fields)
    except ValidationError as error:
        raise argparse.ArgumentTypeError(f"{value!r}: {error.errors()[0]['msg']}") from None
    return name, fields


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--set",
        default="sample",
        help="sample, fixtures, ... or a path; named sets joined by '+' share one collection "
        "(each question tagged `set:NAME`)",
    )
    parser.add_argument(
        "--set-options",
        nargs="+",
        type=_set_options,
        default=[],
        help="template options of one named set's documents, as a collection's "
        "(financebench-dev:section_titles=true)",
    )
    parser.add_argument("--templates", nargs="+", default=["fixed", "semantic", "auto"])
    parser.add_argument(
        "--single", default="semantic", help="template also run BM25 alone and dense alone"
    )
    parser.add_argument(
        "--chunks",
        default="auto",
        help="template also run with a hit per chunk, pages not grouped ('' for none)",
    )
    parser.add_argument("--limit", type=int, default=500, help="questions sampled from a big set")
    parser.add_argument("--misses", action="store_true", help="list questions not found first")
    parser.add_argument(
        "--parsed-cache",
        type=Path,
        help="folder keeping the parsers' output between runs (by file and package version; "
        "empty it after changing a parser)",
    )
    parser.add_argument(
        "--analyzer",
        help="BM25 analyzer: a name the index knows, or Milvus analyzer_params as JSON "
        '(e.g. \'{"tokenizer": "jieba", "filter": ["lowercase", '
        '{"type": "stemmer", "language": "english"}]}\'); default: the configured one',
    )
    parser.add_argument(
        "--english-analyzer",
        nargs="+",
        help="BM25 analyzers of the copy English questions search, compared on the same chunks "
        "('none': no copy); default: the configured one",
    )
    parser.add_argument(
        "--bm25-k1", type=float, nargs="+", help="BM25 k1 values (default: the configured one)"
    )
    parser.add_argument(
        "--bm25-b", type=float, nargs="+", help="BM25 b values (default: the configured one)"
    )
    parser.add_argument(
        "--runtimes",
        nargs="+",
        choices=RUNTIMES,
        help="embedding runtimes compared on the same chunks (default: the configured one)",
    )
    parser.add_argument(
        "--embedded",
        nargs="+",
        choices=["text", "context"],
        help="what of a chunk is embedded, compared on the same chunks (default: the configured)",
    )
    parser.add_argument(
        "--vocabularies",
        nargs="+",
        default=["auto"],
        help="vocabulary pack choices compared (auto, none, or comma-separated pack names)",
    )
    parser.add_argument(
        "--fusion-variants",
        nargs="+",
        type=_fusion_variant,
        default=[],
        help="fusion settings each searched as a run of its own on the same chunks "
        "(FIELD=VALUE, several joined by commas: section_titles=false)",
    )
    args = parser.parse_args(argv)

    settings = Settings.from_env()
    analyzer = _analyzer(args.analyzer) if args.analyzer else settings.text_analyzer
    englishes = args.english_analyzer or [settings.english_analyzer]
    bm25 = [
        (k1, b)
        for k1 in args.bm25_k1 or [settings.bm25_k1]
        for b in args.bm25_b or [settings.bm25_b]
    ]
    started = time.perf_counter()
    names = args.set.split("+")
    if len(names) > 1 and set(names) - set(NAMED_SETS):
        parser.error(f"only named sets combine with '+': {sorted(NAMED_SETS)}")
    documents, questions, set_docs = [], [], {}
    for name in names:
        loaded = load_set(name, args.parsed_cache)
        if loaded is None:
            return 1
        docs, asked = loaded
        documents += docs
        set_docs[name] = [d.doc_id for d in docs]
        if len(names) > 1:  # each question's set is a slice of the combined collection
            asked = [q.model_copy(update={"tags": [*q.tags, f"set:{name}"]}) for q in asked]
        questions += asked
    document_options = {
        doc_id: own for name, own in args.set_options for doc_id in set_docs.get(name, ())
    }
    eval_set_name = args.set
    if len(questions) > args.limit:
        questions = random.Random(0).sample(questions, args.limit)
    parsed_in = time.perf_counter() - started
    pages = sum(d.page_count or 0 for d in documents)
    print(
        f"{eval_set_name}: {len(questions)} questions, {len(documents)} documents, {pages} pages "
        f"(parsed in {parsed_in:.1f} s" + (f", {pages / parsed_in:.1f} pages/s)" if pages else ")")
    )

    options = {
        "max_tokens": settings.chunk_max_tokens,
        "overlap_tokens": settings.chunk_overlap_tokens,
    }
    # Every runtime embeds the same documents chunked the same way, in this one run.
    mrr: dict[str, dict[str, float]] = {}
    for runtime in args.runtimes or [settings.embedding_runtime]:
        embedder, fallback = select_embedder(
            EmbeddingSpec(model=settings.embedding_model, runtime=runtime)
        )
        for reason in (fallback, embedder.runtime_fallback):
            if reason:
                print(reason)
        counter = TokenizerCounter.from_model_dir(embedder.model_dir)
        reused = ReusedEmbeddings(embedder)
        parts = args.embedded or [settings.embedded_text]
        for (k1, b), vocabularies, part, english in product(
            bm25, args.vocabularies, parts, englishes
        ):
            chosen = {} if vocabularies == "auto" else {"vocabularies": vocabularies}
            with tempfile.TemporaryDirectory() as folder:
                uri = str(Path(folder) / "milvus.db")
                comparison = compare_templates(
                    documents,
                    questions,
                    run_specs(
                        args.templates,
                        args.single or None,
                        args.chunks or None,
                        args.fusion_variants,
                    ),
                    reused,
                    counter,
                    lambda prefix, uri=uri, k1=k1, b=b, english=english: MilvusIndex(
                        uri,
                        collection_prefix=prefix,
                        text_analyzer=analyzer,
                        english_analyzer=_analyzer(english),
                        bm25_k1=k1,
                        bm25_b=b,
                    ),
                    options={**options, **chosen},
                    fusion=settings.fusion,
                    log=print,
                    embedded=part,
                    document_options=document_options,
                )
            label = f"{embedder.runtime} k1={k1:g} b={b:g}" if len(bm25) > 1 else embedder.runtime
            if len(args.vocabularies) > 1:
                label += f" vocabularies={vocabularies}"
            if len(parts) > 1:
                label += f" embedded={part}"
            if len(englishes) > 1:
                label += f" english={english}"
            print(f"\n## runtime {label}\n")
            print(comparison.markdown_table())
            print()
            for run in comparison.runs:
                print(f"{run.name}: {run.chunks} chunks, templates {run.templates_used}")
                if args.misses:
                    for miss in run.misses:
                        print(f"    {miss}")
            if comparison.skipped:
                print(f"skipped (document not in the set): {comparison.skipped}")
            flat = comparison.flat_metrics()
            mrr[label] = {k[: -len("/mrr@10")]: v for k, v in flat.items() if k.endswith("/mrr@10")}
    if len(mrr) > 1:
        print_side_by_side("embedding runtime, BM25 k1, b, English analyzer, vocabularies", mrr)
    print(
        f"\nmodel {settings.embedding_model}, analyzer {args.analyzer or settings.text_analyzer}, "
        f"English questions' analyzer {', '.join(englishes)}, "
        f"BM25 k1, b {', '.join(f'{k1:g}/{b:g}' for k1, b in bm25)}, "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
