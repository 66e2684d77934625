"""SIGINT (Ctrl-C, to the whole process group) and SIGTERM during a real `rag-assets ingest`.

The first document is indexed when the signal comes, the long PDF after it is in progress and
two more wait: the first stays searchable, the PDF leaves no row in the index, the last two never
start, the exit status is the signal's and no traceback reaches the user; the same ingest again
finishes the rest and leaves the first unchanged.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymupdf
import pytest
from dagster import RunsFilter
from dagster._core.storage.tags import PARTITION_NAME_TAG

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.index.rows import IndexRow
from rag_assets.index.store import MilvusIndex
from rag_assets.instance import open_instance
from rag_assets.quality.rollback import replace_checked
from rag_assets.settings import Settings
from rag_assets.sources.keys import partition_key_for

CLI = str(Path(sys.executable).with_name("rag-assets"))
SMALL = {
    "1-pumps.md": "# Pumps\n\nThe pump station lifts water forty metres to the ridge reservoir.\n",
    "3-valves.md": "# Valves\n\nEach valve is checked monthly; its seal is replaced yearly.\n",
    "4-filters.md": "# Filters\n\nSand filters are backwashed when the pressure drop is high.\n",
}


def _long_pdf(path: Path, pages: int = 80) -> None:
    with pymupdf.open() as doc:
        for number in range(1, pages + 1):
            page = doc.new_page()
            page.insert_text((72, 72), f"{number} Turbine section {number}", fontsize=16)
            body = f"The turbine governor logs load step {number} after each start. " * 10
            page.insert_textbox(pymupdf.Rect(72, 100, 520, 720), body, fontsize=11)
        doc.save(path)


def _corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in SMALL.items():
        (docs / name).write_text(text)
    _long_pdf(docs / "2-manual.pdf")
    return docs


def _indexed_docs(data_dir: Path) -> set[str]:
    with MilvusIndex(str(data_dir / "milvus.db")) as index:
        (collection,) = index.list_collections()
        return {row["doc_id"] for row in index.scan(collection, ["doc_id"])}


def _stop_after_first(data_dir: Path, docs: Path, stop: signal.Signals) -> tuple[int, str, str]:
    """Run an ingest, send `stop` once the first document's line is out and the next document's
    run has started; rc, stdout, stderr."""
    child = subprocess.Popen(
        [CLI, "ingest", "--data-dir", str(data_dir), str(docs)],
        # One document a run: one is done, one in progress and two wait when the signal comes.
        env={**os.environ, "RAG_ASSETS_BATCH_DOCUMENTS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout: list[str] = []
    errors: list[str] = []
    threading.Thread(target=lambda: [lines.put(x) for x in child.stdout], daemon=True).start()
    threading.Thread(target=lambda: errors.extend(child.stderr), daemon=True).start()
    try:
        deadline = time.monotonic() + 600
        while not any(line.startswith("ok     docs/1-pumps.md") for line in stdout):
            assert time.monotonic() < deadline, "the first document was never reported"
            try:
                stdout.append(lines.get(timeout=1))
            except queue.Empty:
                assert child.poll() is None, "".join(stdout + errors)
        # ... and once the PDF's run exists: a signal between two documents leaves none in
        # progress (the next is "not started", which is true but not what is tested here).
        manual = RunsFilter(tags={PARTITION_NAME_TAG: partition_key_for("docs/2-manual.pdf")})
        instance = open_instance(Settings.from_env(data_dir))
        while not instance.get_runs(manual):
            assert child.poll() is None and time.monotonic() < deadline, "".join(stdout + errors)
            time.sleep(0.05)
        if stop == signal.SIGINT:
            os.killpg(child.pid, stop)  # Ctrl-C reaches every process of the foreground group
        else:
            child.send_signal(stop)
        rc = child.wait(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    time.sleep(0.5)  # the reader threads drain the pipes
    while not lines.empty():
        stdout.append(lines.get())
    return rc, "".join(stdout), "".join(errors)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_ingest_keeps_what_finished_and_the_next_one_does_the_rest(tmp_path, stop):
    docs = _corpus(tmp_path)
    data_dir = tmp_path / "data"
    rc, out, err = _stop_after_first(data_dir, docs, stop)

    assert rc == 128 + stop, out + err
    lines = out.splitlines()
    assert lines[0].startswith("ok     docs/1-pumps.md"), out
    assert lines[1:4] == [
        "interrupted docs/2-manual.pdf  rolled back (its index rows as before this ingest); "
        "the next ingest runs it again",
        "not started docs/3-valves.md",
        "not started docs/4-filters.md",
    ], out
    assert lines[4] == (
        f"1 of 4 documents indexed; stopped by {stop.name}: 1 interrupted, 2 not started "
        "(run the same ingest again to finish)"
    ), out
    assert "Traceback" not in out + err and "Exception" not in out + err, err

    # The finished document answers; nothing of the interrupted one is in the index.
    assert _indexed_docs(data_dir) == {partition_key_for("docs/1-pumps.md")}
    query = subprocess.run(
        [CLI, "query", "--data-dir", str(data_dir), "--json", "pump station ridge reservoir"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert query.returncode == 0, query.stderr
    assert '"source_path": "docs/1-pumps.md"' in query.stdout

    again = subprocess.run(
        [CLI, "ingest", "--data-dir", str(data_dir), str(docs)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    lines = again.stdout.splitlines()
    assert lines[0].startswith("ok     docs/1-pumps.md") and lines[0].endswith("unchanged")
    for line, name in zip(lines[1:4], ["2-manual.pdf", "3-valves.md", "4-filters.md"], strict=True):
        assert line.startswith(f"ok     docs/{name}") and "unchanged" not in line, again.stdout
    assert lines[4] == "4 of 4 documents indexed"
    assert _indexed_docs(data_dir) == {
        partition_key_for(f"docs/{n}") for n in [*SMALL, "2-manual.pdf"]
    }


def _rows(doc_id: str, texts: list[str]) -> list[IndexRow]:
    chunks = [
        ChunkRow(
            chunk_id=chunk_id_for(doc_id, "semantic", i, text),
            doc_id=doc_id,
            source_path="notes.md",
            source_sha256="0" * 64,
            template="semantic",
            chunk_index=i,
            text=text,
        )
        for i, text in enumerate(texts)
    ]
    return [IndexRow.from_chunk(c, [1.0, float(i), 0.5, 0.0]) for i, c in enumerate(chunks)]


@pytest.mark.parametrize("previous", [["Cranes lift steel.", "Barges carry coal."], []])
def test_a_replacement_cut_short_puts_the_previous_rows_back(tmp_path, previous):
    def interrupted() -> dict:
        raise KeyboardInterrupt  # what a stop signal raises in the step, after the upsert

    doc_id = "notes.md-1a2b3c4d"
    with MilvusIndex(str(tmp_path / "milvus.db")) as index:
        collection = index.ensure_collection("toy", 4, False)
        if previous:
            index.replace_document(collection, doc_id, _rows(doc_id, previous))
        with pytest.raises(KeyboardInterrupt):
            replace_checked(
                index, collection, doc_id, _rows(doc_id, ["Tugs pull ships."]), interrupted
            )
        kept = index.scan(collection, ["text"], f'doc_id == "{doc_id}"')
        assert sorted(row["text"] for row in kept) == sorted(previous)
