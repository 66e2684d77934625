"""Document-aware search on a real Milvus Lite file with the bundled MiniLM: look-alike filings
of two issuers, profiled and chunked as the pipeline does; a question naming one issuer finds
that issuer's page, says which words named it, and `infer=False` searches flat. A question
naming a financial statement finds the statement's rows among prose that shares its words."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag_assets.chunking import chunk_document
from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.index.rows import IndexRow
from rag_assets.index.store import MilvusIndex
from rag_assets.normalize.adapt import with_profile
from rag_assets.retrieval.evaluation.comparison import index_chunks
from rag_assets.retrieval.search import Retriever, SearchFilters
from rag_assets.settings import Settings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.templates.sections import TITLES_SEARCHED_KEY
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import doc_from_pages
from rag_assets_tests.support.retrievers import with_fusion

FINANCIAL_STATEMENT = "financial_statement"  # the finance pack's metadata key

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
    flat = retriever.search(QUESTION, top_k=2, infer=False)
    assert flat.documents is None
    assert flat.hits[0].doc_id == "summit"  # the look-alike says more of the question's words
    steered = retriever.search(QUESTION, top_k=2)
    assert steered.documents is not None
    assert (steered.documents.doc_ids, steered.documents.words) == (["harbour"], ["HFL", "2017"])
    assert steered.hits[0].doc_id == "harbour"
    assert {"dense@documents", "bm25@documents"} <= set(steered.hits[0].found_by)
    # `2017` is an identifier: its ranking joins in both searches.
    # A gross margin is read from the income statement, which these filings lack: not said.
    assert steered.sections == []
    assert set(steered.weights) == {
        f"{name}{scope}"
        for name in ("dense", "bm25", "identifiers")
        for scope in ("", "@documents")
    }
    # Soft: the other issuer's chunks are still found, after the named issuer's.
    everything = retriever.search(QUESTION, top_k=10).hits
    issuers = [h.doc_id for h in everything]
    assert "summit" in issuers and issuers == sorted(issuers)
    assert any(h.page_end == 2 for h in everything if h.doc_id == "harbour")


def test_another_issuers_hits_weigh_less_when_the_question_names_an_issuer(
    retriever: Retriever,
) -> None:
    issuers: dict[str, str] = {}

    def scores(other_issuers_weight: float, question: str = QUESTION) -> dict[str, float]:
        found = with_fusion(retriever, other_issuers_weight=other_issuers_weight)
        # A hit a chunk: its score is the fused one (a page's is its rank among pages).
        hits = found.search(question, top_k=10, group_pages=False).hits
        issuers.update({h.chunk_id: h.doc_id for h in hits})
        return {h.chunk_id: h.score for h in hits}

    unweighed, halved, dropped = scores(1.0), scores(0.5), scores(0.0)
    assert set(unweighed) == set(halved) == set(dropped)  # soft: every hit still shown
    assert "summit" in {issuers[chunk_id] for chunk_id in unweighed}
    for chunk_id, score in unweighed.items():
        if issuers[chunk_id] == "summit":
            assert score > 0 and halved[chunk_id] == pytest.approx(score / 2)
            assert dropped[chunk_id] == 0
        else:
            assert halved[chunk_id] == dropped[chunk_id] == score
    # Named by period alone, no issuer: every document weighs alike.
    by_period = "Did gross margin improve in fiscal 2017 thanks to pricing?"
    assert scores(0.0, by_period) == scores(1.0, by_period)


def test_a_filter_the_caller_gives_bounds_the_inference(retriever: Retriever) -> None:
    alone = retriever.search(QUESTION, top_k=2, filters=SearchFilters(doc_ids=["summit"]))
    assert alone.documents is None and {h.doc_id for h in alone.hits} == {"summit"}


def test_a_document_weight_of_zero_turns_the_inference_off(retriever: Retriever) -> None:
    off = with_fusion(retriever, document_weight=0)
    assert off.search(QUESTION, top_k=2).documents is None


def test_profile_fields_are_filterable_in_the_index(retriever: Retriever) -> None:
    rows = retriever.index.scan(
        retriever.collection, ["doc_id"], 'metadata["doc_organization"] == "Summit Quarry Corp."'
    )
    assert rows and {r["doc_id"] for r in rows} == {"summit"}
    assert [c.doc_id for c in retriever.document_cards()] == ["harbour", "summit"]


def test_the_cli_says_which_words_named_which_documents(
    retriever: Retriever, settings: Settings, query_cli: Callable[..., str]
) -> None:
    out = query_cli(settings.data_dir, "--top-k", "2", QUESTION)
    assert "# documents named by 'HFL', '2017' (issuer 'HFL'; period 2017): harbour;" in out
    assert "[1] harbour.pdf" in out and "dense@documents #1" in out
    # The question reads a metric from the income statement, which these filings lack.
    assert "# sections asked" not in out and "@sections" not in out
    flat = query_cli(settings.data_dir, "--top-k", "2", "--no-infer", QUESTION)
    assert "# documents named" not in flat and "@documents" not in flat
    assert "# sections asked" not in flat
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
        # Its profile names no kind of filing, so the collection opts into the finance pack.
        options = {"min_tokens": 0, "vocabularies": ["finance"]}
        rows = chunk_document(doc, "auto", options, ApproxTokenCounter()).rows
        vectors = embedder.encode_documents([r.context_text for r in rows]).dense
        index.replace_document(
            collection,
            "harbour",
            [IndexRow.from_chunk(r, v) for r, v in zip(rows, vectors, strict=True)],
        )
        question = "Is the company's liquidity improving?"

        def first_by(retriever: str, vocabulary_terms: bool) -> str:
            fusion = FusionSettings(vocabulary_terms=vocabulary_terms)
            hits = Retriever(index, collection, embedder, fusion=fusion).search(question, 5).hits
            found = [h for h in hits if retriever in h.found_by]
            return min(found, key=lambda h: h.found_by[retriever]).text

        assert len(rows) == 2
        # Both retrievers search with the balance sheet's names and line items added.
        for retriever in ("bm25", "dense"):
            assert "Total current assets" in first_by(retriever, True), retriever
            assert "Total current assets" not in first_by(retriever, False), retriever


# --- the statement a question asks for --------------------------------------------------

STATEMENT_QUESTION = (
    "Assume that you are a public equities analyst. Primarily using the information shown in "
    "the balance sheet, what is the year end net PPNE? Answer in USD billions."
)


@pytest.fixture(scope="module")
def report_retriever(settings: Settings) -> Iterator[Retriever]:
    """One filing whose discussion says most of the question's words and whose balance sheet
    holds the answer."""
    pages = [
        [("heading", "## FORM 10-K"), ("paragraph", "Harbour Freight Lines, Inc.")],
        [
            ("heading", "## Item 7. Liquidity"),
            (
                "paragraph",
                "Public equities analysts asking about the year end net PPNE should "
                "primarily use the information shown in the balance sheet; we answer such "
                "questions in USD billions.",
            ),
        ],
        [
            ("heading", "## Consolidated Balance Sheets"),
            (
                "table",
                "| (Dollars in millions) | 2018 | 2017 |\n|---|---|---|\n"
                "| Cash and cash equivalents | 2,853 | 3,053 |\n"
                "| Property, plant and equipment — net | 8,738 | 8,866 |\n"
                "| Total assets | 36,500 | 37,987 |",
            ),
        ],
    ]
    rows = _profiled_rows(pages, "report", {})
    assert [r.metadata.get(FINANCIAL_STATEMENT) for r in rows if r.page_start == 3] == [
        "balance sheet"
    ]
    yield from _retriever_over(rows, settings, "reports")


def _profiled_rows(pages: list, doc_id: str, options: dict) -> list[ChunkRow]:
    doc = with_profile(doc_from_pages(pages, doc_id=doc_id, source_path=f"{doc_id}.pdf"))
    return chunk_document(doc, "auto", options, ApproxTokenCounter()).rows


def _retriever_over(rows: list[ChunkRow], settings: Settings, prefix: str) -> Iterator[Retriever]:
    embedder = load_embedder(EmbeddingSpec())
    with MilvusIndex(settings.resolved_milvus_uri, collection_prefix=prefix) as index:
        yield Retriever(index, index_chunks(index, embedder, rows), embedder)


def test_a_question_naming_a_statement_finds_its_rows_among_prose_saying_its_words(
    report_retriever: Retriever,
) -> None:
    flat = report_retriever.search(STATEMENT_QUESTION, top_k=3, infer=False)
    assert flat.sections == []
    assert FINANCIAL_STATEMENT not in flat.hits[0].metadata  # the discussion says more
    steered = report_retriever.search(STATEMENT_QUESTION, top_k=3)
    assert steered.sections == ["balance sheet"]
    assert steered.hits[0].metadata[FINANCIAL_STATEMENT] == "balance sheet"
    assert {"dense@sections", "bm25@sections"} <= set(steered.hits[0].found_by)
    # Only the statement's chunks are in its lists; the prose is still found, by the flat ones.
    assert not any(name.endswith("@sections") for h in steered.hits[1:] for name in h.found_by)
    assert any(FINANCIAL_STATEMENT not in h.metadata for h in steered.hits)
    # A question naming neither a statement nor a metric searches flat.
    plain = report_retriever.search("Who answers the analysts' questions?", top_k=3)
    assert plain.sections == [] and not any("@" in name for name in plain.weights)


def test_a_section_weight_of_zero_turns_the_statement_search_off(
    report_retriever: Retriever,
) -> None:
    off = Retriever(
        report_retriever.index,
        report_retriever.collection,
        report_retriever.embedder,
        fusion=FusionSettings(section_weight=0),
    )
    result = off.search(STATEMENT_QUESTION, top_k=3)
    assert result.sections == [] and FINANCIAL_STATEMENT not in result.hits[0].metadata


def test_a_statement_the_collection_lacks_is_neither_searched_nor_said(
    retriever: Retriever, report_retriever: Retriever
) -> None:
    lacking = retriever.search(STATEMENT_QUESTION, top_k=3)
    assert lacking.sections == []
    assert not any(name.endswith("@sections") for name in lacking.weights)
    holding = report_retriever.search(STATEMENT_QUESTION, top_k=3)
    assert holding.sections == ["balance sheet"] and "dense@sections" in holding.weights


# --- a section the question names by its title, learned from the collection -------------------

TITLED_QUESTION = "Under the policy on leave for contractors, how many sick days may be taken?"


HANDBOOK_PAGES = [
    [
        ("heading", "## Overview"),
        (
            "paragraph",
            "Questions on how many days of leave contractors may take under the policy, "
            "sick or not, go to the office manager, who answers them within days.",
        ),
    ],
    [
        ("heading", "## Contractor Leave Policy"),
        ("table", "| Kind | Allowance |\n|---|---|\n| Annual | 20 |\n| Illness | 10 |"),
    ],
    [("heading", "## Travel Policy"), ("paragraph", "Trains are booked second class.")],
]


@pytest.fixture(scope="module")
def handbook_retriever(settings: Settings) -> Iterator[Retriever]:
    """A handbook no vocabulary pack knows: its overview says most of the question's words,
    the section titled `Contractor Leave Policy` holds the answer."""
    rows = _profiled_rows(HANDBOOK_PAGES, "handbook", {"min_tokens": 0})
    assert not any(FINANCIAL_STATEMENT in r.metadata for r in rows)
    yield from _retriever_over(rows, settings, "handbooks")


def test_a_question_naming_a_sections_title_in_its_own_words_searches_that_section(
    handbook_retriever: Retriever,
) -> None:
    flat = handbook_retriever.search(TITLED_QUESTION, 3)  # titles are off by default
    assert flat.sections == [] and flat.hits[0].page_start == 1  # the overview says more
    titled = with_fusion(handbook_retriever, section_titles=True)
    steered = titled.search(TITLED_QUESTION, top_k=3)
    assert steered.sections == ["Contractor Leave Policy"]
    assert steered.hits[0].page_start == 2
    assert {"dense@sections", "bm25@sections"} <= set(steered.hits[0].found_by)
    # One shared word (`policy`) names no section.
    assert titled.search("Which policy applies?", top_k=3).sections == []


def _handbook(doc_id: str, issuer: str, symbol: str) -> list[ChunkRow]:
    cover = [
        ("heading", "## FORM 10-K"),
        ("paragraph", "For the fiscal year ended December 31, 2022"),
        ("paragraph", issuer),
        ("paragraph", "(Exact name of registrant as specified in its charter)"),
        ("table", f"| Class | Trading Symbol(s) |\n|---|---|\n| Common stock | {symbol} |"),
    ]
    return _profiled_rows([cover, *HANDBOOK_PAGES], doc_id, {"min_tokens": 0})


@pytest.fixture(scope="module")
def handbooks_retriever(settings: Settings) -> Iterator[Retriever]:
    """Two issuers' handbooks alike: a question can name one of them."""
    rows = [*_handbook("harbour", "Harbour Freight Lines, Inc.", "HFL"),
            *_handbook("summit", "Summit Quarry Corp.", "SQC")]  # fmt: skip
    yield from _retriever_over(rows, settings, "handbook_pairs")


def test_a_question_naming_a_document_searches_the_sections_it_names_by_title(
    handbooks_retriever: Retriever,
) -> None:
    named = f"At HFL, {TITLED_QUESTION[0].lower()}{TITLED_QUESTION[1:]}"
    steered = handbooks_retriever.search(named, top_k=3)  # section_titles is off
    assert steered.documents is not None and steered.documents.doc_ids == ["harbour"]
    assert steered.sections == ["Contractor Leave Policy"]
    assert (steered.hits[0].doc_id, steered.hits[0].page_start) == ("harbour", 3)
    assert {"dense@sections", "bm25@sections"} <= set(steered.hits[0].found_by)
    # Naming no document, the titles are not searched (the default's reason: docs/search.md).
    assert handbooks_retriever.search(TITLED_QUESTION, top_k=3).sections == []
    off = with_fusion(handbooks_retriever, named_section_titles=False)
    assert off.search(named, top_k=3).sections == []


def test_a_pack_reading_the_question_takes_the_place_of_learned_titles(
    report_retriever: Retriever,
) -> None:
    question = "What does the consolidated balance sheet say of PPNE?"
    # The title alone names the statement's section ...
    unpacked = with_fusion(report_retriever, section_titles=True)
    assert "Consolidated Balance Sheets" in unpacked._section_titles(
        unpacked.document_cards()
    ).named(question)
    # ... but the finance pack reads the question, so its kind is what is searched.
    assert unpacked.search(question, top_k=3).sections == ["balance sheet"]


@pytest.fixture(scope="module")
def chosen_titles_retriever(settings: Settings) -> Iterator[Retriever]:
    """One handbook whose collection has its titles searched, its twin's collection not."""
    chosen = _profiled_rows(HANDBOOK_PAGES, "chosen", {"min_tokens": 0, "section_titles": True})
    declined = _profiled_rows(
        HANDBOOK_PAGES, "declined", {"min_tokens": 0, "section_titles": False}
    )
    assert chosen[0].metadata[TITLES_SEARCHED_KEY] is True
    assert declined[0].metadata[TITLES_SEARCHED_KEY] is False
    assert TITLES_SEARCHED_KEY not in _profiled_rows(HANDBOOK_PAGES, "left", {})[0].metadata
    yield from _retriever_over([*chosen, *declined], settings, "chosen_titles")


def test_a_collection_chooses_whether_its_titles_are_searched(
    chosen_titles_retriever: Retriever,
) -> None:
    # Whatever the search's own setting, only the chosen handbook's section is searched.
    for fusion in ({}, {"section_titles": True}):
        result = with_fusion(chosen_titles_retriever, **fusion).search(TITLED_QUESTION, top_k=3)
        assert result.sections == ["Contractor Leave Policy"], fusion
        in_sections = {
            (h.doc_id, h.page_start)
            for h in result.hits
            if any(name.endswith("@sections") for name in h.found_by)
        }
        assert in_sections == {("chosen", 2)}, fusion
