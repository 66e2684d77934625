"""Checks on a document's stored chunk rows (records as read back from Parquet)."""

from __future__ import annotations

import re

from pydantic import ValidationError

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.quality.outcome import CheckOutcome, outcome
from rag_assets.templates.base import (
    HEADING_TYPES,
    header_path_for,
    heading_level,
    heading_title,
    with_separator,
)


def check_metadata_complete(records: list[dict], doc_id: str) -> CheckOutcome:
    problems = []
    for record in records:
        where = f"chunk {record.get('chunk_index', '?')}"
        try:
            row = ChunkRow.model_validate(record)
        except ValidationError as error:
            fields = ", ".join(".".join(map(str, e["loc"])) for e in error.errors())
            problems.append(f"{where}: invalid or missing {fields}")
            continue
        if row.doc_id != doc_id:
            problems.append(f"{where}: doc_id {row.doc_id!r} is not {doc_id!r}")
        if not (row.text.strip() and row.source_path and row.source_sha256 and row.template):
            problems.append(f"{where}: empty text, source_path, source_sha256 or template")
        if row.token_count <= 0:
            problems.append(f"{where}: token_count {row.token_count}")
    return outcome(problems, f"{len(records)} chunks complete and typed", {"chunks": len(records)})


def check_ids_unique_and_deterministic(records: list[dict]) -> CheckOutcome:
    problems = []
    ids = [r.get("chunk_id") for r in records]
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} duplicate chunk ids")
    indexes = sorted(r.get("chunk_index", -1) for r in records)
    if indexes != list(range(len(records))):
        problems.append("chunk_index is not 0..n-1")
    for r in records:
        expected = chunk_id_for(r["doc_id"], r["template"], r["chunk_index"], r["text"])
        if r.get("chunk_id") != expected:
            problems.append(
                f"chunk {r['chunk_index']}: id is not sha256(doc, template, index, text)"
            )
    return outcome(problems, "chunk ids unique and reproducible")


def _is_heading_path(path: list[str], heading_levels: list[tuple[str, int]]) -> bool:
    """True when some headings of the document, in order and each deeper than the one before,
    bear the titles of `path`. A title may repeat (`Introduction` of every chapter, at other
    levels), so the first heading of a title is not always the one: `lowest[k]` is the lowest
    level a match of the path's first k titles can end at so far, which leaves the most room."""
    lowest: list[int | None] = [0] + [None] * len(path)
    for title, level in heading_levels:
        for k in range(len(path) - 1, -1, -1):  # backwards: one heading matches one title
            before = lowest[k]
            if path[k] == title and before is not None and level > before:
                current = lowest[k + 1]
                lowest[k + 1] = level if current is None else min(current, level)
    return lowest[-1] is not None


def _in_text_order(path: list[str], flat: str) -> bool:
    """True when every heading occurs in the document's whitespace-folded text, in order."""
    position = 0
    for title in path:
        found = flat.find(" ".join(title.split()), position)
        if found < 0:
            return False
        position = found
    return True


def check_header_paths(
    records: list[dict],
    doc: StandardizedDocument,
    headings_from_text: bool = False,
    separator: str = "/",
) -> CheckOutcome:
    heading_levels = [
        (heading_title(e), heading_level(e)) for e in doc.elements if e.type in ("title", "heading")
    ]
    flat = " ".join(doc.markdown.split()) if headings_from_text else ""
    # Chunks of one section share a path: each path is judged once, so the check stays linear
    # in the document (a 1,200-page text has thousands of chunks).
    judged: dict[tuple[str, ...], bool] = {}

    def consistent(headings: list[str]) -> bool:
        key = tuple(headings)
        if key not in judged:
            judged[key] = (
                _in_text_order(headings, flat)
                if headings_from_text
                else _is_heading_path(headings, heading_levels)
            )
        return judged[key]

    inconsistent = (
        "do not occur in the document's text"
        if headings_from_text
        else "are not a path of the document's headings"
    )
    problems = []
    for r in records:
        where = f"chunk {r['chunk_index']}"
        path, headings = r.get("header_path") or "", list(r.get("headings") or [])
        sep = separator
        if not (path.startswith(sep) and path.endswith(sep)) or sep * 2 in path:
            problems.append(f"{where}: header_path {path!r} is not '{sep}' or '{sep}A{sep}B{sep}'")
            continue
        if headings and path != with_separator(header_path_for(headings[:-1]), sep):
            problems.append(f"{where}: header_path {path!r} does not match headings {headings}")
        elif not headings and path != sep:
            problems.append(f"{where}: header_path {path!r} without headings")
        elif not consistent(headings):
            problems.append(f"{where}: headings {headings} {inconsistent}")
    return outcome(problems, "header paths well formed and consistent with the headings")


def check_pages_within_document(records: list[dict], page_count: int | None) -> CheckOutcome:
    problems = []
    for r in records:
        start, end = r.get("page_start"), r.get("page_end")
        if start is None or end is None:
            continue
        if start < 1 or end < start or (page_count is not None and end > page_count):
            problems.append(f"chunk {r['chunk_index']}: pages {start}-{end} outside 1-{page_count}")
    return outcome(problems, f"pages within 1-{page_count or '?'}", {"page_count": page_count or 0})


# A markdown heading marker or list bullet at a line start: not words of the text.
_LINE_MARK = re.compile(r"^\s*(?:#{1,6}|[-*+•])(?=\s|$)", re.MULTILINE)
_WORD = re.compile(r"\w")


def _only_headings(text: str, titles: set[str]) -> bool:
    """True when nothing but the given heading titles (and markers) is left in `text`. Each
    title goes once: the same words again are text of the section (`1. Scope` a clause's
    heading, then a list item `1. Scope` in its body)."""
    rest = " ".join(_LINE_MARK.sub(" ", text).split())
    for title in sorted(titles, key=len, reverse=True):  # "1.1 Scope" before "Scope"
        rest = rest.replace(title, " ", 1)
    return not _WORD.search(rest)


def check_chunks_have_content(
    records: list[dict], doc: StandardizedDocument, headings_from_text: bool = False
) -> CheckOutcome:
    """No chunk's text is empty or only headings: the row's own `headings`, the document's
    title and, for templates whose headings are the IR's, the heading elements it spans."""
    headings = [e for e in doc.elements if e.type in HEADING_TYPES]
    problems = []
    for r in records:
        text = r.get("text") or ""
        titles = {" ".join(t.split()) for t in [*(r.get("headings") or []), doc.title or ""]}
        start, end = r.get("start_char"), r.get("end_char")
        if not headings_from_text and start is not None and end is not None:
            titles |= {heading_title(e) for e in headings if start <= e.start_char < end}
        if not text.strip():
            problems.append(f"chunk {r['chunk_index']}: empty text")
        elif _only_headings(text, titles - {""}):
            problems.append(f"chunk {r['chunk_index']}: only a heading: {text[:80]!r}")
    return outcome(problems, "every chunk holds text besides its headings")
