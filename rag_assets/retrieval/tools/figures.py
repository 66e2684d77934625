"""`figures`: figure placeholders (caption, anchor text, exported image, page)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from rag_assets.retrieval.inputs import QueryText, TopK, tool_arguments
from rag_assets.retrieval.search import SearchFilters
from rag_assets.retrieval.tools.tool import Found, Tool
from rag_assets.retrieval.tools.toolbox import Source, Toolbox


class FiguresArgs(BaseModel):
    description: QueryText = Field(description="what the figure shows")


class FiguresOptions(FiguresArgs):
    top_k: TopK = Field(5, description="how many figures")


class FigureResult(BaseModel):
    figure_id: str | None
    caption: str | None
    anchor_text: str | None
    image_path: str | None  # the PNG cropped from the document, when it is a PDF
    page: int | None
    score: float
    source: Source


@tool_arguments
def figures(box: Toolbox, description: QueryText, top_k: TopK = 5) -> list[FigureResult]:
    filters = SearchFilters(chunk_types=["figure"])
    return [
        FigureResult(
            figure_id=hit.metadata.get("figure_id"),
            caption=hit.metadata.get("caption"),
            anchor_text=hit.metadata.get("anchor_text"),
            image_path=box.figure_image(hit),
            page=hit.page_start,
            score=hit.score,
            source=Source.from_hit(hit),
        )
        for hit in box.hits(description, top_k, filters)
    ]


TOOL = Tool(
    name="figures",
    description="Find figures by what they show.",
    summary="figures by description: caption, anchor text, image, page",
    arguments=FiguresArgs,
    options=FiguresOptions,
    function=figures,
    show=lambda f: (
        f"{f.caption or f.figure_id} ({f.source.citation})\n    "
        f"image: {f.image_path or '-'}\n    cited by: {f.anchor_text or '-'}"
    ),
    found=lambda f: [Found(text=f.source.text, kind="figure", source=f.source)],
)
