"""`degraded` means content was lost: a page read from its text layer, pictures unread, is not."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings


def _picture(width: int = 600, height: int = 800) -> bytes:
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pixmap.set_rect(pixmap.irect, (40, 90, 160))
    return pixmap.tobytes("png")


def _pdf(path: Path, pages: list[tuple[str, bool]]) -> Path:
    """One page per (text, with a picture)."""
    with pymupdf.open() as pdf:
        for text, picture in pages:
            page = pdf.new_page()
            if text:
                page.insert_textbox(pymupdf.Rect(72, 72, 520, 300), text, fontsize=11)
            if picture:
                page.insert_image(pymupdf.Rect(36, 36, 576, 756), stream=_picture())
        pdf.save(path)
    return path


TEXT = (
    "The pump controller reads the pressure sensor every second and opens the relief valve "
    "when the pressure stays above the limit for three readings in a row."
)


def test_pages_are_told_apart_by_what_was_lost(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "mixed.pdf", [(TEXT, True), ("", True), ("", False)])
    unread = PyMuPDFParser(ocr=False).parse(path)
    assert unread.losses == ["pages [2] are pictures whose text, if any, was not read (OCR off)"]
    assert "pages [3] have no text" in unread.notes
    # With OCR on, its model looked at the picture and found nothing to read there.
    looked = PyMuPDFParser(ocr=True).parse(path)
    assert looked.losses == [] and "pages [2, 3] have no text" in looked.notes


@pytest.mark.slow
def test_text_pages_with_pictures_and_a_blank_page_land_ok_not_degraded(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    _pdf(inbox / "pump.pdf", [(TEXT, True), ("", False), (TEXT.replace("pump", "fan"), True)])
    [outcome] = ingest(Settings(data_dir=tmp_path / "data"), [inbox / "pump.pdf"])
    assert outcome.success and outcome.chunks > 0
    assert not outcome.degraded and "degraded" not in outcome.summary()
    assert outcome.notes == []
