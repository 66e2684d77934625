"""Figure images exported beside their placeholder chunks, so an answer can show the figure.

Templates never open the source file: a figure chunk carries `figure_ref` (page,
bbox); this step crops that region from the PDF and records where the PNG is.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.tables.render import render_region

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def export_figures(chunks: list[ChunkRow], pdf_path: Path, out_dir: Path) -> list[ChunkRow]:
    """Write one PNG per figure chunk with a page and box; its path goes to `metadata.image_path`.

    The folder is replaced as a whole, so a re-run leaves no image of a figure that is gone.
    """
    for old in out_dir.glob("*.png") if out_dir.is_dir() else []:
        old.unlink()
    exported = []
    for chunk in chunks:
        ref = chunk.metadata.get("figure_ref") or {}
        if chunk.chunk_type != "figure" or not ref.get("page") or not ref.get("bbox"):
            exported.append(chunk)
            continue
        name = _UNSAFE.sub("-", str(chunk.metadata.get("figure_id") or chunk.chunk_index)) + ".png"
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / name).write_bytes(
            render_region(pdf_path, ref["page"], tuple(ref["bbox"]), margin_pt=4)
        )
        exported.append(
            chunk.model_copy(
                update={"metadata": {**chunk.metadata, "image_path": str(out_dir / name)}}
            )
        )
    return exported
