"""How an ingest's documents are cut into batch runs, and a failed batch split."""

from rag_assets.defs.batches import (
    Batch,
    PlannedDocument,
    batch_request,
    cut_batches,
    split_failed,
)
from rag_assets.defs.landing import CHECKED_PART, DOCUMENTS_TAG, LANDING_PART, RunPart

LANDING = RunPart(LANDING_PART, ("raw_documents", "parsed_documents"))
CHECKED = RunPart(CHECKED_PART, ("document_chunks", "vector_index"))
WHOLE = (LANDING, CHECKED)


def doc(position: int, parts=WHOLE, pages: int = 2, alone: bool = False) -> PlannedDocument:
    return PlannedDocument(f"d{position}", f"d{position}.pdf", parts, pages, position, alone)


def keys(batches: list[Batch]) -> list[list[str]]:
    return [b.keys for b in batches]


def test_neighbours_needing_the_same_runs_share_a_batch_up_to_its_size():
    batches = cut_batches([doc(i) for i in range(7)], max_documents=3)
    assert keys(batches) == [["d0", "d1", "d2"], ["d3", "d4", "d5"], ["d6"]]
    assert all(b.parts == WHOLE for b in batches)


def test_a_gap_in_partition_order_a_fresh_document_or_other_runs_cut_a_batch():
    fresh = doc(2, parts=())
    checked_only = doc(4, parts=(CHECKED,))
    batches = cut_batches([doc(0), doc(1), fresh, doc(3), checked_only, doc(6), doc(7)])
    # d2 needs nothing, d4 other runs, d5 is not in this ingest: a range over them would run them.
    assert keys(batches) == [["d0", "d1"], ["d3"], ["d4"], ["d6", "d7"]]


def test_batches_follow_partition_order_not_the_order_given():
    assert keys(cut_batches([doc(2), doc(0), doc(1)])) == [["d0", "d1", "d2"]]


def test_a_long_document_or_a_refused_one_runs_alone():
    batches = cut_batches(
        [doc(0), doc(1, pages=300), doc(2, pages=150), doc(3, alone=True), doc(4)], max_pages=300
    )
    assert keys(batches) == [["d0"], ["d1"], ["d2"], ["d3"], ["d4"]]


def test_a_failed_batch_runs_the_named_documents_alone_and_the_rest_in_neighbouring_groups():
    batch = Batch(tuple(doc(i) for i in range(6)), (CHECKED,))
    split = split_failed(batch, ["d2", "d5", "elsewhere"])
    assert keys(split) == [["d2"], ["d5"], ["d0", "d1"], ["d3", "d4"]]
    assert all(b.parts == (CHECKED,) for b in split)


def test_a_failed_batch_naming_none_of_its_documents_runs_each_alone():
    batch = Batch((doc(0), doc(1)), WHOLE)
    assert keys(split_failed(batch, [])) == [["d0"], ["d1"]]


def test_a_document_is_planned_with_its_parts_pages_and_whether_it_runs_alone(tmp_path):
    import pymupdf

    from rag_assets.defs.assets import PIPELINE
    from rag_assets.defs.batches import plan_document
    from rag_assets.defs.resources import InboxResource

    inbox = InboxResource(inbox_dir=str(tmp_path), raw_dir=str(tmp_path / "raw"), max_file_mb=1)
    with pymupdf.open() as pdf:
        for _ in range(3):
            pdf.new_page().insert_text((72, 72), "Grease the bearings weekly.")
        pdf.save(tmp_path / "manual.pdf")
    (tmp_path / "fake.pdf").write_text("not a pdf")

    manual = plan_document(inbox, "m", "manual.pdf", PIPELINE, 4)
    assert (manual.pages, manual.alone, manual.position) == (3, False, 4)
    assert [p.name for p in manual.parts] == [LANDING_PART, CHECKED_PART]
    # raw_documents refuses it: a run of raw_documents alone, where it fails.
    fake = plan_document(inbox, "f", "fake.pdf", PIPELINE, 5)
    assert fake.alone and [p.assets for p in fake.parts] == [("raw_documents",)]
    # Fresh: nothing to run, the file not even opened.
    assert plan_document(inbox, "g", "gone.pdf", (), 6).parts == ()


def test_a_batchs_run_names_its_files_a_documents_run_its_file():
    batch = Batch(tuple(doc(i) for i in range(3)), WHOLE)
    assert batch_request(batch, None, {}).tags[DOCUMENTS_TAG] == "d0.pdf … d2.pdf (3 documents)"
    alone = Batch((doc(5),), WHOLE)
    assert batch_request(alone, None, {}).tags[DOCUMENTS_TAG] == "d5.pdf"
