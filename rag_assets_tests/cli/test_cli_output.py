"""What a person sees on the terminal: no library warnings, a missing optional model said once,
plain lines when the output is not a terminal and live bars when it is."""

import logging
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest
from dagster import AssetKey, DagsterInstance

CLI = str(Path(sys.executable).with_name("rag-assets"))
DOCLING_ABSENT = "docling not used for PDF"
# A warning line as Python prints it ("...py:232: BetaWarning: ...") or as a logger does.
WARNING_LINE = re.compile(r"\w*Warning\b|\bWARNING\b")


def write_pdf(path: Path, text: str) -> Path:
    document = pymupdf.open()
    document.new_page().insert_text((72, 72), text)
    document.save(path)
    return path


def write_note(path: Path) -> Path:
    path.write_text("# Pumps\n\n## Service\n\nService the pump every 500 hours.\n")
    return path


def cli_env(tmp_path: Path) -> dict[str, str]:
    # Docling's layout models absent, whatever this machine has configured.
    return {**os.environ, "RAG_ASSETS_DOCLING_ARTIFACTS": str(tmp_path / "no-docling-models")}


def test_help_prints_no_warning():
    done = subprocess.run([CLI, "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ingest" in done.stdout
    assert not WARNING_LINE.search(done.stderr), done.stderr


@pytest.mark.slow
def test_ingest_off_a_terminal_prints_plain_lines_no_warning_and_the_missing_model_once(tmp_path):
    files = [
        write_note(tmp_path / "pumps.md"),
        write_pdf(tmp_path / "valves.pdf", "Valve manual. Grease the valve stem monthly."),
        write_pdf(tmp_path / "seals.pdf", "Seal manual. Replace the seal every 4000 hours."),
    ]
    data = tmp_path / "data"
    done = subprocess.run(
        [CLI, "ingest", "--data-dir", str(data), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=900,
        env=cli_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:3]] == [
        ["ok", "pumps.md"],
        ["ok", "valves.pdf"],
        ["ok", "seals.pdf"],
    ]
    assert lines[3:] == ["3 of 3 documents indexed"]  # no bar, no escape sequence
    assert "\x1b[" not in done.stdout + done.stderr
    assert not [line for line in done.stderr.splitlines() if WARNING_LINE.search(line)]
    assert done.stderr.count(DOCLING_ABSENT) == 1, done.stderr


@pytest.mark.slow
def test_two_pdfs_say_the_missing_docling_models_once_at_info_and_each_in_its_metadata(
    tmp_path, caplog
):
    from rag_assets.defs.resources import _router
    from rag_assets.runner.ingest import ingest
    from rag_assets.settings import Settings

    _router.cache_clear()  # a router of an earlier test may have said it already
    pdfs = [
        write_pdf(tmp_path / "a.pdf", "Pump A. Service every 500 hours."),
        write_pdf(tmp_path / "b.pdf", "Pump B. Service every 800 hours."),
    ]
    settings = Settings(data_dir=tmp_path / "data", docling_artifacts_path=str(tmp_path / "none"))
    instance = DagsterInstance.ephemeral()
    with caplog.at_level(logging.INFO, logger="rag_assets"):
        outcomes = ingest(settings, pdfs, instance=instance)
    assert [o.parser for o in outcomes] == ["pymupdf", "pymupdf"]
    said = [r for r in caplog.records if DOCLING_ABSENT in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO]
    # Never silently: each document's metadata and its run's log still say it, at INFO (a
    # batch's lines in one entry).
    for record in instance.fetch_materializations(AssetKey("parsed_documents"), limit=2).records:
        metadata = record.asset_materialization.metadata
        assert DOCLING_ABSENT in " ".join(metadata["fallbacks"].value)
    logged = [
        entry
        for run in instance.get_runs()
        for entry in instance.all_logs(run.run_id)
        if DOCLING_ABSENT in entry.user_message and entry.dagster_event is None
    ]
    assert sum(e.user_message.count(DOCLING_ABSENT) for e in logged) == 2
    assert {e.level for e in logged} == {logging.INFO}


@pytest.mark.slow
def test_ingest_on_a_terminal_shows_live_bars_and_ends_with_its_summary(tmp_path):
    document = write_note(tmp_path / "pumps.md")
    # stdout and stderr on a pseudo-terminal, as in a person's shell.
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [CLI, "ingest", "--data-dir", str(tmp_path / "data"), str(document)],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env={**cli_env(tmp_path), "TERM": "xterm-256color", "COLUMNS": "120"},
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            block = os.read(controller, 65536)
        except OSError:  # the terminal closed: the command has ended
            break
        if not block:
            break
        shown += block
    os.close(controller)
    assert process.wait(timeout=900) == 0
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode())  # colours and cursor moves
    assert re.search(r"documents\s+━+\s+1/1", text), text[-2000:]
    assert re.search(r"chunks embedded\s+━+\s+1/1", text), text[-2000:]
    assert "ok     pumps.md" in text
    assert text.rstrip().splitlines()[-1] == "1 of 1 documents indexed"
    assert not WARNING_LINE.search(text)


# A title escape (the window's title), a clear-screen escape and a bell, as a document holds them.
ESCAPES = "\x1b]0;owned\x07\x1b[2J"
# A name that would print a forged result line of its own, in red.
FORGED_NAME = "valves\n\x1b[31mok     forged.md"


def _shown_as_text(out: str) -> bool:
    return not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)


@pytest.mark.slow
def test_escapes_in_a_document_a_file_name_and_an_answer_print_as_text(
    tmp_path, capsys, monkeypatch
):
    import json

    from rag_assets.cli import main
    from rag_assets_tests.support.openai_stub import Behaviour, serve_stub

    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "escapes.md").write_text(
        f"# Valve guide\n\n## Opening\n\nThe quillfeather valve opens{ESCAPES} on cold mornings.\n"
    )
    (inbox / FORGED_NAME).write_text("# Seals\n\nThe marrowgate seal is greased weekly.\n")
    data = ["--data-dir", str(tmp_path / "data")]
    assert main(["ingest", *data, str(inbox)]) == 0
    commands = {
        "ingest": capsys.readouterr().out,
        "status": main(["status", *data]) or capsys.readouterr().out,
        "query": main(["query", *data, "quillfeather valve"]) or capsys.readouterr().out,
        "forged query": main(["query", *data, "marrowgate seal"]) or capsys.readouterr().out,
        "section": main(["section", *data, "Opening"]) or capsys.readouterr().out,
        "text": main(["text", *data, "quillfeather valve"]) or capsys.readouterr().out,
    }
    assert main(["chunks", *data]) == 0
    commands["chunks"] = capsys.readouterr().out
    monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", "sk-test")
    with serve_stub() as stub:
        monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "stub-model")
        stub.respond = lambda request: Behaviour(
            text="" if request.tool_names else f"The valve opens{ESCAPES} on cold mornings [1]."
        )
        assert main(["answer", *data, "When does the quillfeather valve open?"]) == 0
        commands["answer"] = capsys.readouterr().out
    assert {name: out for name, out in commands.items() if not _shown_as_text(out)} == {}
    assert "opens\\x1b]0;owned\\x07\\x1b[2J on cold" in commands["query"] + commands["chunks"]
    assert "opens\\x1b]0;owned\\x07\\x1b[2J on cold" in commands["section"] + commands["answer"]
    # The name stays on its line: no line of output starts with what it forged.
    for name in ("ingest", "status", "forged query"):
        assert "valves\\n\\x1b[31mok     forged.md" in commands[name], commands[name]
        assert not re.search(r"^\S*ok +forged", commands[name], re.MULTILINE), commands[name]
    # --json stays exact: the name and the text as they are.
    assert main(["query", *data, "--json", "marrowgate seal"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert f"in/{FORGED_NAME}" in {hit["source_path"] for hit in hits}


def test_a_document_line_keeps_a_forged_name_on_its_line(capsys):
    from rag_assets.cli.progress import DocumentLines
    from rag_assets.runner.receipt import DocumentOutcome

    outcome = DocumentOutcome(doc_id="d", source_path=f"in/{FORGED_NAME}", success=True, chunks=1)
    DocumentLines().document_finished(outcome)
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("ok     in/valves\\n\\x1b[31mok     forged.md  parser=-")


def test_visible_shows_controls_and_keeps_the_layout():
    from rag_assets.text.terminal import visible, visible_line

    assert visible(f"a{ESCAPES}\tb\r\nc\rd\x9b") == "a\\x1b]0;owned\\x07\\x1b[2J\tb\r\nc\\x0dd\\x9b"
    assert visible_line("report\u202efdp.exe\nnext\u2028line") == (
        "report\\u202efdp.exe\\nnext\\u2028line"
    )
