"""The README's quick start as a user runs it: the CLI in fresh processes, default settings,
`ingest examples/corpus` and then its sample question, whose first hit must be the answer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

# The register table's row that answers the quick start's question.
ANSWER = "[Table 3: Host Control Register (Offset 0x04)] Bits: 15:8 | Field: Timeout Counter Value"


def quick_start_question() -> str:
    """The question the README's quick start asks, read from README.md so the two agree."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (question,) = re.findall(r'rag-assets query "([^"]+)"', section)
    return question


def rag_assets(data_dir: Path, *args: str) -> str:
    """The CLI's output, run as `rag-assets` runs: a new process, no RAG_ASSETS_* setting but
    the data folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_ASSETS_")}
    env["RAG_ASSETS_DATA_DIR"] = str(data_dir)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "rag_assets.cli", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_quick_start_question_finds_the_register_row_first(tmp_path: Path) -> None:
    question = quick_start_question()
    assert "15:8" in question and "Host Control Register" in question

    ingested = rag_assets(tmp_path, "ingest", "examples/corpus")
    assert "4 of 4 documents indexed" in ingested, ingested

    answer = json.loads(rag_assets(tmp_path, "query", "--json", question))
    top = answer["hits"][0]
    assert top["text"].startswith(ANSWER), [h["text"][:80] for h in answer["hits"][:3]]
    assert top["header_path"] == "/2 Register Map/"
    assert top["citation"].endswith("§ 2 Register Map / 2.1 Host Control Register")
    # Ranked by the identifier the question names (`15:8`) too, beside BM25 and dense.
    assert set(top["found_by"]) == {"bm25", "dense", "identifiers"}
