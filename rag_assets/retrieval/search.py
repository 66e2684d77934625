"""The search API: filters, language-aware fusion of dense, BM25 and learned sparse, rerank.

Each retriever runs as its own Milvus search and the lists are fused here by weighted RRF:
Milvus' hybrid_search returns only the fused list, and `found_by` needs every list's ranks.
They cost little more than one hybrid_search (`bench/search_latency.py`, CPU per query: 86
against 74 ms in Milvus Lite at 10,000 rows; 8.1 against 5.7 ms at 10,000 and 19.5 against
19.5 ms at 100,000 in Milvus' C++ engine), which would still need them for the ranks.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, model_validator

from rag_assets.embedding.models import EmbeddingBatch, EmbeddingSpec
from rag_assets.embedding.selection import select_embedder
from rag_assets.index.filters import quote
from rag_assets.index.rows import RankedId, SearchHit
from rag_assets.index.schema import NO_PAGE
from rag_assets.index.store import MilvusIndex
from rag_assets.language import detect_language
from rag_assets.retrieval import identifiers
from rag_assets.retrieval.documents import DocumentCard, DocumentInference
from rag_assets.retrieval.documents import infer_documents as infer_from_question
from rag_assets.retrieval.fusion import (
    fill_retrievers,
    fusion_weights,
    weigh_chunk_types,
    weighted_rrf,
)
from rag_assets.retrieval.inputs import FilterValue, Page, SearchRequest, checked
from rag_assets.retrieval.intent import asks_for_definition
from rag_assets.retrieval.pages import best_hit_and_votes, page_groups, page_key, page_votes
from rag_assets.retrieval.rerank import Reranker, RerankError, load_reranker, rerank
from rag_assets.retrieval.titles import SectionTitles
from rag_assets.retrieval.vocabulary import collection_packs, sections_asked, vocabulary_terms
from rag_assets.settings import Settings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.templates.sections import TITLES_KEY
from rag_assets.vocabulary import Vocabulary

_LIKE_UNSAFE = "%_\\"  # LIKE wildcards and the escape character: a literal prefix stops there
# The lists of the search within the documents a question names: `dense@documents`, ...
DOCUMENTS_SUFFIX = "@documents"
# ... and of the search within the sections a question names or reads its measure from.
SECTIONS_SUFFIX = "@sections"
# Sets of documents whose titles a retriever keeps built (named documents vary by question).
TITLE_SETS_KEPT = 64
# A section metadata key, as vocabulary packs name them (interpolated into the filter).
_METADATA_KEY = re.compile(r"^\w+$")


class SearchFilters(BaseModel):
    """Which chunks may be returned; every field optional, all given ones must hold.

    Every retriever searches within the filter, so a narrow filter still fills top_k, except
    for what only Python decides (a glob's character class, the part of a heading prefix
    after a `%` or `_`): those narrow each retriever's candidates after the search.
    """

    model_config = ConfigDict(frozen=True)

    doc_ids: list[FilterValue] | None = None
    source_glob: FilterValue | None = None  # fnmatch on source_path
    templates: list[FilterValue] | None = None
    chunk_types: list[FilterValue] | None = None
    header_path_prefix: FilterValue | None = None
    page_from: Page | None = None  # keep chunks whose [page_start, page_end] overlaps
    page_to: Page | None = None
    # Kinds of section a vocabulary pack knows, by its metadata key (`{"financial_statement":
    # ["balance sheet"]}`), and titles of sections (`["Contractor Leave Policy"]`, as chunks
    # record them: templates/sections.py): a chunk of any kind or under any title passes.
    sections: dict[str, list[FilterValue]] | None = None
    titles: list[FilterValue] | None = None

    @model_validator(mode="after")
    def _page_order(self) -> SearchFilters:
        if (
            self.page_from is not None
            and self.page_to is not None
            and self.page_from > self.page_to
        ):
            raise ValueError(f"page_from {self.page_from} is after page_to {self.page_to}")
        if bad := [key for key in self.sections or {} if not _METADATA_KEY.match(key)]:
            raise ValueError(f"section metadata keys are words: {bad}")
        return self

    def expression(self) -> str:
        """The Milvus filter: exact for every field but the glob and the heading prefix, which
        it narrows by their literal prefix (`like` has no escape in Milvus Lite); `matches`
        then decides those two exactly."""
        clauses = []
        for field, values in (
            ("doc_id", self.doc_ids),
            ("template", self.templates),
            ("chunk_type", self.chunk_types),
        ):
            if values is not None:
                clauses.append(f"{field} in [{', '.join(quote(v) for v in values)}]")
        either = [
            f'metadata["{key}"] in [{", ".join(quote(v) for v in kinds)}]'
            for key, kinds in (self.sections or {}).items()
        ]
        if self.titles is not None:
            listed = ", ".join(quote(v) for v in self.titles)
            either.append(f'json_contains_any(metadata["{TITLES_KEY}"], [{listed}])')
        if either:
            clauses.append(f"({' or '.join(either)})" if len(either) > 1 else either[0])
        if self.header_path_prefix:
            clauses.append(_like("header_path", self.header_path_prefix))
        if self.source_glob:
            literal = self.source_glob
            cut = min((literal.find(c) for c in "*?[" if c in literal), default=len(literal))
            clauses.append(_like("source_path", literal[:cut]) if cut else "")
        # A chunk without pages cannot overlap a page range.
        if self.page_from is not None:
            clauses.append(f"page_end >= {int(self.page_from)}")
        if self.page_to is not None:
            clauses.append(f"page_start <= {int(self.page_to)} and page_start != {NO_PAGE}")
        return " and ".join(c for c in clauses if c)

    def checked_fields(self) -> tuple[str, ...]:
        """The fields `matches` reads: the searches return only these besides id and score."""
        return ("source_path", "header_path") if self.source_glob or self.header_path_prefix else ()

    def matches(self, fields: dict[str, Any]) -> bool:
        """Whether a row with these `checked_fields` passes the glob and the heading prefix."""
        if self.source_glob and not fnmatch.fnmatchcase(fields["source_path"], self.source_glob):
            return False
        prefix = self.header_path_prefix
        return not prefix or fields["header_path"].startswith(prefix)


def _like(field: str, prefix: str) -> str:
    cut = min((prefix.find(c) for c in _LIKE_UNSAFE if c in prefix), default=len(prefix))
    return f"{field} like {quote(prefix[:cut] + '%')}"


class RetrievedHit(SearchHit):
    score: float  # normalized to [0, 1], higher is better
    found_by: dict[str, int]  # retriever ("dense" | "bm25" | "sparse") -> 1-based rank
    rerank_score: float | None = None
    # With pages grouped: this hit's page's further hits among the candidates, in fused order.
    same_page: list[RetrievedHit] = []


class SearchResult(BaseModel):
    query: str
    language: str
    weights: dict[str, float]
    hits: list[RetrievedHit]
    reranked: bool
    rerank_note: str
    # The documents the question named, searched again alone and fused with the flat search
    # (their lists in `found_by` as `dense@documents`, `bm25@documents`); None when none.
    documents: DocumentInference | None = None
    # The kinds of section (a vocabulary pack's: `balance sheet`) it named or read its
    # measure from, and the titles of the collection's sections it named, searched alike
    # (`dense@sections`, ...), within the named documents when there are some.
    sections: list[str] = []
    # Whether a hit is a page (its further hits in `same_page`) rather than one chunk.
    pages_grouped: bool = False
    # Whether the pages were ranked by the retrievers' votes for pages beside their best hits
    # (fusion page_votes).
    page_votes: bool = False


class QueryEmbedder(Protocol):
    name: str
    has_sparse: bool
    languages: tuple[str, ...]

    def encode_queries(self, texts: list[str]) -> EmbeddingBatch: ...


# A fused candidate's score and its rank in each list that holds it.
_Found = tuple[float, dict[str, int]]


@dataclass
class _Scopes:
    """A search's filters by the suffix their lists' names take ("" the flat search), each
    scope's weight, and the documents and sections the question named."""

    filters: dict[str, SearchFilters]
    weights: dict[str, float]
    named: DocumentInference | None
    asked: dict[str, list[str]]  # pack metadata key -> kinds of section
    titles: list[str]  # titles of the collection's sections

    @property
    def sections(self) -> list[str]:
        return [*(kind for kinds in self.asked.values() for kind in kinds), *self.titles]

    def drop_sections(self) -> None:
        self.asked, self.titles = {}, []
        del self.filters[SECTIONS_SUFFIX], self.weights[SECTIONS_SUFFIX]


@dataclass(frozen=True)
class _Fuser:
    """Weighted RRF over a search's lists, then the chunk types' weights."""

    weights: dict[str, float]
    rrf_k: int
    fill: tuple[str, ...]
    scores: dict[str, dict[str, float]]
    types: dict[str, str | None]
    type_weights: dict[str, float]
    # Whether a hit's document is of an issuer the question names ("named") or not
    # ("outside"), and those kinds' weights ({} when the question names no issuer).
    issuers: dict[str, str]
    issuer_weights: dict[str, float]

    def fuse(self, rankings: dict[str, list[str]]) -> list[tuple[str, float, dict[str, int]]]:
        fused = weighted_rrf(rankings, self.weights, self.rrf_k, self.fill, scores=self.scores)
        fused = weigh_chunk_types(fused, self.types, self.type_weights)
        return weigh_chunk_types(fused, self.issuers, self.issuer_weights)


def _hit(
    rows: dict[str, dict], found: dict[str, _Found], chunk_id: str, same_page: list[RetrievedHit]
) -> RetrievedHit:
    score, ranks = found[chunk_id]
    return RetrievedHit(**rows[chunk_id], score=score, found_by=ranks, same_page=same_page)


class Retriever:
    def __init__(
        self,
        index: MilvusIndex,
        collection: str,
        embedder: QueryEmbedder,
        *,
        fusion: FusionSettings | None = None,
        reranker: Reranker | None = None,
        rerank_top_n: int = 20,
        rerank_note: str = "",
    ) -> None:
        self.index = index
        self.collection = collection
        self.embedder = embedder
        self.fusion = fusion or FusionSettings()
        self.reranker = reranker
        self.rerank_top_n = rerank_top_n
        self._cards: list[DocumentCard] | None = None
        self._titles: dict[tuple[str, ...], SectionTitles] = {}
        self.rerank_note = rerank_note or (
            f"rerank by {reranker.name} on the top {rerank_top_n} hits"
            if reranker
            else "rerank off"
        )

    def search(
        self,
        query: str,
        top_k: int = 5,
        filters: SearchFilters | None = None,
        infer: bool = True,
        group_pages: bool | None = None,
    ) -> SearchResult:
        """The fused hits; with `infer`, a question naming documents of the collection (by
        issuer, period, kind) also searches those alone, and one naming a section the
        collection's vocabulary packs know or a measure read from one (`balance sheet`,
        `quick ratio`) searches those sections' chunks alone (within the named documents, if
        any), each fused in. With `group_pages`
        (default: the fusion settings'), a hit is a page: its best hit, the rest in
        `same_page`, and `top_k` counts pages."""
        request = checked(SearchRequest, query=query, top_k=top_k)
        query, top_k = request.query, request.top_k
        language = detect_language(query)
        # has_sparse loads the collection on first use: here, before the search threads.
        sparse = self.index.has_sparse(self.collection) and self.embedder.has_sparse
        weights = fusion_weights(self.fusion, language, self.embedder.languages, sparse)
        fill = fill_retrievers(self.fusion, language, self.embedder.languages, sparse)
        packs = self.vocabularies()
        scopes = self._scopes(query, filters or SearchFilters(), infer, packs)
        lists, weights = self._lists(query, language, top_k, packs, scopes, weights, fill)
        grouped = self.fusion.group_pages if group_pages is None else group_pages
        found, groups = self._rank(query, lists, weights, fill, grouped, scopes.named)
        hits = self._hits(found, groups, top_k)
        # The reranker orders the hits (a page by its best hit's text).
        reranked, note = self._rerank(query, hits)
        return SearchResult(
            query=query,
            language=language,
            weights=weights,
            hits=hits[:top_k],
            reranked=reranked,
            rerank_note=note,
            documents=scopes.named,
            sections=scopes.sections,
            pages_grouped=grouped,
            page_votes=grouped and self.fusion.page_votes,
        )

    def _scopes(
        self, query: str, filters: SearchFilters, infer: bool, packs: list[Vocabulary]
    ) -> _Scopes:
        """The flat search's filter, and with `infer` those of the documents and the sections
        the question names."""
        named = None
        if infer and self.fusion.document_weight > 0:
            named = infer_from_question(query, self._cards_within(filters.doc_ids))
        asked, titles, titled_docs = {}, [], None
        if infer and self.fusion.section_weight > 0:
            asked = sections_asked(packs, query)
            # A pack that reads the question knows its domain's sections better than titles do.
            if not asked:
                within = self._cards_within(named.doc_ids if named else filters.doc_ids)
                searched = [card for card in within if self._titles_searched(card, named)]
                titles = self._section_titles(searched).named(query) if searched else []
                if len(searched) < len(within):  # some collections chose not to
                    titled_docs = [card.doc_id for card in searched]
        scopes = _Scopes({"": filters}, {"": 1.0}, named, asked, titles)
        if named is not None:
            scopes.filters[DOCUMENTS_SUFFIX] = filters.model_copy(update={"doc_ids": named.doc_ids})
            scopes.weights[DOCUMENTS_SUFFIX] = self.fusion.document_weight
        if asked or titles:
            within = scopes.filters.get(DOCUMENTS_SUFFIX, filters)
            scopes.filters[SECTIONS_SUFFIX] = within.model_copy(
                update={
                    "sections": asked or None,
                    "titles": titles or None,
                    **({"doc_ids": titled_docs} if titles and titled_docs else {}),
                }
            )
            scopes.weights[SECTIONS_SUFFIX] = self.fusion.section_weight
        return scopes

    def _lists(
        self,
        query: str,
        language: str,
        top_k: int,
        packs: list[Vocabulary],
        scopes: _Scopes,
        weights: dict[str, float],
        fill: tuple[str, ...],
    ) -> tuple[dict[str, list[RankedId]], dict[str, float]]:
        """Every retriever's candidates in every scope, the identifiers' ranking among them when
        the question names some, and each list's weight."""
        pool = max(self.fusion.candidates, top_k, self.rerank_top_n if self.reranker else 0)
        wanted = (
            identifiers.in_question(query) if self.fusion.identifier_weight > 0 else frozenset()
        )
        terms = vocabulary_terms(packs, query) if self.fusion.vocabulary_terms else ""
        searched = f"{query}\n{terms}" if terms else query
        lists = self._candidates(
            searched, [*weights, *fill], pool, scopes.filters, bool(wanted), language
        )
        if scopes.sections and not any(lists[n] for n in lists if n.endswith(SECTIONS_SUFFIX)):
            # No chunk of those sections here: nothing to fuse in, or to say.
            scopes.drop_sections()
            lists = {n: hits for n, hits in lists.items() if not n.endswith(SECTIONS_SUFFIX)}
        if wanted:
            weights = {**weights, identifiers.NAME: self.fusion.identifier_weight}
            for suffix in scopes.filters:
                lists[identifiers.NAME + suffix] = identifiers.ranking(wanted, lists, suffix)
        # Each scope's lists weigh as the flat search's, times the scope's weight.
        return lists, {
            f"{name}{suffix}": weight * scope_weight
            for suffix, scope_weight in scopes.weights.items()
            for name, weight in weights.items()
        }

    def _rank(
        self,
        query: str,
        lists: dict[str, list[RankedId]],
        weights: dict[str, float],
        fill: tuple[str, ...],
        grouped: bool,
        named: DocumentInference | None,
    ) -> tuple[dict[str, _Found], list[tuple[str, list[str]]]]:
        """The fused candidates' scores and ranks by id, and the order they are shown in: each
        chunk alone, or with `grouped` each page's lead with the further hits on its page. A
        question naming issuers weighs their documents' hits above the others'."""
        rankings = {name: [h.chunk_id for h in hits] for name, hits in lists.items()}
        # The candidates' fields, from the retrievers' lists (the identifiers' list has none).
        fields = {h.chunk_id: h.fields for hits in lists.values() for h in hits if h.fields}
        issuer_docs = frozenset(named.issuer_doc_ids if named else ())
        fuser = _Fuser(
            weights,
            self.fusion.rrf_k,
            fill,
            scores={name: {h.chunk_id: h.score for h in hits} for name, hits in lists.items()},
            types={chunk_id: f.get("chunk_type") for chunk_id, f in fields.items()},
            type_weights=(
                {} if asks_for_definition(query) else {"glossary": self.fusion.glossary_weight}
            ),
            issuers={
                chunk_id: "named" if f.get("doc_id") in issuer_docs else "outside"
                for chunk_id, f in fields.items()
            },
            issuer_weights={"outside": self.fusion.other_issuers_weight} if issuer_docs else {},
        )
        fused = fuser.fuse(rankings)
        found = {chunk_id: (s, ranks) for chunk_id, s, ranks in fused}
        if not grouped:
            return found, [(chunk_id, []) for chunk_id, _, _ in fused]
        pages = {chunk_id: page_key(f) for chunk_id, f in fields.items()}
        groups = page_groups([chunk_id for chunk_id, _, _ in fused], pages)
        if self.fusion.page_votes:
            groups = self._vote_pages(fuser, rankings, groups, found)
        return found, groups

    def _vote_pages(
        self,
        fuser: _Fuser,
        rankings: dict[str, list[str]],
        groups: list[tuple[str, list[str]]],
        found: dict[str, _Found],
    ) -> list[tuple[str, list[str]]]:
        """The pages ranked by their best hits and the retrievers' votes for pages; a page's lead
        shows the page's score in `found` and keeps its own ranks."""
        voted = [lead for lead, _, _ in fuser.fuse(page_votes(rankings, groups))]
        best_hit = {lead: found[lead][0] for lead, _ in groups}
        ranked = best_hit_and_votes(groups, best_hit, voted, self.fusion.rrf_k)
        found.update({lead: (s, found[lead][1]) for lead, s in ranked})
        further = dict(groups)
        return [(lead, further[lead]) for lead, _ in ranked]

    def _hits(
        self, found: dict[str, _Found], groups: list[tuple[str, list[str]]], top_k: int
    ) -> list[RetrievedHit]:
        """The hits returned or reranked; a chunk deleted since the search is left out."""
        shown = groups[: max(top_k, self.rerank_top_n if self.reranker else 0)]
        # Text and metadata only for these (a page's: all of its hits).
        rows = self.index.rows_for_hits(
            self.collection, [chunk_id for lead, rest in shown for chunk_id in (lead, *rest)]
        )
        return [
            _hit(rows, found, lead, [_hit(rows, found, c, []) for c in rest if c in rows])
            for lead, rest in shown
            if lead in rows
        ]

    def document_cards(self) -> list[DocumentCard]:
        """The profile of every document in the collection, read once per retriever (from
        each document's first chunk)."""
        if self._cards is None:
            rows = self.index.scan(self.collection, ["doc_id", "metadata"], "chunk_index == 0")
            cards = {
                r["doc_id"]: DocumentCard.from_metadata(r["doc_id"], r["metadata"] or {})
                for r in rows
            }
            self._cards = sorted(cards.values(), key=lambda card: card.doc_id)
        return self._cards

    def _cards_within(self, doc_ids: list[str] | None) -> list[DocumentCard]:
        """The cards of `doc_ids` (None: of every document)."""
        allowed = set(doc_ids) if doc_ids is not None else None
        return [c for c in self.document_cards() if allowed is None or c.doc_id in allowed]

    def _titles_searched(self, card: DocumentCard, named: DocumentInference | None) -> bool:
        """Whether a question's titles are searched in this document: as its collection chose,
        or else by the fusion settings (within the documents a question names, or all)."""
        if card.titles_searched is not None:
            return card.titles_searched
        return self.fusion.section_titles or (
            named is not None and self.fusion.named_section_titles
        )

    def _section_titles(self, cards: list[DocumentCard]) -> SectionTitles:
        """The titles of `cards`' sections, built once per retriever for each set of documents
        (every document, those whose collections chose titles, those a question names)."""
        key = tuple(card.doc_id for card in cards)
        if key not in self._titles:
            if len(self._titles) >= TITLE_SETS_KEPT:
                self._titles.clear()
            self._titles[key] = SectionTitles(t for card in cards for t in card.sections)
        return self._titles[key]

    def vocabularies(self) -> list[Vocabulary]:
        """The vocabulary packs the collection's documents were chunked with."""
        return collection_packs(p for card in self.document_cards() for p in card.vocabularies)

    def _candidates(
        self,
        query: str,
        retrievers: list[str],
        pool: int,
        scoped: dict[str, SearchFilters],
        matched_text: bool = False,
        language: str | None = None,
    ) -> dict[str, list[RankedId]]:
        """Each retriever's ranking under each filter (`scoped`: name suffix -> filter): ids,
        scores and, with `matched_text`, the text BM25 analyzes, BM25 through the analyzer of
        the question's `language` (the terms added to it do not change it); the searches are
        sent at once (BM25 while the query is embedded) over the client's thread-safe gRPC channel. A
        Milvus server runs them in parallel; Milvus Lite 3 serves them in one Python process."""
        # chunk_type: a glossary entry weighs less unless the question asks for a meaning.
        # doc_id and page_start: a page's hits are grouped (pages.py).
        text = (identifiers.MATCHED_FIELD,) if matched_text else ()
        fields = {
            s: (*f.checked_fields(), "chunk_type", "doc_id", "page_start", *text)
            for s, f in scoped.items()
        }

        def ranked(retriever: str, data: Any, suffix: str) -> list[RankedId]:
            expr = scoped[suffix].expression()
            found = self.index.ranked_ids(
                self.collection, retriever, data, pool, expr, fields[suffix], language
            )
            return [h for h in found if scoped[suffix].matches(h.fields)]

        futures: dict[str, Future[list[RankedId]]] = {}
        with ThreadPoolExecutor(max_workers=3) as threads:
            queries: dict[str, Any] = {}
            if "bm25" in retrievers:
                queries["bm25"] = query
                for suffix in scoped:
                    futures[f"bm25{suffix}"] = threads.submit(
                        ranked, "bm25", queries["bm25"], suffix
                    )
            if "dense" in retrievers or "sparse" in retrievers:
                batch = self.embedder.encode_queries([query])
                if "dense" in retrievers:
                    queries["dense"] = batch.dense[0]
                if "sparse" in retrievers and batch.sparse:
                    queries["sparse"] = batch.sparse[0]
                for name in ("dense", "sparse"):
                    for suffix in scoped if name in queries else ():
                        futures[f"{name}{suffix}"] = threads.submit(
                            ranked, name, queries[name], suffix
                        )
            return {name: future.result() for name, future in futures.items()}

    def _rerank(self, query: str, hits: list[RetrievedHit]) -> tuple[bool, str]:
        """Reorder the head by the reranker's scores, in place; (reranked, note)."""
        if self.reranker is None or not hits:
            return False, self.rerank_note
        head = hits[: self.rerank_top_n]
        try:
            order = rerank(self.reranker, query, [h.text for h in head])
        except RerankError as error:
            return False, f"rerank failed, fused order kept: {error.reason}"
        reordered = [head[i].model_copy(update={"rerank_score": s}) for i, s in order]
        # The reranker's scale is its own (often logits): spread the head over the fused
        # scores it had, so `score` stays in [0, 1] and descending above the tail.
        for hit, fused_score in zip(
            reordered, sorted((h.score for h in head), reverse=True), strict=True
        ):
            hit.score = fused_score
        hits[: len(head)] = reordered
        return True, self.rerank_note


def _languages(setting: str | None) -> tuple[str, ...] | None:
    if not setting:
        return None
    return tuple(part.strip() for part in setting.split(",") if part.strip())


@contextmanager
def open_retriever(
    settings: Settings, collection_prefix: str | None = None
) -> Iterator[Retriever | None]:
    """A retriever on the configured model's collection; None when nothing is indexed yet."""

    spec = EmbeddingSpec(
        model=settings.embedding_model,
        languages=_languages(settings.embedding_languages),
        runtime=settings.embedding_runtime,  # queries encoded as the chunks were
    )
    embedder, _ = select_embedder(spec)
    prefix = {"collection_prefix": collection_prefix} if collection_prefix else {}
    with MilvusIndex(**settings.milvus, **prefix) as index:
        collection = index.open_collection(embedder.name, embedder.dimension, embedder.has_sparse)
        if collection is None:
            yield None
            return
        reranker, note = load_reranker(settings)
        try:
            yield Retriever(
                index,
                collection,
                embedder,
                fusion=settings.fusion,
                reranker=reranker,
                rerank_top_n=settings.rerank_top_n,
                rerank_note=note,
            )
        finally:
            close = getattr(reranker, "close", None)
            if close is not None:
                close()


def search(
    settings: Settings,
    query: str,
    top_k: int = 5,
    filters: SearchFilters | None = None,
    infer: bool = True,
    group_pages: bool | None = None,
) -> SearchResult:
    """One search on the configured index; no hits when nothing has been indexed yet."""
    checked(SearchRequest, query=query, top_k=top_k)  # refused alike, whatever is indexed
    with open_retriever(settings) as retriever:
        if retriever is not None:
            return retriever.search(query, top_k, filters, infer, group_pages)
    return SearchResult(
        query=query,
        language=detect_language(query),
        weights={},
        hits=[],
        reranked=False,
        rerank_note="nothing indexed yet",
    )


def citation(hit: SearchHit) -> str:
    """`source.pdf, p. 3-4, § /2 Register Map/2.1 Host Control Register/`: where the text came from."""
    pages = ""
    if hit.page_start:
        pages = f", p. {hit.page_start}" + (
            f"-{hit.page_end}" if hit.page_end and hit.page_end != hit.page_start else ""
        )
    headings = hit.metadata.get("headings") or []
    section = " / ".join(headings) if headings else hit.header_path
    return f"{hit.source_path}{pages}, § {section}"


def citation_dict(hit: RetrievedHit) -> dict:
    return {
        "chunk_id": hit.chunk_id,
        "doc_id": hit.doc_id,
        "source_path": hit.source_path,
        "header_path": hit.header_path,
        "page_start": hit.page_start,
        "page_end": hit.page_end,
        "score": hit.score,
        "found_by": hit.found_by,
        "rerank_score": hit.rerank_score,
        "text": hit.text,
        "citation": citation(hit),
        "same_page": [citation_dict(other) for other in hit.same_page],
    }
