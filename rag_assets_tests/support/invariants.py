"""What must hold for any document, whatever its shape: the properties that the robustness
corpus and the property-based tests check on every document they produce.

- Headings whose level the source states keep their text and level through the repairs.
- Repairs conserve the text: the letters and digits after them are the ones before, except
  where a repair that removes text (tables merged, a repeated header row dropped) reported
  edits; even then nothing is added.
- Every chunk fits the token limit, cites pages within the document and carries a header path
  consistent with the document's headings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.contracts.tabular import to_arrow, to_records
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED
from rag_assets.quality.chunks import check_header_paths, check_pages_within_document
from rag_assets.templates.base import ChunkTemplate
from rag_assets.templates.tokens import TokenCounter

# Repairs whose edits may remove letters or digits from the text.
TEXT_REMOVING_REPAIRS = ("tables_merged",)


def stated_headings(elements: Sequence[DocumentElement]) -> list[tuple[str, int | None]]:
    return [
        (e.text, e.level)
        for e in elements
        if e.type in ("title", "heading") and e.metadata.get(LEVEL_STATED)
    ]


def letters_and_digits(elements: Sequence[DocumentElement]) -> Counter[str]:
    """The multiset of letters and digits of every element's text (tables by their cells, so
    that re-rendered markdown does not count)."""
    counts: Counter[str] = Counter()
    for element in elements:
        texts = [element.text]
        if element.table is not None:
            table = element.table
            texts = [cell.text for cell in table.cells] + [table.caption or "", *table.footnotes]
        for text in texts:
            counts.update(ch for ch in text if ch.isalnum())
    return counts


def repair_problems(before: Sequence[DocumentElement], after: StandardizedDocument) -> list[str]:
    """What the repairs broke between the adapter's `before` and the repaired document."""
    problems = []
    if stated_headings(after.elements) != stated_headings(before):
        problems.append("headings whose level the source states were changed")
    old, new = letters_and_digits(before), letters_and_digits(after.elements)
    added = new - old
    if added:
        problems.append(f"repairs added characters: {_sample(added)}")
    counts = after.metadata.get("repairs", {})
    removed = old - new
    if removed and not any(counts.get(name) for name in TEXT_REMOVING_REPAIRS):
        problems.append(f"repairs removed characters without reporting it: {_sample(removed)}")
    return problems


def chunk_problems(
    chunks: Sequence[ChunkRow],
    doc: StandardizedDocument,
    template: ChunkTemplate,
    counter: TokenCounter,
) -> list[str]:
    """Token limit, page ranges and header paths of one template's chunks of `doc`."""
    problems = []
    limit = template.options.max_tokens
    for chunk in chunks:
        tokens = counter.count(chunk.text)
        if tokens > limit:
            problems.append(f"chunk {chunk.chunk_index}: {tokens} tokens over the limit {limit}")
        if (chunk.page_start is None) != (chunk.page_end is None) or (
            chunk.page_start is not None and chunk.page_start > chunk.page_end
        ):
            problems.append(
                f"chunk {chunk.chunk_index}: page range {chunk.page_start}-{chunk.page_end}"
            )
    records = to_records(to_arrow(list(chunks), ChunkRow), ChunkRow)
    for outcome in (
        check_pages_within_document(records, doc.page_count),
        check_header_paths(
            records,
            doc,
            template.headings_from_text,
            template.options.header_path_separator,
        ),
    ):
        if not outcome.passed:
            problems.append(outcome.description)
    return problems


def _sample(counts: Counter[str], limit: int = 20) -> str:
    return "".join(sorted(counts.elements())[:limit]) + ("…" if counts.total() > limit else "")
