"""What a collection's vocabulary packs read in a question.

A question about a filing names a metric (`quick ratio`, `capital intensive`) where the page
that answers is the statement the metric is read from, titled in the filing's own words. The
packs a collection's documents were chunked with (`doc_vocabularies`, rag_assets/vocabulary)
read its questions: every retriever searches the question with the names and line items of
the sections its measures are read from, as a chunk of such a section carries those names in
its context; and the sections a question names or reads from are searched alone too, by the
chunks' section metadata, fused with the flat search (`Retriever.search`). A collection
chunked with no pack is searched as the question says.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from rag_assets.errors import ConfigurationError
from rag_assets.vocabulary import Vocabulary, load_pack

log = logging.getLogger(__name__)


def collection_packs(references: Iterable[str]) -> list[Vocabulary]:
    """The packs the documents name, each once; one that no longer loads (a moved file) is
    left out with a warning, and its documents are searched as if chunked without it."""
    packs = []
    for reference in dict.fromkeys(references):
        try:
            packs.append(load_pack(reference))
        except ConfigurationError as error:
            log.warning("vocabulary pack left out of the search: %s", error)
    return packs


def sections_asked(packs: Sequence[Vocabulary], question: str) -> dict[str, list[str]]:
    """Each pack's metadata key -> the kinds of section the question names or reads from."""
    asked: dict[str, list[str]] = {}
    for pack in packs:
        if kinds := pack.sections_asked(question):
            asked.setdefault(pack.metadata_key, []).extend(
                k for k in kinds if k not in asked.get(pack.metadata_key, [])
            )
    return asked


def vocabulary_terms(packs: Sequence[Vocabulary], question: str) -> str:
    """What the packs add to the question's search (empty when it names no measure)."""
    return " ".join(terms for pack in packs if (terms := pack.terms_for(question)))
