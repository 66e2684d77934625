"""`rag-assets` round trip: ingest, query, chunks; failures reported, others still land."""

import json

import pytest

from rag_assets.cli import main

pytestmark = pytest.mark.slow


def test_ingest_query_and_chunks_round_trip(tmp_path, capsys):
    data = str(tmp_path / "data")
    guide = tmp_path / "pump-guide.md"
    guide.write_text(
        "# Pump Guide\n\n## Maintenance\n\nReplace the impeller seal every 4000 operating hours.\n\n"
        "## Safety\n\nAlways isolate the pump before opening the casing.\n"
    )
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"not a pdf at all")

    assert main(["ingest", "--data-dir", data, str(guide), str(broken)]) == 1
    out = capsys.readouterr().out
    assert "ok     pump-guide.md  parser=docling template=semantic v1" in out
    assert "FAILED broken.pdf" in out and "not a PDF" in out
    assert "1 of 2 documents indexed" in out

    assert (
        main(
            ["query", "--data-dir", data, "--json", "--top-k", "2", "how often to replace the seal"]
        )
        == 0
    )
    hits = json.loads(capsys.readouterr().out)
    assert {
        "chunk_id",
        "doc_id",
        "source_path",
        "header_path",
        "page_start",
        "page_end",
        "score",
        "text",
    } <= set(hits[0])
    assert hits[0]["source_path"] == "pump-guide.md"
    assert hits[0]["header_path"] == "/Pump Guide/" and "4000 operating hours" in hits[0]["text"]

    assert main(["query", "--data-dir", data, "impeller seal"]) == 0
    assert "[1] pump-guide.md, § Pump Guide / Maintenance" in capsys.readouterr().out

    assert main(["chunks", "--data-dir", data, "--json", "pump-guide.md"]) == 0
    chunks = json.loads(capsys.readouterr().out)
    assert [c["chunk_index"] for c in chunks] == list(range(len(chunks)))
    assert {c["chunk_id"] for c in chunks} >= {hits[0]["chunk_id"]}
    assert main(["chunks", "--data-dir", data, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(chunks)

    assert main(["chunks", "--data-dir", data, "missing.pdf"]) == 1
    assert "no ingested document matches" in capsys.readouterr().err


def test_template_flag_switches_the_template(tmp_path, capsys):
    data = str(tmp_path / "data")
    note = tmp_path / "note.md"
    note.write_text("# Note\n\n" + "A sentence about valves. " * 80)
    assert main(["ingest", "--data-dir", data, "--template", "fixed", str(note)]) == 0
    assert "template=fixed v1" in capsys.readouterr().out
    assert main(["chunks", "--data-dir", data, "--json", "note.md"]) == 0
    chunks = json.loads(capsys.readouterr().out)
    assert len(chunks) > 1 and {c["template"] for c in chunks} == {"fixed"}
