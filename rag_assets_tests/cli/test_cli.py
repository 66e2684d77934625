"""`rag-assets` round trip: ingest, query, chunks; failures reported, others still land."""

import json

import pytest

from rag_assets.cli import main
from rag_assets.templates.fixed import FixedTemplate
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets_tests.conftest import REPO_ROOT

CORPUS = REPO_ROOT / "examples" / "corpus"

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
    assert (
        f"ok     pump-guide.md  parser=docling template=semantic v{SemanticTemplate.version}" in out
    )
    assert "FAILED broken.pdf" in out and "not a PDF" in out
    assert "1 of 2 documents indexed" in out

    assert (
        main(
            ["query", "--data-dir", data, "--json", "--top-k", "2", "how often to replace the seal"]
        )
        == 0
    )
    hits = json.loads(capsys.readouterr().out)["hits"]
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
    assert f"template=fixed v{FixedTemplate.version}" in capsys.readouterr().out
    assert main(["chunks", "--data-dir", data, "--json", "note.md"]) == 0
    chunks = json.loads(capsys.readouterr().out)
    assert len(chunks) > 1 and {c["template"] for c in chunks} == {"fixed"}


def test_parse_prints_the_ir_without_dagster(capsys):
    spec = str(CORPUS / "host-controller-spec.pdf")
    assert main(["parse", "--json", spec]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["parser"] == "pymupdf" and doc["page_count"] == 5
    assert any(
        e["type"] == "heading" and e["text"].endswith("2.1.1 Timeout Counter")
        for e in doc["elements"]
    )

    assert main(["parse", "--markdown", str(CORPUS / "operator-guide.md")]) == 0
    assert capsys.readouterr().out.startswith("# ASHC Driver Operator Guide")

    assert main(["parse", spec]) == 0
    listing = capsys.readouterr().out
    assert "parser pymupdf" in listing and "heading h3" in listing and "table" in listing


@pytest.mark.parametrize(
    ("name", "content", "args", "message"),
    [
        ("empty.pdf", b"", [], "empty"),
        ("fake.pdf", b"<html></html>", [], "not a PDF"),
        ("notes.docx", b"PK\x03\x04 not really a zip", [], "notes.docx"),
        ("guide.md", b"# Guide", ["--parser", "pymupdf"], "reads PDF only"),
    ],
)
def test_parse_failures_are_one_clear_line(tmp_path, capsys, name, content, args, message):
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["parse", *args, str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err.count("\n") == 1
        and message in captured.err
        and "Traceback" not in captured.err
    )


def test_collections_file_chooses_parser_and_template_per_document(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "rag_collections.yaml").write_text(
        "collections:\n"
        "  - name: notes\n"
        '    match: ["notes/*.md"]\n'
        "    parser: unstructured\n"
        "    template: fixed\n"
        "    options: {max_tokens: 64, overlap_tokens: 8}\n"
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "valves.md").write_text("# Valves\n\n" + "Check the relief valve monthly. " * 30)
    (tmp_path / "pumps.md").write_text("# Pumps\n\nPrime the pump before starting.\n")
    assert main(["ingest", "--data-dir", str(data), str(notes), str(tmp_path / "pumps.md")]) == 0
    out = capsys.readouterr().out
    assert f"notes/valves.md  parser=unstructured template=fixed v{FixedTemplate.version}" in out
    assert f"pumps.md  parser=docling template=semantic v{SemanticTemplate.version}" in out
    chunks = main(["chunks", "--data-dir", str(data), "--json", "notes/valves.md"])
    assert chunks == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) > 2 and max(r["token_count"] for r in rows) <= 64
    # A flag on the command line wins over the file.
    assert main(["ingest", "--data-dir", str(data), "--parser", "docling", str(notes)]) == 0
    assert (
        f"notes/valves.md  parser=docling template=fixed v{FixedTemplate.version}"
        in capsys.readouterr().out
    )
