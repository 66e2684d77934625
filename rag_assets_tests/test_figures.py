"""Figure placeholders get their image cropped from the PDF, and re-runs leave no stale image."""

from pathlib import Path

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.figures import export_figures
from rag_assets_tests.conftest import REPO_ROOT

SPEC = REPO_ROOT / "examples" / "corpus" / "host-controller-spec.pdf"


def _chunk(index: int, chunk_type: str, metadata: dict) -> ChunkRow:
    return ChunkRow(
        chunk_id=f"c{index}",
        doc_id="d",
        source_path="spec.pdf",
        source_sha256="x",
        template="spec",
        chunk_index=index,
        text="[Figure 1-1: Block Diagram]",
        chunk_type=chunk_type,
        metadata=metadata,
    )


def test_each_figure_is_exported_and_named_in_its_chunk(tmp_path):
    figure = _chunk(
        0,
        "figure",
        {"figure_id": "Figure 1-1", "figure_ref": {"page": 1, "bbox": [72, 100, 300, 250]}},
    )
    no_box = _chunk(
        1, "figure", {"figure_id": "Figure 1-2", "figure_ref": {"page": 1, "bbox": None}}
    )
    text = _chunk(2, "text", {})
    out = tmp_path / "figures" / "d"
    (out / "old-figure.png").parent.mkdir(parents=True)
    (out / "old-figure.png").write_bytes(b"stale")
    exported = export_figures([figure, no_box, text], SPEC, out)
    assert [c.chunk_id for c in exported] == ["c0", "c1", "c2"]
    image = exported[0].metadata["image_path"]
    assert image.endswith("Figure-1-1.png") and Path(image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "image_path" not in exported[1].metadata and "image_path" not in exported[2].metadata
    assert sorted(p.name for p in out.iterdir()) == ["Figure-1-1.png"]
