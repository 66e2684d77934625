"""Fusion weights and candidates per retriever (retrieval/fusion.py says how they combine)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from rag_assets.settings.base import ENV_PREFIX, EnvSettings


class FusionSettings(EnvSettings):
    """How the retrievers' rankings are fused: weighted reciprocal rank fusion, with weights by
    the query's language."""

    model_config = SettingsConfigDict(env_prefix=f"{ENV_PREFIX}FUSION_", frozen=True)

    rrf_k: int = Field(
        60, ge=1, description="reciprocal rank fusion's k: a hit scores 1/(k + rank)"
    )
    candidates: int = Field(20, ge=20, description="hits per retriever, before fusion")
    dense_weight: float = Field(1.0, ge=0, description="the dense (embedding) retriever's weight")
    bm25_weight: float = Field(1.0, ge=0, description="BM25's weight")
    sparse_weight: float = Field(1.0, ge=0, description="BGE-M3's learned sparse vectors' weight")
    # On held-out Chinese questions against the English MiniLM, top-1 was .20 at equal weights,
    # .40 at 0.1 and .60 at 0 (BM25 alone).
    foreign_model_weight: float = Field(
        0.0,
        ge=0,
        description=(
            "replaces the dense and sparse weights when the query's language is not one the "
            "model covers"
        ),
    )
    foreign_model_fill: bool = Field(
        True,
        description=(
            "with a foreign-model weight of 0, the model's retrievers still run and add, after "
            "BM25's hits, the ones BM25 did not find"
        ),
    )
    glossary_weight: float = Field(
        0.95,
        ge=0,
        le=1,
        description=(
            "multiplies a glossary entry's fused score unless the question asks what a term "
            "means: a near-tie then goes to the passage that answers, not to the definition"
        ),
    )
    identifier_weight: float = Field(
        1.0,
        ge=0,
        description=(
            "weight of the ranking, for a question naming an identifier (a word with a digit: "
            "15:8, 0x04, DDR52), of the candidates holding it as a whole word, in BM25's order; "
            "0 turns it off"
        ),
    )
    document_weight: float = Field(
        1.0,
        ge=0,
        description=(
            "weight of the search within the documents a question names (by issuer, period or "
            "kind, matched against the documents' profiles), relative to the flat search's; "
            "0 turns that inference off"
        ),
    )
    # On FinanceBench's half-a, R@10 .588 at 1, .647 at 0.75 to 0; half-b (held apart): .857 at
    # each; a hit of another issuer still shows when it beats twice the named issuer's.
    other_issuers_weight: float = Field(
        0.5,
        ge=0,
        le=1,
        description=(
            "multiplies the fused score of a hit from another issuer's document when the "
            "question names an issuer the collection's profiles know (`American Express`, "
            "`AmEx`): a question about one company ranks that company's pages first, and "
            "one naming two keeps both; 1 turns it off"
        ),
    )
    section_weight: float = Field(
        1.0,
        ge=0,
        description=(
            "weight of the search within the chunks of the sections a question names or reads "
            "its measure from, as the collection's vocabulary packs know them (finance: the "
            "balance sheet for a quick ratio), relative to the flat search's; 0 turns it off"
        ),
    )
    section_titles: bool = Field(
        False,
        description=(
            "a question holding the telling words of a title the collection's documents give "
            "a section or a table (`cash flow statement` for `Consolidated Statements of Cash "
            "Flows`; telling as learned from the collection's own titles) also searches that "
            "section's chunks alone, at section_weight; off by default: it helps filings "
            "without a vocabulary pack and costs a spec's questions whose answer lies outside "
            "the section they name (bench/README)"
        ),
    )
    named_section_titles: bool = Field(
        True,
        description=(
            "with section_titles off, a question naming documents (by issuer, period or kind) "
            "still searches the sections of those documents whose titles it names: there the "
            "title names a part of the document asked about, not a look-alike elsewhere"
        ),
    )
    vocabulary_terms: bool = Field(
        True,
        description=(
            "BM25 and the embedding model also search, for a question naming a measure the "
            "collection's vocabulary packs know (finance: quick ratio, capital expenditures, "
            "...), the names and line items of the sections it is read from"
        ),
    )
    group_pages: bool = Field(
        True,
        description=(
            "a page's hits are one result, ranked by its best, its further hits among the "
            "candidates beside it (same_page): top_k counts pages; off, every chunk is a result "
            "of its own (the retrieval tools always ask for chunks)"
        ),
    )
    page_votes: bool = Field(
        True,
        description=(
            "with a page's hits grouped, each retriever also votes for pages (a page ranks "
            "where its best hit ranks in that retriever's list), the votes are fused, and the "
            "pages are ranked by that vote and by their best hit at equal weight, so a page "
            "whose table BM25 finds and whose prose the model finds gains; off, by best hit "
            "alone (bench/README)"
        ),
    )
