"""Headings alone give no chunk in any template; short sections are merged, not indexed
alone (`min_tokens`); the chunk check that no chunk is empty or only headings.

Counts use ApproxTokenCounter (one token per word, punctuation run or CJK character):
`## 1 Intro` is 3 tokens, `Short text.` 2.
"""

from __future__ import annotations

import pytest

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.tabular import to_arrow, to_records
from rag_assets.quality.chunks import check_chunks_have_content
from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.registry import build_template
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.spec import SpecOptions, SpecTemplate
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import Item, assert_blocking_checks_pass, make_doc

APPROX = ApproxTokenCounter()
TEN = "one two three four five six seven eight nine ten."


def semantic(items: list[Item], max_tokens: int = 64, min_tokens: int = 8) -> list[ChunkRow]:
    doc = make_doc(items)
    options = TemplateOptions(max_tokens=max_tokens, overlap_tokens=0, min_tokens=min_tokens)
    rows = SemanticTemplate(options).chunk(doc, APPROX)
    assert_blocking_checks_pass(rows, doc)
    return rows


def summary(rows: list[ChunkRow]) -> list[tuple[list[str], str, list[str] | None]]:
    return [(r.headings, r.text, r.metadata.get("merged_sections")) for r in rows]


# --- merging short sections ----------------------------------------------------------------


def test_short_section_merges_forward_into_its_next_sibling() -> None:
    rows = semantic(
        [
            ("heading", "## 1 Intro", 2, 1),
            ("paragraph", "Short text.", None, 1),
            ("heading", "## 2 Body", 2, 2),
            ("paragraph", TEN, None, 2),
        ]
    )

    # "1 Intro" is 5 tokens (< 8): it opens the chunk and names it.
    assert summary(rows) == [
        (["1 Intro"], f"## 1 Intro\n\nShort text.\n\n## 2 Body\n\n{TEN}", ["2 Body"])
    ]
    [row] = rows
    assert (row.header_path, row.logical_unit, row.metadata["section_number"]) == ("/", "1", "1")
    assert (row.page_start, row.page_end) == (1, 2)
    assert row.token_count == 18


def test_short_parent_merges_forward_into_its_first_child() -> None:
    rows = semantic(
        [
            ("heading", "# 3 Top", 1, 1),
            ("paragraph", "Lead.", None, 1),
            ("heading", "## 3.1 Child", 2, 1),
            ("paragraph", TEN, None, 1),
            ("heading", "## 3.2 Other", 2, 1),
            ("paragraph", TEN, None, 1),
        ]
    )

    assert summary(rows) == [
        (["3 Top"], f"# 3 Top\n\nLead.\n\n## 3.1 Child\n\n{TEN}", ["3.1 Child"]),
        (["3 Top", "3.2 Other"], f"## 3.2 Other\n\n{TEN}", None),
    ]
    assert rows[1].header_path == "/3 Top/"


def test_short_sections_chain_forward_while_still_short() -> None:
    rows = semantic(
        [
            ("heading", "## A", 2, 1),
            ("paragraph", "a.", None, 1),
            ("heading", "## B", 2, 1),
            ("paragraph", "b.", None, 1),
            ("heading", "## C", 2, 1),
            ("paragraph", TEN, None, 1),
            ("heading", "## D", 2, 1),
            ("paragraph", TEN, None, 1),
        ]
    )

    # A (3) + B (3) = 7 < 8, so C joins too; then 20 tokens, no longer short: D stays apart.
    assert summary(rows) == [
        (["A"], f"## A\n\na.\n\n## B\n\nb.\n\n## C\n\n{TEN}", ["B", "C"]),
        (["D"], f"## D\n\n{TEN}", None),
    ]


def test_short_section_merges_back_when_what_follows_is_not_its_sibling_or_child() -> None:
    rows = semantic(
        [
            ("heading", "# 1 Part", 1, 1),
            ("heading", "## 1.1 First", 2, 1),
            ("paragraph", TEN, None, 1),
            ("heading", "## 1.2 Last", 2, 1),
            ("paragraph", "Tiny.", None, 1),
            ("heading", "# 2 Next", 1, 2),
            ("paragraph", TEN, None, 2),
        ]
    )

    # "2 Next" is an uncle of "1.2 Last": it goes back into its sibling's chunk.
    assert summary(rows) == [
        (["1 Part", "1.1 First"], f"## 1.1 First\n\n{TEN}\n\n## 1.2 Last\n\nTiny.", ["1.2 Last"]),
        (["2 Next"], f"# 2 Next\n\n{TEN}", None),
    ]


def test_short_section_stays_alone_when_no_neighbour_fits_or_nests() -> None:
    items: list[Item] = [
        ("heading", "# 1 Part", 1, 1),
        ("heading", "## 1.1 First", 2, 1),
        ("paragraph", TEN, None, 1),
        ("heading", "# 2 Short", 1, 1),
        ("paragraph", "Tiny.", None, 1),
        ("heading", "# 3 Next", 1, 2),
        ("paragraph", TEN, None, 2),
    ]
    # Forward: 4 + 13 = 17 tokens > 16; back: "1.1 First" is no sibling or parent of "2 Short".
    assert [r.text for r in semantic(items, max_tokens=16)] == [
        f"## 1.1 First\n\n{TEN}",
        "# 2 Short\n\nTiny.",
        f"# 3 Next\n\n{TEN}",
    ]
    # With room, it merges forward into its sibling.
    assert [r.text for r in semantic(items, max_tokens=17)][1:] == [
        f"# 2 Short\n\nTiny.\n\n# 3 Next\n\n{TEN}"
    ]


def test_short_section_joins_only_the_first_chunk_of_a_long_section() -> None:
    sentences = " ".join(f"S{i} a b c." for i in range(1, 7))  # six 4-token sentences
    rows = semantic(
        [
            ("heading", "## A", 2, 1),
            ("paragraph", "a.", None, 1),
            ("heading", "## B", 2, 1),
            ("paragraph", sentences, None, 1),
        ],
        max_tokens=17,
    )

    # "## B" + three sentences = 14; "## A\n\na." (3) fits before the first of B's chunks only.
    assert summary(rows) == [
        (["A"], "## A\n\na.\n\n## B\n\nS1 a b c. S2 a b c. S3 a b c.", ["B"]),
        (["B"], "## B\n\nS4 a b c. S5 a b c. S6 a b c.", None),
    ]
    assert all(r.token_count <= 17 for r in rows)


def test_min_tokens_zero_keeps_every_section_apart_and_is_an_option() -> None:
    items: list[Item] = [
        ("heading", "## 1 Intro", 2, 1),
        ("paragraph", "Short text.", None, 1),
        ("heading", "## 2 Body", 2, 2),
        ("paragraph", TEN, None, 2),
    ]
    assert len(semantic(items, min_tokens=0)) == 2
    assert TemplateOptions().min_tokens == 32
    template = build_template("semantic", {"min_tokens": 0})
    assert len(template.chunk(make_doc(items), APPROX)) == 2
    assert len(build_template("semantic").chunk(make_doc(items), APPROX)) == 1


def test_spec_body_merges_short_sections_by_its_option() -> None:
    doc = make_doc(
        [
            ("heading", "## 1 Intro", 2, 1),
            ("paragraph", "Short text.", None, 1),
            ("heading", "## 2 Body", 2, 1),
            ("paragraph", TEN, None, 1),
        ]
    )
    merged = SpecTemplate(SpecOptions(min_tokens=8)).chunk(doc, APPROX)
    apart = SpecTemplate(SpecOptions(min_tokens=0)).chunk(doc, APPROX)

    assert [r.text for r in merged] == [f"## 1 Intro\n\nShort text.\n\n## 2 Body\n\n{TEN}"]
    assert len(apart) == 2


# --- headings alone --------------------------------------------------------------------------

TEMPLATES = ["semantic", "fixed", "qa_pairs", "clauses", "spec"]


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_document_title_alone_is_no_chunk(name: str) -> None:
    doc = make_doc([("title", "Operations Manual", None, 1)])
    assert (
        build_template(name, {"llm_structure": "off"} if name == "qa_pairs" else {}).chunk(
            doc, APPROX
        )
        == []
    )


@pytest.mark.parametrize("name", TEMPLATES)
def test_headings_without_content_give_no_chunk_in_any_template(name: str) -> None:
    doc = make_doc(
        [
            ("title", "Operations Manual", None, 1),
            ("heading", "# 7 Data transfer", 1, 1),
            ("heading", "## 7.4 Block operations", 2, 1),
            ("paragraph", f"Article 1 Scope\n{TEN}", None, 1),
            ("heading", "## 7.5 Reserved", 2, 2),
        ]
    )
    options = {"min_tokens": 0, **({"llm_structure": "off"} if name == "qa_pairs" else {})}
    template = build_template(name, options)
    rows = template.chunk(doc, APPROX)

    assert rows
    assert not any(r.text.strip() in {"# 7 Data transfer", "## 7.5 Reserved"} for r in rows)
    assert_blocking_checks_pass(rows, doc, headings_from_text=template.headings_from_text)


def test_qa_topic_whose_notes_are_dropped_gives_no_chunk() -> None:
    doc = make_doc(
        [
            ("heading", "## 背景", 2, 1),
            ("paragraph", "[內部參考：只供內部參閱。]", None, 1),
            ("heading", "## 備用問答", 2, 1),
            ("paragraph", "問 A1：何時完成？", None, 1),
            ("paragraph", "答 A1：明年。", None, 1),
        ]
    )
    kept = build_template("qa_pairs", {"llm_structure": "off"}).chunk(doc, APPROX)
    dropped = build_template("qa_pairs", {"llm_structure": "off", "internal_notes": "drop"}).chunk(
        doc, APPROX
    )

    assert [r.metadata["section_type"] for r in kept] == ["narrative", "qa"]
    assert [r.text for r in dropped] == ["問 A1：何時完成？\n\n答 A1：明年。"]
    assert_blocking_checks_pass(dropped, doc, headings_from_text=True)


def test_spec_section_holding_only_a_table_has_its_heading_on_the_table_chunks() -> None:
    doc = make_doc(
        [
            ("heading", "## 4.3 Power", 2, 1),
            ("table", "| Offset | Name |\n|---|---|\n| 0x0C | Power State |", None, 1),
        ]
    )
    rows = SpecTemplate(SpecOptions()).chunk(doc, APPROX)

    assert [(r.chunk_type, r.text) for r in rows] == [
        ("table", "## 4.3 Power\n\n| Offset | Name |\n|---|---|\n| 0x0C | Power State |"),
        ("table_row", "[4.3 Power] Offset: 0x0C | Name: Power State"),
    ]


# --- the check -------------------------------------------------------------------------------


def records(rows: list[ChunkRow]) -> list[dict]:
    return to_records(to_arrow(rows, ChunkRow), ChunkRow)


def test_check_flags_empty_and_heading_only_chunks() -> None:
    doc = make_doc(
        [
            ("title", "Operations Manual", None, 1),
            ("heading", "# 7 Data transfer", 1, 1),
            ("heading", "## 7.4 Block operations", 2, 1),
            ("paragraph", TEN, None, 1),
        ]
    )
    good = SemanticTemplate().chunk(doc, APPROX)
    assert check_chunks_have_content(records(good), doc).passed

    row = good[0]
    heading_only = row.model_copy(update={"text": "## 7.4 Block operations\n"})
    two_headings = row.model_copy(update={"text": "# 7 Data transfer\n\n## 7.4 Block operations"})
    empty = row.model_copy(update={"text": " \n"})
    found = check_chunks_have_content(records([heading_only, two_headings, empty]), doc)
    assert not found.passed
    assert found.description.count("only a heading") == 2 and "empty text" in found.description

    # A window of the baseline has no headings of its own: the heading elements it spans count.
    [window] = build_template("fixed", {"max_tokens": 5, "overlap_tokens": 0}).chunk(doc, APPROX)[
        :1
    ]
    title_only = window.model_copy(update={"text": "Operations Manual"})
    assert not check_chunks_have_content(records([title_only]), doc).passed


def test_check_reads_text_headings_as_the_template_names_them() -> None:
    doc = make_doc([("paragraph", "問 A1：何時完成？", None, 1)])
    [row] = build_template("qa_pairs", {"llm_structure": "off"}).chunk(doc, APPROX)
    # A question without an answer is content, even when the IR set it as a heading.
    question = row.model_copy(update={"text": "問 A1：何時完成？", "headings": ["備用問答"]})
    assert check_chunks_have_content(records([question]), doc, headings_from_text=True).passed
    topic = question.model_copy(update={"text": "備用問答"})
    assert not check_chunks_have_content(records([topic]), doc, headings_from_text=True).passed
