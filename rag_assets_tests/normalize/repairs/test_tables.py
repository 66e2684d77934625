"""Tables continued over a page break merged into one, on hand-built IR."""

from __future__ import annotations

import pytest

from rag_assets.contracts.ir import (
    DocumentElement,
)
from rag_assets.normalize.repairs.tables import merge_continued_tables
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets_tests.support.builders import (
    para,
    table,
)

HEADER = ["Offset", "Name", "Reset"]


def rows(start: int, stop: int) -> list[list[str]]:
    return [[f"0x{i:02X}", f"REG{i}", str(i)] for i in range(start, stop)]


def test_table_continuing_with_repeated_header_is_one_table() -> None:
    elements = [
        para("Intro."),
        table([HEADER, *rows(0, 3)], 1, caption="Table 2 Registers"),
        DocumentElement(type="page_footer", text="- 1 -", page_start=1, page_end=1),
        DocumentElement(type="page_header", text="Spec", page_start=2, page_end=2),
        DocumentElement(type="caption", text="Table 2 (continued)", page_start=2, page_end=2),
        table([HEADER, *rows(3, 5)], 2, bbox=(72.0, 60.0, 520.0, 300.0)),
        para("After.", 2),
    ]
    out, merged = merge_continued_tables(elements)
    assert merged == 1
    assert [e.type for e in out] == [
        "paragraph",
        "table",
        "page_footer",
        "page_header",
        "caption",
        "paragraph",
    ]
    joined = out[1]
    assert joined.table.grid() == [HEADER, *rows(0, 5)]
    assert (joined.page_start, joined.page_end, joined.table.header_rows) == (1, 2, 1)
    assert joined.text == table_to_markdown(joined.table)
    assert joined.table.caption == "Table 2 Registers"
    assert joined.metadata["continued_on_pages"] == [2]


def test_caption_below_the_first_part_names_the_table() -> None:
    caption = DocumentElement(type="caption", text="Table 4 Registers", page_start=1, page_end=1)
    continued = DocumentElement(type="caption", text="Table 4 (cont.)", page_start=2, page_end=2)
    other = DocumentElement(type="caption", text="Table 5 Fields", page_start=2, page_end=2)
    first, second = table([HEADER, *rows(0, 3)], 1), table(rows(3, 5), 2, header_rows=0)
    assert merge_continued_tables([first, caption, continued, second])[1] == 1
    assert merge_continued_tables([first, caption, other, second])[1] == 0


def test_parts_whose_data_row_was_taken_for_a_header_chain_into_one() -> None:
    # The PyMuPDF adapter calls every part's first row a header; on pages 2 and 3 it is data.
    parts = [table([HEADER, *rows(0, 3)], 1), table(rows(3, 6), 2), table(rows(6, 8), 3)]
    out, merged = merge_continued_tables(parts)
    assert merged == 2 and len(out) == 1
    assert out[0].table.grid() == [HEADER, *rows(0, 8)]
    assert [c.row for c in out[0].table.cells if c.is_header] == [0, 0, 0]
    assert (out[0].page_end, out[0].metadata["continued_on_pages"]) == (3, [2, 3])


@pytest.mark.parametrize(
    "between, second",
    [
        ([], table([["A", "B"], ["1", "2"]], 2)),  # other column count
        ([], table(rows(3, 5), 3)),  # skips a page
        ([para("Text between.", 2)], table(rows(3, 5), 2)),
        ([], table([["Field", "Meaning", "Notes"], *rows(3, 5)], 2)),  # its own header
        (
            [DocumentElement(type="caption", text="Table 3 Other", page_start=2, page_end=2)],
            table(rows(3, 5), 2, header_rows=0),
        ),
        ([], table(rows(3, 5), 2, bbox=(600.0, 60.0, 800.0, 300.0))),  # another column band
    ],
)
def test_tables_that_are_not_continuations(
    between: list[DocumentElement], second: DocumentElement
) -> None:
    elements = [table([HEADER, *rows(0, 3)], 1, caption="Table 2 Registers"), *between, second]
    assert merge_continued_tables(elements) == (elements, 0)
