"""An ingest keeps the parse workers two batches ahead of its runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest

from rag_assets.defs.build import build_defs
from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers import page_pool
from rag_assets.parsers.page_pool import MIN_SPLIT_PAGES
from rag_assets.parsers.pymupdf import PyMuPDFParser
from rag_assets.runner.ingest import ParseAhead, ingest
from rag_assets.settings import Settings
from rag_assets.sources.inbox import sha256_file
from rag_assets.storage import read_documents

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _stop_workers() -> Iterator[None]:
    yield
    page_pool.drop_read_ahead()
    page_pool.shutdown()


def _manual(path: Path, name: str, pages: int = MIN_SPLIT_PAGES + 2) -> Path:
    """One numbered section a page; by default long enough to be parsed in page ranges."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with pymupdf.open() as doc:
        for number in range(1, pages + 1):
            page = doc.new_page()
            page.insert_text((72, 72), f"{number} {name} section {number}", fontsize=16)
            body = f"The {name} unit reports status {number} after each transfer. " * 8
            page.insert_textbox(pymupdf.Rect(72, 100, 520, 700), body, fontsize=11)
        doc.save(path)
    return path


def _key_file(keys: list, files: list[Path]) -> list[str]:
    """Which file each read-ahead key is for, by the bytes' hash in the key."""
    by_hash = {sha256_file(f): f.name for f in files}
    return [by_hash[key[1]] for key in keys]


def _parse_metadata(settings: Settings) -> list[dict]:
    """What each parsed_documents materialization recorded of the parse workers, in order."""
    from dagster import AssetKey

    from rag_assets.instance import open_instance

    with open_instance(settings) as instance:
        records = instance.fetch_materializations(
            AssetKey("parsed_documents"), limit=100, ascending=True
        ).records
    return [
        {k: v.value for k, v in r.asset_materialization.metadata.items() if k.startswith("parse_")}
        for r in records
    ]


def test_each_run_has_its_document_and_the_next_two_submitted_in_run_order(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", parse_workers=2)
    inbox = settings.inbox_dir
    pdfs = [_manual(inbox / f"{name}.pdf", name) for name in ("pump", "valve", "fan", "belt")]
    (inbox / "notes.md").write_text("# Notes\n\nShort.\n")
    order = ["pump.pdf", "notes.md", "valve.pdf", "fan.pdf", "belt.pdf"]
    to_parse = [[name] for name in order if name.endswith(".pdf")]

    with ParseAhead(build_defs(settings).resources, inbox, to_parse) as ahead:
        ahead.before([order[0]])
        assert _key_file(page_pool.pending_read_ahead(), pdfs) == [
            "pump.pdf",
            "valve.pdf",
            "fan.pdf",
        ]
        ahead.before([order[1]])  # a Markdown file is parsed in its own run, nothing to start
        assert len(page_pool.pending_read_ahead()) == 3
        ahead.before([order[2]])
        assert _key_file(page_pool.pending_read_ahead(), pdfs) == [
            "pump.pdf",
            "valve.pdf",
            "fan.pdf",
            "belt.pdf",
        ]
        ahead.before([order[4]])  # nothing after the last
        assert len(page_pool.pending_read_ahead()) == 4
    # What no run took (here: all, as no run parsed) is dropped when the ingest ends.
    assert page_pool.pending_read_ahead() == []


def test_a_short_pdf_is_read_ahead_unless_its_run_is_the_one_starting(tmp_path: Path) -> None:
    """The run starting now parses a short PDF in process with every core; a later one is
    parsed by a worker beside the runs before it."""
    settings = Settings(data_dir=tmp_path / "data", parse_workers=2)
    inbox = settings.inbox_dir
    pdfs = [_manual(inbox / f"{name}.pdf", name, pages=3) for name in ("pump", "valve", "fan")]
    pdfs.append(_manual(inbox / "belt.pdf", "belt"))
    with ParseAhead(build_defs(settings).resources, inbox, [[p.name] for p in pdfs]) as ahead:
        ahead.before(["pump.pdf"])
        assert _key_file(page_pool.pending_read_ahead(), pdfs) == ["valve.pdf", "fan.pdf"]
        ahead.before(["valve.pdf"])
        assert _key_file(page_pool.pending_read_ahead(), pdfs) == [
            "valve.pdf",
            "fan.pdf",
            "belt.pdf",
        ]


def test_a_batch_has_its_documents_and_the_next_two_batches_submitted(tmp_path: Path) -> None:
    """A batch's run parses its documents one after another: the workers parse them, short or
    long, and the next two batches', while the run takes each result in turn."""
    settings = Settings(data_dir=tmp_path / "data", parse_workers=2)
    inbox = settings.inbox_dir
    names = ("pump", "valve", "fan", "belt", "seal", "gear", "hose")
    pdfs = [_manual(inbox / f"{name}.pdf", name, pages=2) for name in names]
    batches = [[f"{n}.pdf" for n in names[i : i + 2]] for i in range(0, len(names), 2)]
    with ParseAhead(build_defs(settings).resources, inbox, batches) as ahead:
        ahead.before(["pump.pdf", "valve.pdf"])
        assert _key_file(page_pool.pending_read_ahead(), pdfs) == [f"{n}.pdf" for n in names[:6]]
        # A batch split after a failure: its documents' own batch counts, not their number.
        ahead.before(["fan.pdf"])
        assert _key_file(page_pool.pending_read_ahead(), pdfs) == [f"{n}.pdf" for n in names]


def test_nothing_is_read_ahead_for_a_document_over_a_limit(tmp_path: Path) -> None:
    """Its run fails before parsing: the workers must not parse it for minutes meanwhile."""
    from rag_assets.settings.limits import DocumentLimits

    limits = DocumentLimits(max_pages=MIN_SPLIT_PAGES)
    settings = Settings(data_dir=tmp_path / "data", parse_workers=2, limits=limits)
    inbox = settings.inbox_dir
    pdfs = [_manual(inbox / f"{name}.pdf", name) for name in ("pump", "valve")]
    with ParseAhead(build_defs(settings).resources, inbox, [["pump.pdf"], ["valve.pdf"]]) as ahead:
        ahead.before(["pump.pdf"])
        assert page_pool.pending_read_ahead() == []
    settings = Settings(data_dir=tmp_path / "data", parse_workers=2)
    with ParseAhead(build_defs(settings).resources, inbox, [["pump.pdf"], ["valve.pdf"]]) as ahead:
        ahead.before(["pump.pdf"])
        assert _key_file(page_pool.pending_read_ahead(), pdfs) == ["pump.pdf", "valve.pdf"]


def test_an_ingest_of_pdfs_read_ahead_stores_what_a_parse_of_each_alone_gives(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", parse_workers=2)
    sizes = {"pump": MIN_SPLIT_PAGES + 2, "valve": 3, "fan": 2}  # long, then short ones
    files = [_manual(tmp_path / "in" / f"{n}.pdf", n, pages) for n, pages in sizes.items()]
    outcomes = ingest(settings, files, log_level="ERROR")
    assert [o.success for o in outcomes] == [True] * 3, [o.summary() for o in outcomes]
    assert page_pool.pending_read_ahead() == []
    # Each run took its document's parse from the workers and says what it waited for it.
    recorded = _parse_metadata(settings)
    assert [m["parse_read_ahead"] for m in recorded] == [True] * 3
    assert all(m["parse_wait_seconds"] >= 0 and m["parse_worker_seconds"] > 0 for m in recorded)

    stored, missing = read_documents(settings.asset_storage_root, [o.doc_id for o in outcomes])
    assert not missing
    alone = PyMuPDFParser(workers=1)
    for document, path in zip(stored, files, strict=True):
        expected = to_ir(alone.parse(path), doc_id=document.doc_id, source_sha256="0" * 64)
        assert [(e.type, e.text, e.page_start) for e in document.elements] == [
            (e.type, e.text, e.page_start) for e in expected.elements
        ]
