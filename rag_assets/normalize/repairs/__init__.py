"""IR repairs applied after every adapter: what parsers get wrong is fixed here once, for every
template. Each repair maps elements to elements and counts what it changed; the counts land in
`doc.metadata["repairs"]`.

Order matters: text first (numbers and repeated lines compare cleanly), then running headers
in text without layout and page furniture (so it neither splits a table nor gets numbered), then tables, then numbered heading lines
inside paragraphs (their titles already whole words), chapter numbers joined to the titles
under them, then heading levels.
"""

from __future__ import annotations

from collections.abc import Callable

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.normalize.markdown import assemble_markdown
from rag_assets.normalize.repairs.furniture import (
    FURNITURE_TYPES,
    restore_lone_furniture,
    retype_furniture,
)
from rag_assets.normalize.repairs.heading_levels import recover_heading_levels
from rag_assets.normalize.repairs.heading_lines import split_heading_lines
from rag_assets.normalize.repairs.number_headings import join_number_headings
from rag_assets.normalize.repairs.running_text import strip_running_text
from rag_assets.normalize.repairs.tables import merge_continued_tables
from rag_assets.normalize.repairs.text import (
    join_hyphenated,
    join_split_words,
    remove_cjk_spaces,
)

Repair = Callable[[list[DocumentElement]], tuple[list[DocumentElement], int]]

REPAIRS: tuple[tuple[str, Repair], ...] = (
    ("hyphens_joined", join_hyphenated),
    ("split_words_joined", join_split_words),
    ("cjk_spaces_removed", remove_cjk_spaces),
    ("running_lines_cut", strip_running_text),
    ("furniture_restored", restore_lone_furniture),
    ("furniture_retyped", retype_furniture),
    ("tables_merged", merge_continued_tables),
    ("heading_lines_split", split_heading_lines),
    ("number_headings_joined", join_number_headings),
    ("heading_levels", recover_heading_levels),
)


def repair_document(doc: StandardizedDocument) -> StandardizedDocument:
    """The document with every repair applied, its markdown and offsets re-assembled."""
    elements = doc.elements
    counts: dict[str, int] = {}
    for name, repair in REPAIRS:
        elements, counts[name] = repair(elements)
    counts["furniture_dropped"] = sum(e.type in FURNITURE_TYPES for e in elements)
    markdown, elements = _assemble(elements)
    return doc.model_copy(
        update={
            "markdown": markdown,
            "elements": elements,
            "metadata": {**doc.metadata, "repairs": counts},
        }
    )


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
