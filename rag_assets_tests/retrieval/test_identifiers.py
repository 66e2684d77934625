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


def test_holders_rank_by_how_many_they_hold_then_by_bm25_then_dense() -> None:
    conventions = ("conventions", "Bit ranges are written high:low, so bits 15:8 are a byte.")
    row = ("row", "[Table 3: Host Control Register (Offset 0x04)] Bits: 15:8 | Field: Timeout")
    prose = ("prose", "Bits 15:8 of the Host Control Register hold the Timeout Counter Value.")
    other = ("other", "Bits: 158 | Field: 15 8 | 15:80")  # no whole-word 15:8
    both = ("both", "Offset 0x04, bits 15:8.")
    lists = {
        "bm25": hits(prose, row, other, conventions),
        "dense": hits(conventions, both, row),
        "bm25@documents": hits(row),
    }
    ranked = ranking(frozenset({"15:8", "0x04"}), lists)
    assert [h.chunk_id for h in ranked] == ["row", "both", "prose", "conventions"]
    assert [h.score for h in ranked] == [2.0, 2.0, 1.0, 1.0]
    # One scope's lists only: the documents a question names are ranked on their own.
    assert [h.chunk_id for h in ranking(frozenset({"15:8"}), lists, "@documents")] == ["row"]
    assert ranking(frozenset({"0x08"}), lists) == []
