"""Table values against prose, on hand-built search hits (no index needed)."""

from __future__ import annotations

import pytest

from rag_assets.index.rows import SearchHit
from rag_assets.retrieval.conflicts import Conflict, find_conflicts, reconcile
from rag_assets.retrieval.grounding import check_answer
from rag_assets.retrieval.tools.toolbox import Source

ROW = (
    "[Table 1: Tuning Registers] Offset: 0x40 | Register: Tuning Control Register"
    " | Access: RW | Reset Value: 0x00000001 | Settle Time: 150 µs (Note: At 25 °C.)"
)


def source(text: str, chunk_type: str = "text", doc_id: str = "spec") -> Source:
    return Source.from_hit(
        SearchHit(
            chunk_id=f"{doc_id}-{chunk_type}-{len(text)}",
            doc_id=doc_id,
            source_path=f"{doc_id}.pdf",
            header_path="/1 Tuning/",
            page_start=1,
            page_end=1,
            score=1.0,
            text=text,
            chunk_type=chunk_type,
            template="spec",
            chunk_index=0,
            metadata={},
            language="en",
        )
    )


@pytest.mark.parametrize(
    ("prose", "column", "text_value"),
    [
        ("After power-on the Tuning Control Register resets to 0x10.", "Reset Value", "0x10"),
        ("The reset value of the tuning control register is 0x2.", "Reset Value", "0x2"),
        ("Writes to the Tuning Control Register take 200 us to settle.", "Settle Time", "200 us"),
    ],
)
def test_a_row_and_a_sentence_disagreeing_on_a_field(
    prose: str, column: str, text_value: str
) -> None:
    (conflict,) = find_conflicts({1: source(ROW, "table_row"), 2: source(f"Intro. {prose}")})
    assert (conflict.subject, conflict.column, conflict.text_value) == (
        "Tuning Control Register",
        column,
        text_value,
    )
    assert (conflict.table_marker, conflict.text_marker) == (1, 2)
    assert conflict.table == "Table 1: Tuning Registers"


@pytest.mark.parametrize(
    "prose",
    [
        # Agrees: the same values, however written (0x0001 is 0x00000001, 150 μs is 150 µs).
        "The Tuning Control Register at offset 0x40 resets to 0x0001 and settles in 150 μs.",
        # Another register, a bare number, a value far from the name: nothing to compare.
        "The Tuning Status Register resets to 0x10.",
        "The Tuning Control Register has 3 modes.",
        "The Tuning Control Register is described in the section on the sampling clock "
        "tuning procedure, which also explains that the tuning block needs 0x10 cycles.",
        # A markdown table inside a passage is not prose.
        "| Register | Reset |\n|---|---|\n| Tuning Control Register | 0x10 |",
    ],
)
def test_no_conflict(prose: str) -> None:
    assert find_conflicts({1: source(ROW, "table_row"), 2: source(prose)}) == []


def test_a_value_belongs_to_the_nearest_name_before_it() -> None:
    table = (
        "| Mode | Max Clock |\n|---|---|\n| High Speed | 52 MHz |\n| Default Speed | 26 MHz |\n"
        "| Speed | 10 MHz |"
    )
    agreeing = "High Speed reaches 52 MHz; in Default Speed mode the clock must not exceed 26 MHz."
    assert find_conflicts({1: source(table, "table"), 2: source(agreeing)}) == []
    # "Speed" inside "High Speed" is not the Speed row; the High Speed row disagrees.
    (conflict,) = find_conflicts(
        {1: source(table, "table"), 2: source("High Speed runs at 60 MHz.")}
    )
    assert (conflict.subject, conflict.table_value) == ("High Speed", "52 MHz")


def test_a_bit_range_is_no_name() -> None:
    row = "[Table 3: Host Control] Bits: 15:8 | Field: Timeout Counter Value | Reset: 0x0E"
    prose = source("Bits 15:8 count up to 0x10 cycles.")
    assert find_conflicts({1: source(row, "table_row"), 2: prose}) == []


def test_only_sources_of_one_document_are_compared() -> None:
    other = source("The Tuning Control Register resets to 0x10.", doc_id="other-spec")
    assert find_conflicts({1: source(ROW, "table_row"), 2: other}) == []


def test_a_whole_table_chunk_is_compared_row_by_row() -> None:
    table = (
        "| Offset | Register | Reset Value |\n|---|---|---|\n"
        "| 0x40 | Tuning Control Register | 0x00000001 |\n"
        "| 0x44 | Tuning Status Register | 0x00000000 |"
    )
    prose = source("The Tuning Status Register resets to 0x8.")
    (conflict,) = find_conflicts({1: source(table, "table"), 2: prose})
    assert (conflict.subject, conflict.table_value) == ("Tuning Status Register", "0x00000000")


CONFLICT = Conflict(
    subject="Tuning Control Register",
    column="Reset Value",
    table="Table 1: Tuning Registers",
    table_value="0x00000001",
    text_value="0x10",
    table_marker=1,
    text_marker=2,
)


def test_an_answer_that_misses_the_conflict_gets_a_cited_note() -> None:
    wrong = "The Tuning Control Register resets to 0x10 [2]."
    text, noted = reconcile(wrong, [CONFLICT])
    assert noted == [CONFLICT]
    assert text == (
        f"{wrong}\n\nNote: the sources disagree on the Reset Value of the Tuning Control "
        "Register: Table 1: Tuning Registers gives 0x00000001 [1], the text gives 0x10 [2]; "
        "the table's value applies."
    )
    # The note passes the answer checks: every value it states is in a source it cites.
    sources = {1: ROW, 2: "After power-on the Tuning Control Register resets to 0x10."}
    assert check_answer(text, sources) == []
    # The table's value without saying the text differs is not enough either.
    assert reconcile("It resets to 0x00000001 [1].", [CONFLICT])[1] == [CONFLICT]


def test_an_answer_giving_the_tables_value_and_the_difference_is_kept() -> None:
    right = "It resets to 0x1 [1]; the text differs and says 0x10 [2]."
    assert reconcile(right, [CONFLICT]) == (right, [])
