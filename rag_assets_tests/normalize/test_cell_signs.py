"""A currency sign a table finder cut off from its value goes back to the value."""

from __future__ import annotations

from pathlib import Path

from rag_assets.normalize.cell_signs import signs_rejoined
from rag_assets.normalize.pymupdf_adapter import pymupdf_to_ir
from rag_assets.parsers.pymupdf import PyMuPDFParser


def test_a_trailing_sign_moves_to_the_value_it_opens() -> None:
    assert signs_rejoined(["Q4 GAAP", "$ 7,990", "22.4 % $", "1,672", "$", "(13)", "68.6 % €", "—"]) == [
        "Q4 GAAP", "$ 7,990", "22.4 %", "$ 1,672", "", "$ (13)", "68.6 %", "€ —",
    ]  # fmt: skip


def test_a_sign_stays_where_no_value_follows_or_the_value_has_its_own() -> None:
    row = ["Cost in $", "Notes", "12 $", "$ 4", "Total $", ""]
    assert signs_rejoined(row) == row


def test_a_filings_non_gaap_table_keeps_each_amount_whole(
    shared_filings: Path, tmp_path: Path
) -> None:
    """3M's 2018 10-K, page 20: the finder's column boundaries fall between `$` and digits."""
    import pymupdf

    page = tmp_path / "non-gaap.pdf"
    with pymupdf.open(shared_filings / "3M_2018_10K.pdf") as source:
        source.select([19])
        source.save(page)
    doc = pymupdf_to_ir(PyMuPDFParser().parse(page), doc_id="3m", source_sha256="0" * 64)
    rows = [row for e in doc.elements if e.table is not None for row in e.table.grid()]
    q4 = next(row for row in rows if row[0] == "Q4 2017 GAAP")
    assert q4[:9] == [
        "Q4 2017 GAAP", "$ 7,990", "$ 1,789", "22.4 %", "$ 1,672", "$ 1,147", "68.6 %", "$ 523",
        "$ 0.85",
    ]  # fmt: skip
    assert not any(cell.endswith(" $") for row in rows for cell in row)
