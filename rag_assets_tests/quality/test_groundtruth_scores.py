"""The scores the parser benchmark and quality tests rely on."""

import pytest

from rag_assets.quality.groundtruth import (
    heading_scores,
    markdown_headings,
    markdown_tables,
    table_scores,
)

REFERENCE = """# Title

## 1 Intro

```bash
# not a heading
```

| **Bits** | Field |
|---|:---:|
| 15:8 | Timeout |

## 2 Registers
"""


def test_headings_ignore_fences_and_emphasis():
    assert markdown_headings(REFERENCE) == [("title", 1), ("1 intro", 2), ("2 registers", 2)]


def test_tables_drop_separator_rows():
    assert markdown_tables(REFERENCE) == [[["bits", "field"], ["15:8", "timeout"]]]


def test_heading_scores_count_text_and_levels():
    expected = [("title", 1), ("1 intro", 2), ("2 registers", 2)]
    scores = heading_scores([("title", 1), ("1 intro", 3), ("extra", 2)], expected)
    assert scores.precision == pytest.approx(2 / 3) and scores.recall == pytest.approx(2 / 3)
    assert scores.level_accuracy == pytest.approx(1 / 2)
    assert heading_scores([], expected).f1 == 0.0


def test_table_scores_take_the_best_matching_table():
    expected = [[["bits", "field"], ["15:8", "timeout"]]]
    assert table_scores([[["x"]], expected[0]], expected).cell_agreement == 1.0
    half = table_scores([[["bits", "field"]]], expected)
    assert half.cell_agreement == pytest.approx(0.5) and (half.found, half.expected) == (1, 1)


def test_escapes_and_in_word_underscores_are_text():
    assert markdown_headings("## 3.3 VERIFY\\_GROUP\\_FOR\\_USER function") == [
        ("3.3 verify_group_for_user function", 2)
    ]
    assert markdown_headings("## _Emphasis_ and **bold**") == [("emphasis and bold", 2)]


def test_a_chapter_number_and_its_title_are_two_headings():
    assert markdown_headings("## 1\n\n## Securing data\n") == [("1", 2), ("securing data", 2)]
