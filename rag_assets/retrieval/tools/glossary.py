"""`glossary`: a term's definition from glossary chunks (exact, then fuzzy), else from passages
that say "X means / is defined as ..."."""

from __future__ import annotations

import difflib
import re
from typing import Literal

from pydantic import BaseModel, Field

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.retrieval.inputs import Term, TopK, tool_arguments
from rag_assets.retrieval.tools.tool import Found, Tool
from rag_assets.retrieval.tools.toolbox import Source, Toolbox, fold

FUZZY_CUTOFF = 0.8  # difflib ratio: "Block-Gap", "block gaps" match "Block Gap"; "Clock" does not
_DEFINES = r"(?:means|is defined as|are defined as|refers to|stands for|denotes)"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


class GlossaryArgs(BaseModel):
    term: Term = Field(description="the term to define, as the question writes it")


class GlossaryEntry(BaseModel):
    term: str
    definition: str
    match: Literal["exact", "fuzzy", "defined_in_text"]
    source: Source


@tool_arguments
def glossary(box: Toolbox, term: Term, limit: TopK = 5) -> list[GlossaryEntry]:
    """Exact term (or a trailing part of the query: "the access type RW1C" finds RW1C), then
    fuzzy, then passages defining it; the first stage with results wins."""
    entries = [c for c in box.chunks() if c.chunk_type == "glossary" and c.metadata.get("term")]
    asked = fold(term)
    exact = [c for c in entries if _ends_with_words(asked, fold(c.metadata["term"]))]
    if exact:
        # The longest matching term first: "Card Detect" before "Detect".
        exact.sort(key=lambda c: -len(c.metadata["term"]))
        return [_entry(c, "exact") for c in exact[:limit]]
    folded = {fold(c.metadata["term"]): c for c in entries}
    close = difflib.get_close_matches(fold(term), list(folded), n=limit, cutoff=FUZZY_CUTOFF)
    if close:
        return [_entry(folded[name], "fuzzy") for name in close]
    return _defined_in_text(box, term, limit)


def _ends_with_words(text: str, words: str) -> bool:
    """`the access type rw1c` ends with the words `rw1c` (not with `w1c`)."""
    return bool(words) and (text == words or text.endswith(" " + words))


def _entry(chunk: ChunkRow, match: Literal["exact", "fuzzy"]) -> GlossaryEntry:
    term = chunk.metadata["term"]
    definition = chunk.text.removeprefix(f"{term}:").strip()
    return GlossaryEntry(
        term=term, definition=definition, match=match, source=Source.from_chunk(chunk)
    )


def _defined_in_text(box: Toolbox, term: str, limit: int) -> list[GlossaryEntry]:
    pattern = re.compile(
        rf"(?<!\w){re.escape(term.strip())}(?!\w)[^.]{{0,40}}?\b{_DEFINES}\b", re.IGNORECASE
    )
    found = []
    for hit in box.hits(f"{term} means", 20):
        for sentence in _SENTENCE_END.split(" ".join(hit.text.split())):
            if pattern.search(sentence):
                found.append(
                    GlossaryEntry(
                        term=term,
                        definition=sentence,
                        match="defined_in_text",
                        source=Source.from_hit(hit),
                    )
                )
                break
    return found[:limit]


TOOL = Tool(
    name="glossary",
    description="Look up a term's definition in the documents' glossaries.",
    summary="a term's definition: glossary entries, then passages defining it",
    arguments=GlossaryArgs,
    function=glossary,
    show=lambda e: f"{e.term} ({e.match}; {e.source.citation})\n    {e.definition}",
    found=lambda e: [
        Found(text=f"{e.term}: {e.definition}", kind=f"glossary ({e.match})", source=e.source)
    ],
)
