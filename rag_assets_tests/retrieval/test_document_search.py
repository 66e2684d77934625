"""Document-aware search on a real Milvus Lite file with the bundled MiniLM: look-alike filings
of two issuers, profiled and chunked as the pipeline does; a question naming one issuer finds
that issuer's page, says which words named it, and `infer_documents=False` searches flat."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_assets.chunking import chunk_document
from rag_assets.cli import main
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.index.rows import IndexRow
from rag_assets.index.store import MilvusIndex
from rag_assets.normalize.adapt import with_profile
from rag_assets.retrieval.search import Retriever, SearchFilters
from rag_assets.settings import Settings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import doc_from_pages

pytestmark = pytest.mark.slow


def _filing(doc_id: str, issuer: str, symbol: str, year: int, margin: str) -> StandardizedDocument:
    pages = [
        [
            ("heading", "## FORM 10-K"),
            ("paragraph", f"For the fiscal year ended December 31, {year}"),
            ("paragraph", f"{issuer}"),
            ("paragraph", "(Exact name of registrant as specified in its charter)"),
            ("table", f"| Class | Trading Symbol(s) |\n|---|---|\n| Common stock | {symbol} |"),
        ],
        [("heading", "## Item 7. Results of Operations"), ("paragraph", margin)],
    ]
    doc = doc_from_pages(pages, doc_id=doc_id, source_path=f"{doc_id}.pdf")
    return with_profile(doc)


FILINGS = [
    _filing("harbour", "Harbour Freight Lines, Inc.", "HFL", 2017,
            "Gross margin improved thanks to pricing."),
    _filing("summit", "Summit Quarry Corp.", "SQC", 2017,
            "Gross margin improved in fiscal 2017 thanks to pricing and a lower cost of sales."),
]  # fmt: skip


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(data_dir=tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def retriever(settings: Settings) -> Iterator[Retriever]:
    embedder = load_embedder(EmbeddingSpec())
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        collection = index.ensure_collection(embedder.name, embedder.dimension, False)
        for doc in FILINGS:
            rows = chunk_document(doc, "auto", {}, ApproxTokenCounter()).rows
            vectors = embedder.encode_documents([r.context_text for r in rows]).dense
            index.replace_document(
                collection,
                doc.doc_id,
                [IndexRow.from_chunk(r, v) for r, v in zip(rows, vectors, strict=True)],
            )
        yield Retriever(index, collection, embedder)


QUESTION = "Did HFL's gross margin improve in fiscal 2017 thanks to pricing?"


def test_a_question_naming_an_issuer_finds_that_issuers_page(retriever: Retriever) -> None:
    flat = retriever.search(QUESTION, top_k=2, infer_documents=False)
    assert flat.documents is None
    assert flat.hits[0].doc_id == "summit"  # the look-alike says more of the question's words
    steered = retriever.search(QUESTION, top_k=2)
    assert steered.documents is not None
    assert (steered.documents.doc_ids, steered.documents.words) == (["harbour"], ["HFL", "2017"])
    assert steered.hits[0].doc_id == "harbour"
    assert {"dense@documents", "bm25@documents"} <= set(steered.hits[0].found_by)
    # `2017` is an identifier: its ranking joins in both searches.
    assert set(steered.weights) == {
        *("dense", "bm25", "identifiers"),
        *("dense@documents", "bm25@documents", "identifiers@documents"),
    }
    # Soft: the other issuer's chunks are still found, after the named issuer's.
    everything = retriever.search(QUESTION, top_k=10).hits
    issuers = [h.doc_id for h in everything]
    assert "summit" in issuers and issuers == sorted(issuers)
    assert any(h.page_end == 2 for h in everything if h.doc_id == "harbour")


def test_a_filter_the_caller_gives_bounds_the_inference(retriever: Retriever) -> None:
    alone = retriever.search(QUESTION, top_k=2, filters=SearchFilters(doc_ids=["summit"]))
    assert alone.documents is None and {h.doc_id for h in alone.hits} == {"summit"}


def test_a_document_weight_of_zero_turns_the_inference_off(retriever: Retriever) -> None:
    off = Retriever(
        retriever.index,
        retriever.collection,
        retriever.embedder,
        fusion=FusionSettings(document_weight=0),
    )
    assert off.search(QUESTION, top_k=2).documents is None


def test_profile_fields_are_filterable_in_the_index(retriever: Retriever) -> None:
    rows = retriever.index.scan(
        retriever.collection, ["doc_id"], 'metadata["doc_organization"] == "Summit Quarry Corp."'
    )
    assert rows and {r["doc_id"] for r in rows} == {"summit"}
    assert [c.doc_id for c in retriever.document_cards()] == ["harbour", "summit"]


def test_the_cli_says_which_words_named_which_documents(
    retriever: Retriever,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAG_ASSETS_MILVUS_URI", raising=False)
    query = ["query", "--data-dir", str(settings.data_dir), "--top-k", "2"]
    assert main([*query, QUESTION]) == 0
    out = capsys.readouterr().out
    assert "# documents named by 'HFL', '2017' (issuer 'HFL'; period 2017): harbour;" in out
    assert "[1] harbour.pdf" in out and "dense@documents #1" in out
    assert main([*query, "--no-infer", QUESTION]) == 0
    flat = capsys.readouterr().out
    assert "# documents named" not in flat and "@documents" not in flat
    assert "[1] summit.pdf" in flat


LIQUIDITY = (
    "Our liquidity depends on the markets we borrow in, on the cash our operations bring in "
    "and on the terms our lenders set; we review these every quarter with the board and keep "
    "a reserve for the months when freight volumes fall."
)


def test_a_metric_finds_the_statement_it_is_read_from(tmp_path: Path) -> None:
    pages = [
        [("heading", "## Item 7. Liquidity"), ("paragraph", LIQUIDITY)],
        [
            ("heading", "## Consolidated Balance Sheets"),
            ("heading", "## (in thousands)"),
            (
                "table",
                "|  | 2017 | 2016 |\n|---|---|---|\n| Total current assets | 7,669 | 5,720 |\n"
                "| Total current liabilities | 5,466 | 4,586 |",
            ),
        ],
    ]
    doc = with_profile(doc_from_pages(pages, doc_id="harbour", source_path="harbour.pdf"))
    embedder = load_embedder(EmbeddingSpec())
    with MilvusIndex(str(tmp_path / "milvus.db")) as index:
        collection = index.ensure_collection(embedder.name, embedder.dimension, False)
        rows = chunk_document(doc, "auto", {"min_tokens": 0}, ApproxTokenCounter()).rows
        vectors = embedder.encode_documents([r.context_text for r in rows]).dense
        index.replace_document(
            collection,
            "harbour",
            [IndexRow.from_chunk(r, v) for r, v in zip(rows, vectors, strict=True)],
        )
        question = "Is the company's liquidity improving?"

        def first_by(retriever: str, statement_terms: bool) -> str:
            fusion = FusionSettings(statement_terms=statement_terms)
            hits = Retriever(index, collection, embedder, fusion=fusion).search(question, 5).hits
            found = [h for h in hits if retriever in h.found_by]
            return min(found, key=lambda h: h.found_by[retriever]).text

        assert len(rows) == 2
        # Both retrievers search with the balance sheet's names and line items added.
        for retriever in ("bm25", "dense"):
            assert "Total current assets" in first_by(retriever, True), retriever
            assert "Total current assets" not in first_by(retriever, False), retriever
