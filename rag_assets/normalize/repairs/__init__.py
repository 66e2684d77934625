"""IR repairs applied after every adapter: what parsers get wrong is fixed here once, for every
template. Each repair maps elements to elements and counts what it changed; the counts land in
`doc.metadata["repairs"]`.

Order matters: text first (numbers and repeated lines compare cleanly), then page furniture
(so it neither splits a table nor gets numbered), then tables, then numbered heading lines
inside paragraphs (their titles already whole words), then heading levels.

Every repair is optional: one that raises, or that would rewrite a heading whose level the
source states, is undone for that document (its elements stay as they were before it), logged
as a WARNING and recorded in `metadata["repairs_failed"]` and `metadata["degraded"]`; the
other repairs still run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from rag_assets.contracts.ir import FURNITURE_TYPES, DocumentElement, StandardizedDocument
from rag_assets.normalize.markdown import assemble_markdown
from rag_assets.normalize.repairs.furniture import restore_lone_furniture, retype_furniture
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED, recover_heading_levels
from rag_assets.normalize.repairs.heading_lines import split_heading_lines
from rag_assets.normalize.repairs.tables import merge_continued_tables
from rag_assets.normalize.repairs.text import (
    join_hyphenated,
    join_split_words,
    remove_cjk_spaces,
)
from rag_assets.optional import StepFailures
from rag_assets.settings.repairs import REPAIR_NAMES

Repair = Callable[[list[DocumentElement]], tuple[list[DocumentElement], int]]

# In the order they run; their names are the ones RAG_ASSETS_REPAIRS_OFF accepts (REPAIR_NAMES,
# declared with the settings, which sit below this layer; a test keeps the two equal).
REPAIRS: tuple[tuple[str, Repair], ...] = (
    ("hyphens_joined", join_hyphenated),
    ("split_words_joined", join_split_words),
    ("cjk_spaces_removed", remove_cjk_spaces),
    ("furniture_restored", restore_lone_furniture),
    ("furniture_retyped", retype_furniture),
    ("tables_merged", merge_continued_tables),
    ("heading_lines_split", split_heading_lines),
    ("heading_levels", recover_heading_levels),
)


class StatedStructureChanged(RuntimeError):
    """A repair merged, split, re-levelled or re-worded a heading whose level the source states."""


def repair_document(doc: StandardizedDocument, skip: Collection[str] = ()) -> StandardizedDocument:
    """The document with every repair but those in `skip` applied, its markdown and offsets
    re-assembled; a repair that fails is left out for this document and said so."""
    unknown = set(skip) - set(REPAIR_NAMES)
    if unknown:
        raise ValueError(f"unknown repairs {sorted(unknown)}; repairs are {REPAIR_NAMES}")
    elements = doc.elements
    counts: dict[str, int] = {}
    failures = StepFailures(doc.source_path or doc.doc_id)
    for name, repair in REPAIRS:
        if name in skip:
            continue
        repaired = failures.run(f"repair {name}", lambda r=repair, e=elements: _checked(r, e), None)
        if repaired is not None:  # a failed repair has no count: its elements stay as they were
            elements, counts[name] = repaired
    counts["furniture_dropped"] = sum(e.type in FURNITURE_TYPES for e in elements)
    markdown, elements = _assemble(elements)
    metadata = {**doc.metadata, "repairs": counts}
    if failures.failed:
        metadata["repairs_failed"] = {
            step.removeprefix("repair "): reason for step, reason in failures.failed.items()
        }
        metadata["degraded"] = [*doc.metadata.get("degraded", []), *failures.notes()]
    return doc.model_copy(update={"markdown": markdown, "elements": elements, "metadata": metadata})


def _checked(repair: Repair, elements: list[DocumentElement]) -> tuple[list[DocumentElement], int]:
    """The repair's result, refused when it touched a heading whose level the source states."""
    repaired, count = repair(elements)
    if _stated_headings(repaired) != _stated_headings(elements):
        raise StatedStructureChanged("it changed headings whose level the source states")
    return repaired, count


def _stated_headings(elements: list[DocumentElement]) -> list[tuple[str, str, int | None]]:
    return [
        (e.type, e.text, e.level)
        for e in elements
        if e.type in ("title", "heading") and e.metadata.get(LEVEL_STATED)
    ]


def _assemble(elements: list[DocumentElement]) -> tuple[str, list[DocumentElement]]:
    """Markdown of the body only: page headers/footers stay elements, with an empty span where
    they stood in reading order, so no template can pick their text up."""
    markdown, body = assemble_markdown([e for e in elements if e.type not in FURNITURE_TYPES])
    placed = iter(body)
    out: list[DocumentElement] = []
    cursor = 0
    for element in elements:
        if element.type in FURNITURE_TYPES:
            out.append(element.model_copy(update={"start_char": cursor, "end_char": cursor}))
        else:
            out.append(next(placed))
            cursor = out[-1].end_char
    return markdown, out
