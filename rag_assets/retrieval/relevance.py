"""Is the best evidence good enough to answer from? A score in [0, 1] and unknown names.

Fused RRF scores are relative (the top hit always reads near 1), so they cannot say "nothing
here is relevant". The evidence score of a chunk is the mean of two absolute signals:
- the dense cosine between the question and the chunk (from the index, the model's own scale);
- the share of the question's terms, weighted by IDF over the stored chunks, that the chunk
  contains (CJK text as character bigrams), so a question whose rare words appear nowhere
  in the evidence scores low.
A question naming something (a capitalized word or acronym past its first word) that no
stored chunk contains is about something the documents do not mention, whatever its score.

`NOT_FOUND_THRESHOLD` is calibrated by `bench/answers.py --calibrate` on the evaluation set
in examples/eval/sample (answerable) and bench/unanswerable.jsonl (not answerable); see
docs/answers.md for the figures.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.index.filters import quote
from rag_assets.retrieval.search import Retriever
from rag_assets.text.terms import terms

NOT_FOUND_THRESHOLD = 0.375  # bench/answers.py --calibrate: the best balanced accuracy

_NAME = re.compile(r"(?<![\w-])(?:[A-Z][\w-]*|[a-z]+[A-Z0-9][\w-]*|\d+[A-Za-z][\w-]*)")


class Vocabulary:
    """Document frequencies of terms over the stored chunks."""

    def __init__(self, chunks: Iterable[ChunkRow]) -> None:
        self.frequency: Counter[str] = Counter()
        self.size = 0
        for chunk in chunks:
            self.size += 1
            self.frequency.update(terms(chunk.context_text or chunk.text))

    def idf(self, term: str) -> float:
        return math.log((self.size + 1) / (self.frequency.get(term, 0) + 0.5))

    def coverage(self, question_terms: set[str], text: str) -> float:
        """IDF-weighted share of the question's terms that `text` holds."""
        total = sum(self.idf(t) for t in question_terms)
        if not total:
            return 0.0
        present = terms(text)
        return sum(self.idf(t) for t in question_terms if t in present) / total

    def unknown_names(self, question: str) -> list[str]:
        """Names in the question (not its first word) that no stored chunk contains."""
        words = question.split()
        rest = " ".join(words[1:])
        names = []
        for name in _NAME.findall(rest):
            parts = terms(name)
            if parts and not any(self.frequency.get(p) for p in parts):
                names.append(name.strip(".,;:?!"))
        return names


class Evidence(BaseModel):
    score: float  # the best chunk's mean of cosine and coverage, in [0, 1]
    chunk_id: str | None  # that chunk
    cosine: float
    coverage: float
    unknown_names: list[str]

    def sufficient(self, threshold: float) -> bool:
        return not self.unknown_names and self.score >= threshold


def assess(
    retriever: Retriever, vocabulary: Vocabulary, question: str, candidates: dict[str, str]
) -> Evidence:
    """The best evidence among `candidates` (chunk id -> text) for `question`."""
    unknown = vocabulary.unknown_names(question)
    if not candidates:
        return Evidence(score=0.0, chunk_id=None, cosine=0.0, coverage=0.0, unknown_names=unknown)
    vector = retriever.embedder.encode_queries([question]).dense[0]
    ids = ", ".join(quote(i) for i in candidates)
    cosines = {
        hit.chunk_id: max(hit.score, 0.0)
        for hit in retriever.index.dense_search(
            retriever.collection, vector, len(candidates), expr=f"chunk_id in [{ids}]"
        )
    }
    wanted = terms(question)
    best = max(
        (
            (cosines.get(chunk_id, 0.0), vocabulary.coverage(wanted, text), chunk_id)
            for chunk_id, text in candidates.items()
        ),
        key=lambda scored: scored[0] + scored[1],
    )
    return Evidence(
        score=round((best[0] + best[1]) / 2, 4),
        chunk_id=best[2],
        cosine=round(best[0], 4),
        coverage=round(best[1], 4),
        unknown_names=unknown,
    )
