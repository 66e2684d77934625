"""The identifiers a question names and the ranking of the candidates holding them."""

from __future__ import annotations

from rag_assets.index.rows import RankedId
from rag_assets.retrieval.identifiers import MATCHED_FIELD, in_question, ranking


def test_a_word_with_a_digit_is_an_identifier() -> None:
    assert in_question("What do bits 15:8 of the Host Control Register hold?") == {"15:8"}
    assert in_question("Offset 0x04, DDR52 and the 4-bit bus (2.1.1)?") == {
        "0x04",
        "ddr52",
        "4-bit",
        "2.1.1",
    }
    assert in_question("主机控制寄存器的偏移地址是0x04吗？2012年") == {"0x04", "2012"}
    assert in_question("How long does a full software reset take?") == frozenset()


def hits(*rows: tuple[str, str]) -> list[RankedId]:
    return [RankedId(chunk_id, 1.0, {MATCHED_FIELD: text}) for chunk_id, text in rows]


# Candidates naming none of the identifiers, as most of a real pool does.
FILLER = [(f"filler{i}", f"The controller resets the bus after power cycle {i}.") for i in "abcde"]


def test_holders_rank_by_how_many_they_hold_then_by_bm25_then_dense() -> None:
    conventions = ("conventions", "Bit ranges are written high:low, so bits 15:8 are a byte.")
    row = ("row", "[Table 3: Host Control Register (Offset 0x04)] Bits: 15:8 | Field: Timeout")
    prose = ("prose", "Bits 15:8 of the Host Control Register hold the Timeout Counter Value.")
    other = ("other", "Bits: 158 | Field: 15 8 | 15:80")  # no whole-word 15:8
    both = ("both", "Offset 0x04, bits 15:8.")
    lists = {
        "bm25": hits(prose, row, other, conventions, *FILLER),
        "dense": hits(conventions, both, row),
        "bm25@documents": hits(row, *FILLER[:2]),
    }
    ranked = ranking(frozenset({"15:8", "0x04"}), lists)
    assert [h.chunk_id for h in ranked] == ["row", "both", "prose", "conventions"]
    assert [h.score for h in ranked] == [2.0, 2.0, 1.0, 1.0]
    # One scope's lists only: the documents a question names are ranked on their own.
    assert [h.chunk_id for h in ranking(frozenset({"15:8"}), lists, "@documents")] == ["row"]
    assert ranking(frozenset({"0x08"}), lists) == []


def test_an_identifier_most_candidates_hold_ranks_nothing() -> None:
    # Every chunk of a filing names its fiscal year through the document's identity: the year
    # tells the candidates apart no more than a stop word, and the rarer identifier still does.
    identity = "3M Company · Form 10-K · fiscal year 2022 › "
    lists = {
        "bm25": hits(
            ("margin", identity + "Operating income margin fell to 19.1%."),
            ("segments", identity + "Sales by business segment, organic change."),
            ("ppe", identity + "Property, plant and equipment, net: 9,178 (note 9)."),
            ("other", "Verizon 2021 annual report: wireless revenue."),
        ),
    }
    assert ranking(frozenset({"2022"}), lists) == []
    assert [h.chunk_id for h in ranking(frozenset({"2022", "19.1"}), lists)] == ["margin"]
