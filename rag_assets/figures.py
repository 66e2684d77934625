"""Figure images, cropped from the stored PDF the first time someone asks for the figure.

Templates never open the source file: a figure chunk carries `figure_ref` (page, bbox). Ingest
renders nothing (most figures are never looked at); the `figures` tool crops on demand and
keeps the PNG beside the data folder's other outputs until the document's copy changes.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from rag_assets.sources.keys import is_valid_partition_key
from rag_assets.sources.paths import inside
from rag_assets.tables.render import render_region

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def stored_pdf(raw_dir: Path, doc_id: str) -> Path | None:
    """The document's fixed copy under `raw_dir/<doc_id>/`, when it is a PDF.

    A key this project did not mint never names a folder (see sources.keys)."""
    if not is_valid_partition_key(doc_id):
        return None
    folder = inside(raw_dir, doc_id)
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        with path.open("rb") as handle:
            if handle.read(5) == b"%PDF-":
                return path
    return None


def figure_image(
    raw_dir: Path, figures_dir: Path, doc_id: str, metadata: dict, chunk_index: int
) -> Path | None:
    """The PNG of one figure chunk, cropped now unless an image newer than the PDF copy exists.

    None when the chunk has no page and box or the document is not a PDF.
    """
    ref = metadata.get("figure_ref") or {}
    if not ref.get("page") or not ref.get("bbox"):
        return None
    pdf = stored_pdf(raw_dir, doc_id)
    if pdf is None:
        return None
    # Keyed by where the figure is: two figures may share a label ("Figure 1" of two chapters).
    x0, y0, x1, y1 = (round(float(v)) for v in ref["bbox"])
    label = _UNSAFE.sub("-", str(metadata.get("figure_id") or chunk_index))
    name = f"{label}-p{int(ref['page'])}-{x0}-{y0}-{x1}-{y1}.png"
    out_dir = inside(figures_dir, doc_id)
    target = inside(out_dir, name)
    if target.exists() and target.stat().st_mtime >= pdf.stat().st_mtime:
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    png = render_region(pdf, ref["page"], tuple(ref["bbox"]), margin_pt=4)
    # Two readers asking at once each write their own file; the rename makes one win whole.
    handle, temp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".tmp")
    with os.fdopen(handle, "wb") as out:
        out.write(png)
    os.replace(temp, target)
    return target
