"""`text`: general passages with their header paths."""

from __future__ import annotations

from pydantic import BaseModel, Field

from rag_assets.retrieval.inputs import QueryText, TopK, tool_arguments
from rag_assets.retrieval.tools.tool import Found, Tool
from rag_assets.retrieval.tools.toolbox import Source, Toolbox


class TextArgs(BaseModel):
    query: QueryText = Field(description="what to search the documents' passages for")


class TextOptions(TextArgs):
    top_k: TopK = Field(5, description="how many passages")


class Passage(BaseModel):
    text: str
    header_path: str
    score: float
    found_by: dict[str, int]
    source: Source


@tool_arguments
def text(box: Toolbox, query: QueryText, top_k: TopK = 5) -> list[Passage]:
    return [
        Passage(
            text=hit.text,
            header_path=hit.header_path,
            score=hit.score,
            found_by=hit.found_by,
            source=Source.from_hit(hit),
        )
        for hit in box.hits(query, top_k)
    ]


TOOL = Tool(
    name="text",
    description="Search the documents' passages.",
    summary="passages with their header paths",
    arguments=TextArgs,
    options=TextOptions,
    function=text,
    show=lambda p: (
        f"{p.header_path}  ({p.source.citation}, score {p.score:.3f})\n    "
        + " ".join(p.text.split())[:300]
    ),
    found=lambda p: [Found(text=p.text, kind="passage", source=p.source)],
)
