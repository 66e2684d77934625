"""Exact cells and TEDS on hand-worked tables (bench/tables.py's scores), and the expectations
file those scores read."""

from __future__ import annotations

import json
import random

import pytest

from rag_assets.quality.table_scores import (
    ExpectedTable,
    best_offset,
    exact_cells,
    expected_from_entry,
    levenshtein,
    markdown_grid,
    score_tables,
    teds,
)
from rag_assets_tests.conftest import REPO_ROOT

# 1 table + 3 tr + 9 td = 13 nodes: every TEDS below is 1 - distance / 13 unless said otherwise.
ABC = [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]]


def test_identical_table_scores_one():
    score = score_tables(ExpectedTable.from_grid(ABC), [ABC])
    assert (score.exact, score.teds, score.table, score.offset) == (1.0, 1.0, 0, (0, 0))


def test_missing_row():
    ours = [ABC[0], ABC[2]]
    score = score_tables(ExpectedTable.from_grid(ABC), [ours])
    # Row 0 matches where it is; laid one row up, only "g h i" would: the unshifted wins the tie.
    assert score.exact == pytest.approx(3 / 9)
    assert score.offset == (0, 0)
    # One tr and its three tds deleted.
    assert score.teds == pytest.approx(1 - 4 / 13)


def test_rows_merged_into_one():
    ours = [ABC[0], ["d g", "e h", "f i"]]
    score = score_tables(ExpectedTable.from_grid(ABC), [ours])
    assert score.exact == pytest.approx(3 / 9)
    # One row deleted (4) and three cells renamed "d" -> "d g" at 2 edits over 3 characters.
    assert score.teds == pytest.approx(1 - (4 + 3 * 2 / 3) / 13)


def test_shifted_column():
    # Row 1 lost its first cell and the rest moved left into its place.
    ours = [ABC[0], ["e", "f", ""], ABC[2]]
    score = score_tables(ExpectedTable.from_grid(ABC), [ours])
    assert score.exact == pytest.approx(6 / 9)
    # Delete "d", insert "": the moved cells keep their text.
    assert score.teds == pytest.approx(1 - 2 / 13)


def test_whole_table_under_a_title_row_is_aligned():
    ours = [["Title", "", ""], *ABC]
    score = score_tables(ExpectedTable.from_grid(ABC), [ours])
    assert (score.exact, score.offset) == (1.0, (1, 0))
    # The tree still has one row too many: 4 inserted nodes over the larger tree's 17.
    assert score.teds == pytest.approx(1 - 4 / 17)


def test_renamed_cell_costs_its_normalized_edit_distance():
    ours = [ABC[0], ["d", "e", "fx"], ABC[2]]
    assert teds(ABC, ours) == pytest.approx(1 - (1 / 2) / 13)


def test_the_best_aligned_of_several_tables():
    other = [["x", "y"], ["z", "w"]]
    score = score_tables(ExpectedTable.from_grid(ABC), [other, ABC])
    assert (score.table, score.exact, score.teds) == (1, 1.0, 1.0)


def test_no_table_scores_zero():
    assert score_tables(ExpectedTable.from_grid(ABC), []).exact == 0.0
    assert score_tables(ExpectedTable.from_grid(ABC), []).teds == 0.0
    assert score_tables(ExpectedTable.from_rows({0: ["a"]}), []).teds is None


def test_some_rows_only_have_no_teds_and_align_on_their_content():
    # The peer's row 5 of a cropped table is our row 2.
    expected = ExpectedTable.from_rows({5: ["g", "h", "i"]})
    score = score_tables(expected, [ABC])
    assert (score.exact, score.teds, score.offset) == (1.0, None, (-3, 0))


def test_negative_indices_count_from_the_end_and_are_not_shifted():
    expected = ExpectedTable.from_cells({(-1, -2): "h", (0, 0): "a"})
    assert exact_cells(expected, ABC) == 1.0
    # A shift moves (0, 0) off "a" but not the cell counted from the end.
    assert exact_cells(expected, ABC, (1, 0)) == 0.5
    assert exact_cells(expected, [*ABC, ["j", "k", "l"]]) == 0.5


def test_empty_cells_match_only_inside_our_table():
    expected = ExpectedTable.from_grid([["a", ""], ["b", ""]])
    assert exact_cells(expected, [["a", ""], ["b", ""]]) == 1.0
    assert exact_cells(expected, [["a"], ["b"]]) == 0.5


def test_whitespace_collapsed_or_ignored_but_case_kept():
    assert exact_cells(ExpectedTable.from_grid([["Notice  Date"]]), [["Notice\nDate"]]) == 1.0
    assert exact_cells(ExpectedTable.from_grid([["NoticeDate"]]), [["Notice Date"]]) == 0.0
    spaced = ExpectedTable.from_grid([["NoticeDate", "03/25/2016"]], ignore_spaces=True)
    assert exact_cells(spaced, [["Notice Date", "0 3 / 2 5 / 2 0 16"]]) == 1.0
    assert exact_cells(ExpectedTable.from_grid([["Total"]]), [["TOTAL"]]) == 0.0


def test_offset_ties_go_to_the_smallest_shift():
    # "x" is both one row up and one row down from where the peer has it.
    expected = ExpectedTable.from_cells({(1, 0): "x"})
    assert best_offset(expected, [["x"], ["y"], ["x"]]) == ((-1, 0), 1.0)


def test_markdown_grid_reads_our_pipe_tables():
    markdown = "| A \\| B | C |\n|---|:---:|\n| 1<br>2 |  x  y |\n"
    assert markdown_grid(markdown) == [["A | B", "C"], ["1 2", "x y"]]


def test_levenshtein_against_the_textbook_recurrence():
    def reference(a: str, b: str) -> int:
        previous = list(range(len(b) + 1))
        for i, x in enumerate(a, 1):
            current = [i]
            for j, y in enumerate(b, 1):
                current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
            previous = current
        return previous[-1]

    rng = random.Random(7)
    for _ in range(500):
        a = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 80)))
        b = "".join(rng.choice("abcd") for _ in range(rng.randint(0, 80)))
        assert levenshtein(a, b) == reference(a, b)
    assert levenshtein("kitten", "sitting") == 3


def test_expectations_file_is_well_formed(shared_corpus, shared_fixtures):
    expected = json.loads((REPO_ROOT / "bench" / "tables" / "expected.json").read_text())
    shared = shared_corpus.parent
    for entry in [*expected["tables"], *expected["shapes"]]:
        assert (shared / entry["path"]).is_file(), entry["path"]
        assert entry["source"]["repo"] and entry["source"]["test"]
    for entry in expected["tables"]:
        table = expected_from_entry(entry)
        assert table.cells, entry["path"]
        assert table.whole == ("grid" in entry)
        assert entry["page"] is None or entry["page"] >= 1
