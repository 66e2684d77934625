"""One row per table of a document: the markdown chosen for it and how it was made."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

TableMethod = Literal["vision", "structure"]


class TableMarkdown(BaseModel):
    doc_id: str
    element_index: int  # position of the table (or pictured table) element in the IR
    page_start: int
    page_end: int
    caption: str | None = None
    num_rows: int = 0
    num_cols: int = 0
    markdown: str
    method: TableMethod
    model: str | None = None  # the vision model tried for it (method vision, or a fallback after)
    cache_key: str  # what the result is keyed by (structure: the structure's hash)
    fallback_reason: str | None = None  # why the vision path was not used, in words
    latency_s: float | None = None  # of the vision call that produced the answer judged here
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit: bool = False  # the vision answer came from the cache: no call this run
    continues: bool | None = None  # the vision model saw the table go on beyond its image
