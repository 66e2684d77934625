"""Golden snapshots: a document's IR and chunks as compact, diffable text, and their comparison.

    .ir.txt      # parser <name> | <n> pages | <n> elements | title: <title or ->
                 <type> <h<level> or -> <p<first>[-<last>]> <text>
    .chunks.txt  # template <name> v<version> (<why auto chose it>) | <options> | <n> chunks
                 <chunk type> <pages, p- when none> <header path> | <text>

A text longer than TEXT_CHARS is cut there and ends with its length and a hash of the whole,
so any change of text changes its line while files stay small; newlines and other invisible
characters are escaped, so one element or chunk is one line.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import unicodedata
import warnings
from pathlib import Path

import pytest

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
TEXT_CHARS = 160
DIFF_LINES = 60  # a changed parser can move every line: show enough to see what, not all
UPDATE_HINT = (
    "If the new output is right, rewrite the snapshots (-k to narrow) and review them:\n"
    "  python -m pytest rag_assets_tests/golden/test_golden.py --update-golden\n"
    "  git diff rag_assets_tests/golden/\n"
    "and say in the commit message why the new output is right."
)
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(text: str) -> str:
    # Control, format and line/paragraph separators become visible escapes: an invisible
    # change shows in the diff, and no character can break a snapshot line in two.
    return "".join(
        _ESCAPES.get(ch)
        or (f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch)
        for ch in text
    )


def compact(text: str) -> str:
    if len(text) <= TEXT_CHARS:
        return _escape(text)
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
    return f"{_escape(text[:TEXT_CHARS])}… (+{len(text) - TEXT_CHARS} chars, sha1 {digest})"


def _pages(start: int | None, end: int | None) -> str:
    if start is None:
        return "p-"
    return f"p{start}" if end in (None, start) else f"p{start}-{end}"


def render_ir(doc: StandardizedDocument) -> str:
    header = (
        f"# parser {doc.parser} | {doc.page_count or 'no'} pages | {len(doc.elements)} elements"
        f" | title: {compact(doc.title) if doc.title else '-'}"
    )
    lines = [
        f"{e.type:<11} {f'h{e.level}' if e.level else '-':<2} "
        f"{_pages(e.page_start, e.page_end):<7} {compact(e.text)}".rstrip()
        for e in doc.elements
    ]
    return "\n".join([header, *lines]) + "\n"


def render_chunks(chunks: list[ChunkRow], template: str, reason: str, options: str) -> str:
    header = f"# template {template} ({reason}) | {options} | {len(chunks)} chunks"
    lines = [
        f"{c.chunk_type:<9} {_pages(c.page_start, c.page_end):<7} "
        f"{compact(c.header_path)} | {compact(c.text)}".rstrip()
        for c in chunks
    ]
    return "\n".join([header, *lines]) + "\n"


def render_error(error: Exception) -> str:
    """What a document that fails to parse or chunk is stored as: the failure is today's output,
    and a fix then shows as a changed snapshot."""
    return f"# error {type(error).__name__}: {compact(str(error))}\n"


def assert_matches_snapshot(path: Path, actual: str, update: bool) -> None:
    """Compare `actual` with the stored snapshot at `path`; with `update`, store it instead.

    A missing snapshot is written (with a warning) on a developer's machine and fails in CI,
    where it would only ever compare the output with itself.
    """
    name = path.relative_to(GOLDEN).as_posix()
    if update:
        if not path.is_file() or path.read_bytes() != actual.encode("utf-8"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(actual.encode("utf-8"))
        return
    if not path.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"no snapshot {name}; write it locally and commit it.\n{UPDATE_HINT}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual.encode("utf-8"))
        warnings.warn(f"wrote the missing snapshot {name}: review and commit it", stacklevel=2)
        return
    stored = path.read_bytes().decode("utf-8")
    if stored == actual:
        return
    diff = list(
        difflib.unified_diff(
            stored.splitlines(),
            actual.splitlines(),
            f"{name} (stored)",
            f"{name} (now)",
            n=1,
            lineterm="",
        )
    )
    shown = diff[:DIFF_LINES]
    if len(diff) > DIFF_LINES:
        shown.append(f"... and {len(diff) - DIFF_LINES} more diff lines")
    pytest.fail("\n".join([f"{name} differs from the current output:", *shown, UPDATE_HINT]))
