"""The two contracts every layer speaks: the document IR and the chunk row."""

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.contracts.ir import (
    DocumentElement,
    ElementType,
    StandardizedDocument,
    TableCell,
    TableData,
)

__all__ = [
    "ChunkRow",
    "DocumentElement",
    "ElementType",
    "StandardizedDocument",
    "TableCell",
    "TableData",
    "chunk_id_for",
]
