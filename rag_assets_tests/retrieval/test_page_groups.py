"""A page's hits as one result: the grouping itself, then the search on a real Milvus Lite file
with the bundled MiniLM, the evaluation's scoring of a group and the CLI's view of it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.index.schema import NO_PAGE
from rag_assets.index.store import MilvusIndex
from rag_assets.retrieval.evaluation.comparison import compare_templates, index_chunks, run_specs
from rag_assets.retrieval.evaluation.metrics import score_ranking
from rag_assets.retrieval.evaluation.sets import EvalQuestion, Target
from rag_assets.retrieval.pages import (
    best_hit_and_votes,
    page_groups,
    page_key,
    page_votes,
)
from rag_assets.retrieval.search import Retriever
from rag_assets.settings import Settings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.templates.tokens import TokenizerCounter
from rag_assets_tests.support.builders import doc_from_pages
from rag_assets_tests.support.retrievers import with_fusion


def test_a_page_ranks_where_its_best_hit_ranks_and_keeps_the_rest_in_order() -> None:
    pages = {"a": ("doc", 2), "b": ("doc", 2), "c": ("doc", 5), "d": ("doc", 2), "e": None}
    assert page_groups(["a", "b", "c", "d", "e", "f"], pages) == [
        ("a", ["b", "d"]),
        ("c", []),
        ("e", []),  # no page: it stands alone
        ("f", []),  # not in the map: alike
    ]


def test_the_same_page_number_in_two_documents_is_two_pages() -> None:
    pages = {"a": ("one", 3), "b": ("two", 3)}
    assert page_groups(["a", "b"], pages) == [("a", []), ("b", [])]


def test_a_chunks_page_is_its_first_page() -> None:
    assert page_key({"doc_id": "doc", "page_start": 3}) == ("doc", 3)
    assert page_key({"doc_id": "doc", "page_start": NO_PAGE}) is None
    assert page_key({"doc_id": "doc", "page_start": None}) is None


def test_page_votes_rank_each_page_where_its_first_hit_ranks() -> None:
    groups = [("a", ["b", "d"]), ("c", []), ("e", [])]
    rankings = {"bm25": ["b", "a", "c", "d", "x"], "dense": ["e", "d", "c"]}
    assert page_votes(rankings, groups) == {"bm25": ["a", "c"], "dense": ["e", "a", "c"]}


def test_pages_rank_by_their_best_hit_and_their_votes_at_equal_weight() -> None:
    groups = [("a", []), ("b", []), ("c", []), ("z", [])]
    best_hit = {"a": 0.9, "b": 0.8, "c": 0.7, "z": 0.0}
    ranked = best_hit_and_votes(groups, best_hit, ["b", "c", "a", "z"], rrf_k=60)
    # b: 2nd and 1st beats a: 1st and 3rd; c: 3rd and 2nd follows.
    assert [lead for lead, _ in ranked] == ["b", "a", "c", "z"]
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True) and all(0 < s < 1 for s in scores[:3])
    # A page no weighted retriever found keeps its score of 0.
    assert ranked[-1] == ("z", 0.0)
    # First in both orders scores 1.
    assert best_hit_and_votes(groups, best_hit, ["a", "b", "c", "z"], rrf_k=60)[0] == ("a", 1.0)


# --- the search ----------------------------------------------------------------------------

# A register page cut into five chunks, a later page, and two chunks without pages.
CHUNKS = [
    (2, "The Host Control Register at offset 0x04 enables the host controller's interrupts."),
    (2, "Host Control Register bits 7:0 select the host controller's interrupt sources."),
    (2, "Host Control Register bits 15:8 hold the host controller's timeout counter."),
    (2, "Host Control Register bits 31:16 are reserved by the host controller."),
    (2, "Host Control Register writes take effect at the host controller's next clock."),
    (5, "Appendix B: timing diagrams of the controller's power-up sequence."),
    (None, "Solar panels convert sunlight into electricity."),
    (None, "Tenants give thirty days notice before ending the lease."),
]
QUESTION = "What does the Host Control Register of the host controller do?"


def _rows() -> list[ChunkRow]:
    return [
        ChunkRow(
            chunk_id=chunk_id_for("host.pdf", "spec", i, text),
            doc_id="host.pdf",
            source_path="host.pdf",
            source_sha256="0" * 64,
            template="spec",
            chunk_index=i,
            text=text,
            context_text=text,
            header_path="/2 Registers/",
            chunk_type="text",
            page_start=page,
            page_end=page,
        )
        for i, (page, text) in enumerate(CHUNKS)
    ]


@pytest.fixture(scope="module")
def retriever(settings: Settings) -> Iterator[Retriever]:
    embedder = load_embedder(EmbeddingSpec())
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        yield Retriever(index, index_chunks(index, embedder, _rows()), embedder)


@pytest.mark.slow
def test_a_pages_hits_are_one_result_and_the_next_page_moves_up(retriever: Retriever) -> None:
    chunks = retriever.search(QUESTION, top_k=len(CHUNKS), group_pages=False)
    assert not chunks.pages_grouped
    assert [h.page_start for h in chunks.hits][:4] == [2, 2, 2, 2]  # one page fills the top 4
    pages = retriever.search(QUESTION, top_k=2)
    assert pages.pages_grouped and len(pages.hits) == 2
    # The register page first, then the best chunk of another page: it moves up.
    assert pages.hits[0].page_start == 2
    assert pages.hits[1].chunk_id == next(h for h in chunks.hits if h.page_start != 2).chunk_id
    register = pages.hits[0]
    assert {h.page_start for h in register.same_page} == {2}
    assert len(register.same_page) == 4  # the page's other chunks, none lost
    scores = [h.score for h in register.same_page]
    assert scores == sorted(scores, reverse=True) and max(scores) <= register.score
    # Ranked by best hit alone, no chunk ranks lower grouped than alone (page votes may put a
    # page that one hit leads below one that several retrievers find).
    by_best_hit = with_fusion(retriever, page_votes=False)
    alone = by_best_hit.search(QUESTION, top_k=len(CHUNKS), group_pages=False).hits
    grouped = by_best_hit.search(QUESTION, top_k=len(CHUNKS)).hits
    rank_alone = {h.chunk_id: rank for rank, h in enumerate(alone)}
    for rank, hit in enumerate(grouped):
        for member in (hit, *hit.same_page):
            assert rank <= rank_alone[member.chunk_id]
    # Chunks without pages stand alone.
    assert all(not h.same_page for h in grouped if h.page_start is None)
    assert sum(1 + len(h.same_page) for h in grouped) == len(CHUNKS)


@pytest.mark.slow
def test_grouping_follows_the_settings_unless_the_caller_says(retriever: Retriever) -> None:
    off = with_fusion(retriever, group_pages=False)
    assert [h.page_start for h in off.search(QUESTION, top_k=3).hits] == [2, 2, 2]
    assert not any(h.same_page for h in off.search(QUESTION, top_k=3).hits)
    assert off.search(QUESTION, top_k=3, group_pages=True).pages_grouped


@pytest.mark.slow
def test_a_page_meets_a_target_any_of_its_hits_meets(retriever: Retriever) -> None:
    target = [Target(evidence="bits 31:16 are reserved")]
    chunks = retriever.search(QUESTION, top_k=10, group_pages=False).hits
    pages = retriever.search(QUESTION, top_k=10).hits
    assert score_ranking(pages, target)["mrr@10"] == 1.0  # the register page, first
    assert score_ranking(chunks, target)["mrr@10"] < 1.0


def test_the_bench_runs_one_template_a_hit_per_chunk_too() -> None:
    runs = run_specs(["fixed", "auto"], None, "auto")
    assert [(r.name, r.pages) for r in runs] == [
        ("fixed", None),  # as the settings say
        ("auto", None),
        ("auto:chunks", False),
    ]


@pytest.mark.slow
def test_the_evaluation_groups_pages_as_the_settings_say(settings: Settings) -> None:
    # The register page of CHUNKS, a paragraph each; its reserved bits are not its best hit.
    doc = doc_from_pages([[], [("paragraph", text) for page, text in CHUNKS if page == 2]])
    question = EvalQuestion(
        id="reserved", question=QUESTION, targets=[Target(evidence="bits 31:16 are reserved")]
    )
    embedder = load_embedder(EmbeddingSpec())
    counter = TokenizerCounter.from_model_dir(embedder.model_dir)

    def mrr(group_pages: bool) -> float:
        comparison = compare_templates(
            [doc],
            [question],
            run_specs(["semantic"], None),
            embedder,
            counter,
            lambda prefix: MilvusIndex(settings.resolved_milvus_uri, collection_prefix=prefix),
            options={"max_tokens": 24, "overlap_tokens": 0},
            fusion=FusionSettings(group_pages=group_pages),
        )
        return comparison.runs[0].slices["all"].metrics["mrr@10"]

    assert mrr(group_pages=True) == 1.0
    assert mrr(group_pages=False) < 1.0
    # A fusion variant searches the same chunks as a run of its own, named by its settings.
    both = compare_templates(
        [doc],
        [question],
        run_specs(["semantic"], None, None, [(("group_pages", False),)]),
        embedder,
        counter,
        lambda prefix: MilvusIndex(settings.resolved_milvus_uri, collection_prefix=prefix),
        options={"max_tokens": 24, "overlap_tokens": 0},
        fusion=FusionSettings(group_pages=True),
    )
    assert [(r.name, r.slices["all"].metrics["mrr@10"]) for r in both.runs] == [
        ("semantic", 1.0),
        ("semantic[group_pages=False]", mrr(group_pages=False)),
    ]
    # A miss names where its first target ranked.
    ungrouped = both.runs[1]
    rank = round(1 / mrr(group_pages=False))
    assert not both.runs[0].misses
    assert ungrouped.misses[0].startswith(f"{question.id} (rank {rank}): {question.question} -> ")


@pytest.mark.slow
def test_the_cli_shows_a_pages_further_hits_under_it(
    retriever: Retriever, settings: Settings, query_cli: Callable[..., str]
) -> None:
    out = query_cli(settings.data_dir, "--top-k", "2", QUESTION)
    assert (
        "# a result a page, ranked by its best hit and the retrievers' votes for pages; its "
        "further hits below it (--chunks: a result a chunk)"
    ) in out
    # Three of the page's four further hits, and how many more (--json lists them all).
    assert out.count("\n    + /2 Registers/") == 3 and "\n    + 1 more on this page" in out
    assert "[2] host.pdf, p. 2" not in out
    flat = query_cli(settings.data_dir, "--top-k", "2", "--chunks", QUESTION)
    assert "# a result a page" not in flat and "\n    + " not in flat
    assert "[2] host.pdf, p. 2" in flat
    answer = json.loads(query_cli(settings.data_dir, "--json", QUESTION))
    assert len(answer["hits"][0]["same_page"]) == 4 and answer["page_votes"]


@pytest.mark.slow
def test_the_cli_says_how_pages_are_ranked(
    retriever: Retriever,
    settings: Settings,
    query_cli: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAG_ASSETS_FUSION_PAGE_VOTES", "false")
    out = query_cli(settings.data_dir, "--top-k", "2", QUESTION)
    assert "# a result a page, ranked by its best hit (RAG_ASSETS_FUSION_PAGE_VOTES=false)" in out
    assert not json.loads(query_cli(settings.data_dir, "--json", QUESTION))["page_votes"]
    monkeypatch.delenv("RAG_ASSETS_FUSION_PAGE_VOTES")
    # A hit per chunk has no pages to rank.
    assert "ranked by" not in query_cli(settings.data_dir, "--chunks", QUESTION)


@pytest.mark.slow
def test_with_page_votes_pages_rank_by_best_hit_and_votes(retriever: Retriever) -> None:
    result = retriever.search(QUESTION, top_k=len(CHUNKS))
    hits = result.hits
    assert result.page_votes
    assert sum(1 + len(h.same_page) for h in hits) == len(CHUNKS)
    assert hits[0].page_start == 2 and len(hits[0].same_page) == 4
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    by_best_hit = with_fusion(retriever, page_votes=False).search(QUESTION, top_k=len(CHUNKS))
    assert not by_best_hit.page_votes
    # The same pages with the same hits, each lead with its own ranks.
    assert {(h.chunk_id, len(h.same_page)) for h in by_best_hit.hits} == {
        (h.chunk_id, len(h.same_page)) for h in hits
    }
    assert {h.chunk_id: h.found_by for h in hits} == {
        h.chunk_id: h.found_by for h in by_best_hit.hits
    }
