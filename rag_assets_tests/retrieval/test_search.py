"""The search API on a real Milvus Lite file with the bundled MiniLM: language-aware fusion,
filters, scores, found_by, rerank, and the CLI on top."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag_assets.cli import main
from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.embedding.models import Embedder, EmbeddingSpec, load_embedder
from rag_assets.index.rows import IndexRow
from rag_assets.index.schema import OutdatedCollectionError
from rag_assets.index.store import MilvusIndex
from rag_assets.retrieval.evaluation.comparison import index_chunks
from rag_assets.retrieval.rerank import HttpReranker
from rag_assets.retrieval.search import (
    RetrievedHit,
    Retriever,
    SearchFilters,
    open_retriever,
    search,
)
from rag_assets.settings import Settings
from rag_assets.settings.fusion import FusionSettings
from rag_assets_tests.support.rerank_stub import Behaviour, serve_rerank_stub
from rag_assets_tests.support.retrievers import with_fusion

pytestmark = pytest.mark.slow

# (doc_id, template, chunk_type, header_path, pages, text)
CHUNKS = [
    ("specs/host.pdf", "spec", "text", "/2 Register Map/", (3, 3),
     "The Host Control Register at offset 0x04 enables interrupts and DMA transfers."),
    ("specs/host.pdf", "spec", "table_row", "/2 Register Map/2.1 Host_Control/", (4, 5),
     "Host Control Register - Offset: 0x04 - Bits: 15:8 - Timeout Counter value."),
    ("specs/host.pdf", "spec", "text", "/2 Register Map/2.1 HostXControl/", (4, 4),
     "The auxiliary block resets the bus after a power cycle."),
    ("specs/host.pdf", "spec", "text", "/7 Errors/", (9, 9),
     "Error code ZX-4471 indicates that the firmware checksum did not match."),
    ("policies/lease.docx", "clauses", "clause", "/Article 5/", (None, None),
     "Tenants must give thirty days written notice before ending the lease."),
    ("policies/solar.md", "semantic", "text", "/Energy/", (None, None),
     "Solar panels convert sunlight into electricity using photovoltaic cells."),
    ("legco/zh-paper.pdf", "qa_pairs", "qa", "/房屋/", (2, 2),
     "问：政府何时公布房屋政策的时间表？答：局长表示将于年底前公布。"),
    ("legco/zh-paper.pdf", "qa_pairs", "text", "/科技/", (5, 5),
     "机器学习是人工智能的一个重要分支。"),
    ("legco/zh-paper.pdf", "qa_pairs", "text", "/租务/", (6, 7),
     "租户在终止租约前必须提前三十天书面通知。"),
    ("specs/host.pdf", "spec", "glossary", "/5 Glossary/", (10, 10),
     "Card Detect: the input signal that tells whether a card is inserted."),
    ("specs/host.pdf", "spec", "text", "/3 Operation/", (6, 6),
     "The Card Detect input is debounced for 32 ms before its interrupt is raised."),
]  # fmt: skip
GLOSSARY, DEBOUNCE = CHUNKS[9][5], CHUNKS[10][5]


def chunk_rows(chunks: list[tuple] = CHUNKS) -> list[ChunkRow]:
    rows = []
    for i, (doc_id, template, chunk_type, header_path, pages, text) in enumerate(chunks):
        title = doc_id.rsplit("/", 1)[-1]
        rows.append(
            ChunkRow(
                chunk_id=chunk_id_for(doc_id, template, i, text),
                doc_id=doc_id,
                source_path=doc_id,
                source_sha256="0" * 64,
                template=template,
                chunk_index=i,
                text=text,
                context_text=f"{title}\n{header_path.strip('/')}\n{text}",
                header_path=header_path,
                chunk_type=chunk_type,
                page_start=pages[0],
                page_end=pages[1],
            )
        )
    return rows


CHUNK_ROWS = chunk_rows()
BY_TEXT = {c.text: c for c in CHUNK_ROWS}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Settings:
    """A data folder whose index holds CHUNKS in the configured model's collection."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("data"))
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        collection = index.ensure_collection(embedder.name, embedder.dimension, False)
        vectors = embedder.encode_documents([c.context_text for c in CHUNK_ROWS]).dense
        rows = [IndexRow.from_chunk(c, v) for c, v in zip(CHUNK_ROWS, vectors, strict=True)]
        for doc_id in dict.fromkeys(c.doc_id for c in CHUNK_ROWS):
            index.replace_document(collection, doc_id, [r for r in rows if r.doc_id == doc_id])
    return settings


@pytest.fixture(scope="module")
def retriever(settings: Settings) -> Iterator[Retriever]:
    with open_retriever(settings) as opened:
        assert opened is not None
        yield opened


@pytest.mark.parametrize(
    ("query", "language", "expected"),
    [
        ("人工智能", "zh", CHUNKS[7][5]),
        ("房屋政策时间表", "zh", CHUNKS[6][5]),
        ("书面通知", "zh", CHUNKS[8][5]),
        ("What do bits 15:8 of the Host Control Register hold?", "en", CHUNKS[1][5]),
        ("firmware checksum error", "en", CHUNKS[3][5]),
        ("feline companions", "en", None),  # no word shared: dense still answers something
        ("how much notice must a tenant give", "en", CHUNKS[4][5]),
    ],
)
def test_chinese_and_english_queries_in_one_collection(
    retriever: Retriever, query: str, language: str, expected: str | None
) -> None:
    result = retriever.search(query, top_k=3)
    assert result.language == language
    assert result.hits, query
    if expected is not None:
        assert result.hits[0].text == expected


def test_weights_follow_the_model_languages(retriever: Retriever, settings: Settings) -> None:
    # MiniLM is English only: a Chinese query goes to BM25 alone, an English one to both.
    assert retriever.embedder.languages == ("en",)
    assert retriever.search("人工智能").weights == {"bm25": 1.0}
    assert retriever.search("artificial intelligence").weights == {"dense": 1.0, "bm25": 1.0}
    # Dense has no weight there, but fills after BM25's hits with what BM25 did not find.
    zh = retriever.search("人工智能", top_k=8)
    bm25 = retriever.index.bm25_search(retriever.collection, "人工智能", 8)
    found = len(bm25)
    assert 0 < found < 8 and len(zh.hits) == 8
    assert [h.chunk_id for h in zh.hits[:found]] == [h.chunk_id for h in bm25]
    assert all(set(h.found_by) == {"bm25"} and h.score > 0 for h in zh.hits[:found])
    assert all(set(h.found_by) == {"dense"} and h.score == 0 for h in zh.hits[found:])
    dense_ranks = [h.found_by["dense"] for h in zh.hits[found:]]
    assert dense_ranks == sorted(dense_ranks)

    # The same model declared multilingual keeps its dense side for Chinese.
    multilingual = load_embedder(EmbeddingSpec(languages=("*",)))
    wide = Retriever(retriever.index, retriever.collection, multilingual)
    result = wide.search("人工智能")
    assert result.weights == {"dense": 1.0, "bm25": 1.0}
    assert any("dense" in h.found_by for h in result.hits)

    # Down-weighted rather than dropped, by setting.
    damped = with_fusion(retriever, foreign_model_weight=0.1)
    assert damped.search("人工智能").weights == {"dense": 0.1, "bm25": 1.0}


def test_bm25_reads_the_stemmed_copy_for_english_questions_alone(retriever: Retriever) -> None:
    """`debounces` meets `debounced` only in the stemmed copy English questions search; a
    Chinese question quoting the word searches the text analyzer's exact forms."""
    bm25_only = with_fusion(retriever, dense_weight=0.0, foreign_model_fill=False)

    def first(query: str) -> str:
        return bm25_only.search(query, top_k=1, group_pages=False).hits[0].text

    assert first("Why is the input debounces?") == DEBOUNCE
    assert first("debounces 是什么意思？") != DEBOUNCE
    assert first("debounced 是什么意思？") == DEBOUNCE


def test_the_model_languages_setting_reaches_the_retriever(settings: Settings) -> None:
    declared = settings.model_copy(update={"embedding_languages": "zh, en"})
    with open_retriever(declared) as retriever:
        assert retriever is not None and retriever.embedder.languages == ("zh", "en")
        assert retriever.search("人工智能").weights == {"dense": 1.0, "bm25": 1.0}


def test_scores_are_normalized_and_descending(retriever: Retriever) -> None:
    for query in ["Host Control Register", "人工智能", "lease notice", "sunlight"]:
        hits = retriever.search(query, top_k=8).hits
        scores = [h.score for h in hits]
        assert all(0.0 <= s <= 1.0 for s in scores), scores
        assert scores == sorted(scores, reverse=True)
    # Rank 1 in every retriever that ran is the best possible fused score.
    top = retriever.search("Solar panels convert sunlight into electricity").hits[0]
    assert top.found_by == {"dense": 1, "bm25": 1} and top.score == pytest.approx(1.0)


def test_a_named_identifier_ranks_its_holders_in_bm25s_order(retriever: Retriever) -> None:
    query = "Which register sits at offset 0x04?"
    result = retriever.search(query, top_k=20)
    assert result.weights == {"dense": 1.0, "bm25": 1.0, "identifiers": 1.0}
    holders = [h for h in result.hits if "identifiers" in h.found_by]
    assert {h.text for h in holders} == {CHUNKS[0][5], CHUNKS[1][5]}  # the two naming 0x04
    bm25 = [h.chunk_id for h in retriever.index.bm25_search(retriever.collection, query, 20)]
    by_identifier = sorted(holders, key=lambda h: h.found_by["identifiers"])
    assert [h.chunk_id for h in by_identifier] == [
        c for c in bm25 if c in {h.chunk_id for h in holders}
    ]
    # Without a digit in the question, or at weight 0, there is no such ranking.
    assert "identifiers" not in retriever.search("Host Control Register offset").weights
    off = with_fusion(retriever, identifier_weight=0.0)
    assert all("identifiers" not in h.found_by for h in off.search(query, top_k=20).hits)


def test_found_by_gives_each_retrievers_own_rank(retriever: Retriever) -> None:
    query = "Host Control Register offset"
    result = retriever.search(query, top_k=20)
    vector = retriever.embedder.encode_queries([query]).dense[0]
    dense = [h.chunk_id for h in retriever.index.dense_search(retriever.collection, vector, 20)]
    bm25 = [h.chunk_id for h in retriever.index.bm25_search(retriever.collection, query, 20)]
    assert bm25 and len(dense) == len(CHUNKS)
    for hit in _members(result.hits):
        expected = {}
        if hit.chunk_id in dense:
            expected["dense"] = dense.index(hit.chunk_id) + 1
        if hit.chunk_id in bm25:
            expected["bm25"] = bm25.index(hit.chunk_id) + 1
        assert hit.found_by == expected
    # Every row is a dense candidate: each a hit or on a hit's page.
    assert {h.chunk_id for h in _members(result.hits)} == set(dense)


def _members(hits: list[RetrievedHit]) -> list[RetrievedHit]:
    """The hits and the further hits on their pages."""
    return [member for hit in hits for member in (hit, *hit.same_page)]


def _expected(keep) -> set[str]:
    return {c.chunk_id for c in CHUNK_ROWS if keep(c)}


def _overlaps(c: ChunkRow, first: int | None, last: int | None) -> bool:
    if c.page_start is None or c.page_end is None:
        return False
    return (first is None or c.page_end >= first) and (last is None or c.page_start <= last)


@pytest.mark.parametrize(
    ("filters", "keep"),
    [
        (SearchFilters(doc_ids=["specs/host.pdf", "policies/solar.md"]),
         lambda c: c.doc_id in {"specs/host.pdf", "policies/solar.md"}),
        (SearchFilters(source_glob="policies/*"), lambda c: c.source_path.startswith("policies/")),
        # A character class cannot be said in `like`: decided in Python, still exact.
        (SearchFilters(source_glob="*/[hl]*"),
         lambda c: fnmatch.fnmatchcase(c.source_path, "*/[hl]*")),
        (SearchFilters(templates=["clauses", "qa_pairs"]),
         lambda c: c.template in {"clauses", "qa_pairs"}),
        (SearchFilters(chunk_types=["table_row", "qa"]),
         lambda c: c.chunk_type in {"table_row", "qa"}),
        (SearchFilters(header_path_prefix="/2 Register Map/"),
         lambda c: c.header_path.startswith("/2 Register Map/")),
        # `_` is a LIKE wildcard: "/2 Register Map/2.1 HostXControl/" must still not pass.
        (SearchFilters(header_path_prefix="/2 Register Map/2.1 Host_"),
         lambda c: c.header_path.startswith("/2 Register Map/2.1 Host_")),
        (SearchFilters(page_from=5, page_to=6), lambda c: _overlaps(c, 5, 6)),
        (SearchFilters(page_from=7), lambda c: _overlaps(c, 7, None)),
        (SearchFilters(page_to=3), lambda c: _overlaps(c, None, 3)),
        (SearchFilters(doc_ids=["legco/zh-paper.pdf"], chunk_types=["text"], page_to=5),
         lambda c: c.doc_id == "legco/zh-paper.pdf" and c.chunk_type == "text"
         and _overlaps(c, None, 5)),
    ],
)  # fmt: skip
def test_each_filter_returns_exactly_the_matching_chunks(
    retriever: Retriever, filters: SearchFilters, keep
) -> None:
    # An English query: the dense side returns every row that passes the filter.
    hits = retriever.search("register interrupts", top_k=20, filters=filters).hits
    assert {h.chunk_id for h in _members(hits)} == _expected(keep)


def test_a_filter_applies_to_bm25_as_well(retriever: Retriever) -> None:
    # (BM25 alone: dense, which fills after BM25 for a Chinese query, is off here.)
    bm25 = with_fusion(retriever, foreign_model_fill=False)
    only_spec = SearchFilters(doc_ids=["specs/host.pdf"])
    assert bm25.search("人工智能", filters=only_spec).hits == []
    hits = bm25.search("人工智能", filters=SearchFilters(page_from=5, page_to=5)).hits
    assert [h.text for h in hits] == [CHUNKS[7][5]]


def test_backwards_pages_are_refused() -> None:
    with pytest.raises(ValueError, match="after page_to"):
        SearchFilters(page_from=5, page_to=2)


def test_glossary_entries_lead_only_for_what_a_term_means(retriever: Retriever) -> None:
    glossary = BY_TEXT[GLOSSARY].chunk_id
    question = "How long is the card detect input debounced?"
    as_is = with_fusion(retriever, glossary_weight=1.0)
    silenced = with_fusion(retriever, glossary_weight=0.0)
    unweighted = {h.chunk_id: h.score for h in as_is.search(question, top_k=10).hits}
    assert unweighted[glossary] > 0.5  # the entry names the term: a strong candidate
    hits = silenced.search(question, top_k=len(CHUNKS)).hits
    assert hits[0].text == DEBOUNCE
    assert (hits[-1].chunk_id, hits[-1].score) == (glossary, 0.0)
    # Asked what the term means, the entry keeps its score and leads.
    for meaning in ("What is Card Detect?", "What does Card Detect mean?", "Card Detect 是什么？"):
        first = silenced.search(meaning, top_k=3).hits[0]
        assert first.chunk_id == glossary and first.score == as_is.search(meaning).hits[0].score


def test_a_glossary_entry_holding_the_questions_identifier_is_weighed_too(
    tmp_path: Path, embedder: Embedder
) -> None:
    rows = chunk_rows([
        ("specs/mmc.pdf", "spec", "glossary", "/5 Glossary/", (9, 9),
         "DDR52: the dual data rate bus mode at 52 MHz."),
        ("specs/mmc.pdf", "spec", "text", "/3 Bus modes/", (4, 4),
         "In DDR52 mode the bus samples data on both clock edges."),
        ("specs/mmc.pdf", "spec", "text", "/3 Bus modes/", (5, 5),
         "In HS200 mode the bus samples data on the rising clock edge."),
        ("specs/mmc.pdf", "spec", "text", "/4 Reset/", (6, 6),
         "A bus reset returns every card to the identification mode."),
        ("specs/mmc.pdf", "spec", "text", "/4 Reset/", (7, 7),
         "The host samples the card detect line before a reset."),
    ])  # fmt: skip
    with MilvusIndex(str(tmp_path / "milvus.db")) as index:
        collection = index_chunks(index, embedder, rows)
        silenced = Retriever(
            index, collection, embedder, fusion=FusionSettings(glossary_weight=0.0)
        )
        hits = silenced.search("How does the bus sample data in DDR52 mode?", top_k=5).hits
    entry = hits[-1]  # last: weighed to nothing, though it holds the identifier
    assert entry.text == rows[0].text and "identifiers" in entry.found_by
    assert entry.score == 0.0


def test_without_a_reranker_the_fused_order_stands(retriever: Retriever) -> None:
    result = retriever.search("Host Control Register")
    assert (result.reranked, retriever.reranker) == (False, None)
    assert result.rerank_note.startswith("rerank off")
    assert all(h.rerank_score is None for h in result.hits)


def test_a_reranker_reorders_the_head(retriever: Retriever) -> None:
    query = "timeout counter bits"
    fused = retriever.search(query, top_k=5).hits
    with serve_rerank_stub() as stub:
        reranker = HttpReranker(stub.url, max_retries=0)
        reranking = Retriever(
            retriever.index, retriever.collection, retriever.embedder, reranker=reranker,
            rerank_top_n=4,
        )  # fmt: skip
        result = reranking.search(query, top_k=5)
        stub.enqueue(Behaviour(status=400))
        failed = reranking.search(query, top_k=5)
        reranker.close()
    assert result.reranked and "rerank by" in result.rerank_note
    assert len(stub.requests[0].body["documents"]) == 4
    head = result.hits[:4]
    assert {h.chunk_id for h in head} == {h.chunk_id for h in fused[:4]}
    rerank_scores = [h.rerank_score for h in head]
    assert rerank_scores == sorted(rerank_scores, reverse=True)
    assert head[0].text == CHUNKS[1][5]  # holds "timeout", "counter" and "bits"
    assert result.hits[4].rerank_score is None and result.hits[4].chunk_id == fused[4].chunk_id
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    # A failed call keeps the fused order and says why.
    assert not failed.reranked and "HTTP 400" in failed.rerank_note
    assert [h.chunk_id for h in failed.hits] == [h.chunk_id for h in fused]


def test_open_retriever_loads_the_configured_reranker(settings: Settings) -> None:
    with serve_rerank_stub() as stub:
        configured = settings.model_copy(update={"rerank_url": stub.url, "rerank_top_n": 3})
        with open_retriever(configured) as retriever:
            assert retriever is not None and retriever.rerank_top_n == 3
            result = retriever.search("lease notice")
    assert result.reranked and stub.requests


def test_search_on_settings_and_on_an_empty_folder(settings: Settings, tmp_path: Path) -> None:
    assert search(settings, "人工智能", top_k=1).hits[0].text == CHUNKS[7][5]
    empty = search(Settings(data_dir=tmp_path), "人工智能")
    assert (empty.hits, empty.rerank_note) == ([], "nothing indexed yet")


def test_an_old_schema_collection_is_reported(tmp_path: Path, embedder: Embedder) -> None:
    from pymilvus import MilvusClient

    settings = Settings(data_dir=tmp_path)
    old = MilvusClient(settings.resolved_milvus_uri)
    old.create_collection("rag_chunks__all_minilm_l6_v2__384", dimension=embedder.dimension)
    old.close()
    with pytest.raises(OutdatedCollectionError, match="older schema"):
        search(settings, "anything")
    assert main(["query", "--data-dir", str(tmp_path), "anything"]) == 1


def test_cli_query_filters_and_found_by(settings: Settings, query_cli: Callable[..., str]) -> None:
    out = query_cli(settings.data_dir, "--top-k", "3", "ZX-4471 firmware checksum")
    assert "# language en; fusion dense 1, bm25 1" in out
    assert "[1] specs/host.pdf, p. 9, § /7 Errors/" in out and "found by bm25 #1, dense #1" in out

    filters = ["--source", "legco/*", "--chunk-type", "text", "--pages", "6-9"]
    answer = json.loads(query_cli(settings.data_dir, "--json", "--top-k", "10", *filters, "租约"))
    assert answer["language"] == "zh" and answer["weights"] == {"bm25": 1.0}
    hits = [(h["text"], h["found_by"]) for h in answer["hits"]]
    assert hits[0] == (CHUNKS[8][5], {"bm25": 1})
    assert all(set(found_by) == {"dense"} for _, found_by in hits[1:])  # filled after BM25

    for flags, docs in [
        (["--doc", "policies/lease.docx", "--doc", "policies/solar.md"], {"policies/lease.docx", "policies/solar.md"}),
        (["--template", "spec", "--section", "/7 Errors/"], {"specs/host.pdf"}),
        (["--pages", "3"], {"specs/host.pdf"}),
    ]:  # fmt: skip
        out = query_cli(settings.data_dir, "--json", "--top-k", "10", *flags, "register")
        assert {h["doc_id"] for h in json.loads(out)["hits"]} == docs
    with pytest.raises(SystemExit):
        query_cli(settings.data_dir, "--pages", "9-3", "register")


def test_learned_sparse_joins_the_fusion_for_bge_m3(settings: Settings) -> None:
    # The BGE-M3 code path on the bundled folder: its sparse head is random, its plumbing real.
    m3 = load_embedder(EmbeddingSpec(kind="bge-m3"))
    assert m3.has_sparse and m3.languages == ("*",)
    with MilvusIndex(settings.resolved_milvus_uri, collection_prefix="rag_m3") as index:
        collection = index.ensure_collection(m3.name, m3.dimension, m3.has_sparse)
        batch = m3.encode_documents([c.context_text for c in CHUNK_ROWS])
        assert batch.sparse is not None
        rows = [
            IndexRow.from_chunk(c, v, s)
            for c, v, s in zip(CHUNK_ROWS, batch.dense, batch.sparse, strict=True)
        ]
        for doc_id in dict.fromkeys(c.doc_id for c in CHUNK_ROWS):
            index.replace_document(collection, doc_id, [r for r in rows if r.doc_id == doc_id])
        retriever = Retriever(index, collection, m3)
        query = CHUNK_ROWS[0].context_text  # naming offset 0x04: the identifier ranking joins
        result = retriever.search(query, top_k=3)
        assert result.weights == {"dense": 1.0, "bm25": 1.0, "sparse": 1.0, "identifiers": 1.0}
        top = result.hits[0]
        assert top.chunk_id == CHUNK_ROWS[0].chunk_id
        # Random sparse weights need not rank the same text first, but the rank is the index's.
        weights = m3.encode_queries([query]).sparse[0]
        sparse = [h.chunk_id for h in index.sparse_search(collection, weights, 20)]
        assert top.found_by == {
            "dense": 1,
            "bm25": 1,
            "sparse": sparse.index(top.chunk_id) + 1,
            "identifiers": 1,
        }
        # A multilingual model keeps its side for Chinese queries.
        assert set(retriever.search("人工智能").weights) == {"dense", "bm25", "sparse"}
