"""Figure images are cropped from the stored PDF when asked for, and a changed copy is cropped again."""

import os
import shutil

from rag_assets.figures import figure_image
from rag_assets.sources.keys import partition_key_for
from rag_assets_tests.conftest import REPO_ROOT

SPEC = REPO_ROOT / "examples" / "corpus" / "host-controller-spec.pdf"
PNG = b"\x89PNG\r\n\x1a\n"


def test_a_figure_is_cropped_on_first_request_and_again_after_the_copy_changes(tmp_path):
    doc_id = partition_key_for("spec.pdf")
    raw_dir, figures_dir = tmp_path / "raw", tmp_path / "figures"
    (raw_dir / doc_id).mkdir(parents=True)
    copy = shutil.copyfile(SPEC, raw_dir / doc_id / "spec.pdf")
    metadata = {"figure_id": "Figure 1-1", "figure_ref": {"page": 1, "bbox": [72, 100, 300, 250]}}

    first = figure_image(raw_dir, figures_dir, doc_id, metadata, 7)
    assert first == (figures_dir / doc_id / "Figure-1-1-p1-72-100-300-250.png").resolve()
    assert first.read_bytes()[:8] == PNG
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temp file left

    first.write_bytes(b"kept")  # a second request reuses the image: nothing is rendered
    assert figure_image(raw_dir, figures_dir, doc_id, metadata, 7).read_bytes() == b"kept"

    newer = first.stat().st_mtime + 10
    os.utime(copy, (newer, newer))  # the document's copy was replaced after the crop
    assert figure_image(raw_dir, figures_dir, doc_id, metadata, 7).read_bytes()[:8] == PNG


def test_no_image_without_a_box_a_pdf_or_a_minted_key(tmp_path):
    doc_id = partition_key_for("notes.md")
    (tmp_path / "raw" / doc_id).mkdir(parents=True)
    (tmp_path / "raw" / doc_id / "notes.md").write_text("# Notes\n")
    boxed = {"figure_ref": {"page": 1, "bbox": [0, 0, 10, 10]}}
    no_box = {"figure_ref": {"page": 1, "bbox": None}}
    raw, figures = tmp_path / "raw", tmp_path / "figures"
    assert figure_image(raw, figures, doc_id, boxed, 0) is None  # not a PDF
    assert figure_image(raw, figures, partition_key_for("gone.pdf"), boxed, 0) is None
    assert figure_image(raw, figures, "../../etc", boxed, 0) is None
    assert figure_image(raw, figures, doc_id, no_box, 0) is None
    assert not figures.exists()


def test_two_figures_with_one_label_get_their_own_images(tmp_path):
    doc_id = partition_key_for("spec.pdf")
    raw_dir, figures_dir = tmp_path / "raw", tmp_path / "figures"
    (raw_dir / doc_id).mkdir(parents=True)
    shutil.copyfile(SPEC, raw_dir / doc_id / "spec.pdf")
    first = {"figure_id": "Figure 1", "figure_ref": {"page": 1, "bbox": [72, 100, 300, 250]}}
    second = {"figure_id": "Figure 1", "figure_ref": {"page": 2, "bbox": [72, 400, 300, 550]}}
    one = figure_image(raw_dir, figures_dir, doc_id, first, 3)
    two = figure_image(raw_dir, figures_dir, doc_id, second, 9)
    assert one != two and one.read_bytes() != two.read_bytes()
