"""Ground truth for the `semantic` template: hand-built IR documents, exact expected chunks.

Most tests count with ApproxTokenCounter (one token per word, punctuation run or CJK
character) so every limit below can be worked out by hand.
"""

from __future__ import annotations

import pytest

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import Item, make_doc, texts
from rag_assets_tests.support.metadata import own_metadata

APPROX = ApproxTokenCounter()


def semantic(
    doc: StandardizedDocument,
    max_tokens: int = 512,
    overlap: int = 0,
    min_tokens: int = 0,
    vocabularies: tuple[str, ...] | None = None,
) -> list[ChunkRow]:
    # Short sections stay apart unless a test asks (test_short_sections.py covers merging).
    options = TemplateOptions(
        max_tokens=max_tokens,
        overlap_tokens=overlap,
        min_tokens=min_tokens,
        vocabularies=vocabularies,
    )
    return SemanticTemplate(options).chunk(doc, APPROX)


# --- semantic: heading tree -------------------------------------------------------------

HEADING_TREE: list[Item] = [
    ("paragraph", "Preface text.", None, 1),
    ("title", "Manual", None, 1),
    ("heading", "## 1 Scope", 2, 1),
    ("paragraph", "Scope text.", None, 1),
    ("page_footer", "E-2", None, 1),
    ("page_header", "2026-05-15", None, 2),
    ("heading", "### 1.1 Purpose", 3, 2),
    ("paragraph", "Purpose text.", None, 2),
    ("heading", "1.2 Terms", 3, 2),  # no "#" marker in the text: the level decides
    ("heading", "## 2 Design", 2, 3),
    ("paragraph", "Design text.", None, 3),
    ("heading", "# Appendix", 1, 4),
    ("heading", "### A.1 Deep", 3, 4),  # skips level 2: nests directly under the H1
    ("paragraph", "Deep text.", None, 4),
]


def test_semantic_heading_tree_paths_and_heading_lines() -> None:
    rows = semantic(make_doc(HEADING_TREE))

    # Headings with nothing of their own under them (the title "Manual", "1.2 Terms",
    # "Appendix") give no chunk; their titles are in the paths below them.
    assert [(r.header_path, r.headings, r.text) for r in rows] == [
        ("/", [], "Preface text."),
        ("/Manual/", ["Manual", "1 Scope"], "## 1 Scope\n\nScope text."),
        (
            "/Manual/1 Scope/",
            ["Manual", "1 Scope", "1.1 Purpose"],
            "### 1.1 Purpose\n\nPurpose text.",
        ),
        # A shallower level pops the H3 ("1.2 Terms", same level, popped "1.1") and the H2.
        ("/Manual/", ["Manual", "2 Design"], "## 2 Design\n\nDesign text."),
        # An H1 heading pops the title (a title ranks as level 1).
        ("/Appendix/", ["Appendix", "A.1 Deep"], "### A.1 Deep\n\nDeep text."),
    ]
    assert not any("E-2" in r.text or "2026-05-15" in r.text for r in rows)


def test_semantic_section_number_and_metadata() -> None:
    doc = make_doc(
        [
            ("heading", "## 7.4.1 Timing", 2, 1),
            ("paragraph", "Setup time.", None, 1),
            ("heading", "## Overview", 2, 1),
            ("paragraph", "Plain.", None, 1),
            ("heading", "## 3. Scope", 2, 2),
            ("paragraph", "Scope.", None, 2),
        ]
    )
    rows = semantic(doc)

    assert [(r.logical_unit, own_metadata(r), r.chunk_type) for r in rows] == [
        ("7.4.1", {"contains_table": False, "section_number": "7.4.1"}, "text"),
        (None, {"contains_table": False}, "text"),
        ("3", {"contains_table": False, "section_number": "3"}, "text"),
    ]


def test_semantic_slash_in_title_is_mapped_in_header_path_only() -> None:
    doc = make_doc(
        [
            ("heading", "## I/O Ports", 2, 1),
            ("heading", "### Pins", 3, 1),
            ("paragraph", "Pin text.", None, 1),
        ]
    )
    [row] = semantic(doc)

    assert row.header_path == "/I\u2215O Ports/"
    assert row.headings == ["I/O Ports", "Pins"]


# --- semantic: packing and splitting -----------------------------------------------------


def test_semantic_packs_whole_elements_and_never_splits_a_fitting_list_or_table() -> None:
    # Tokens: heading 2, paragraph 10, list 12, table 16 (5 a row, 1 for the rule).
    paragraph = "one two three four five six seven eight nine ten"
    list_text = "- alpha beta gamma\n- delta epsilon zeta\n- eta theta iota"
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"
    doc = make_doc(
        [
            ("heading", "## S", 2, 1),
            ("paragraph", paragraph, None, 1),
            ("list", list_text, None, 1),
            ("table", table, None, 2),
        ]
    )
    rows = semantic(doc, max_tokens=25, overlap=5)

    # 2 + 10 + 12 = 24 fits; adding the table (16) would not, so it opens a chunk
    # whole. The list (12 tokens) exceeds the overlap budget (5): no overlap.
    assert texts(rows) == [
        f"## S\n\n{paragraph}\n\n{list_text}",
        f"## S\n\n{table}",
    ]
    assert [r.token_count for r in rows] == [24, 18]
    assert [r.chunk_type for r in rows] == ["text", "table"]
    assert [r.metadata["contains_table"] for r in rows] == [False, True]


def test_semantic_oversized_list_splits_at_items_keeping_nested_items() -> None:
    items = [
        "- a1 a2 a3 a4",
        "- b1 b2 b3 b4\n  - nested n1",  # the nested line stays with its item
        "- c1 c2 c3 c4",
        "- d1 d2 d3 d4",
    ]
    doc = make_doc([("heading", "## L", 2, 1), ("list", "\n".join(items), None, 1)])
    # Items cost 5, 8, 5, 5 tokens; heading 2; limit 14. Were the nested line an item of
    # its own, it would be packed apart from "b".
    rows = semantic(doc, max_tokens=14)

    assert texts(rows) == [
        f"## L\n\n{items[0]}",
        f"## L\n\n{items[1]}",
        f"## L\n\n{items[2]}\n{items[3]}",
    ]
    assert all(r.chunk_type == "text" for r in rows)


@pytest.mark.parametrize("kind", ["table", "toc"])  # adapters may render a TOC as a table
def test_semantic_oversized_table_splits_at_rows_with_header_repeated(kind: str) -> None:
    header = "| Key | Value |\n|---|---|"
    rows_md = [f"| r{i} | v{i} |" for i in range(1, 6)]
    doc = make_doc([("heading", "## T", 2, 1), (kind, header + "\n" + "\n".join(rows_md), None, 1)])
    # Heading 2 + header 6 leaves 14 of 22 tokens: two 5-token rows per chunk.
    rows = semantic(doc, max_tokens=22, overlap=5)

    # With overlap 5, each chunk after the first starts with the previous chunk's last row.
    parts = [
        f"## T\n\n{header}\n{rows_md[0]}\n{rows_md[1]}",
        f"## T\n\n{header}\n{rows_md[1]}\n{rows_md[2]}",
        f"## T\n\n{header}\n{rows_md[2]}\n{rows_md[3]}",
        f"## T\n\n{header}\n{rows_md[3]}\n{rows_md[4]}",
    ]
    is_table = kind == "table"
    # A split table also gets its outline (test_a_split_table_gets_an_outline_chunk).
    outline = [f"## T\n\n{header}\n\nRows: r1; r2; r3; r4; r5"] if is_table else []
    assert texts(rows) == parts + outline
    assert [r.token_count for r in rows[:4]] == [18, 18, 18, 18]
    assert all((r.chunk_type == "table") == is_table for r in rows)
    assert all(r.metadata["contains_table"] == is_table for r in rows)


def test_a_split_table_gets_an_outline_chunk() -> None:
    # A statement split over chunks: no part holds both "Revenue" and "Net income", the
    # outline names every row under the table's caption and header.
    header = "| (in millions) | 2017 | 2016 |\n|---|---|---|"
    labels = ["Revenue", "Cost of sales", "Gross profit", "Operating income", "Net income"]
    table = (
        header + "\n" + "\n".join(f"| {label} | {i} | {i + 1} |" for i, label in enumerate(labels))
    )
    doc = make_doc(
        [
            ("heading", "## Statements", 2, 1),
            ("caption", "Consolidated Statements of Income", None, 1),
            ("table", table, None, 2),
            ("paragraph", "After the table.", None, 2),
        ]
    )
    rows = semantic(doc, max_tokens=40)
    outlines = [r for r in rows if r.metadata.get("table_outline")]
    assert len(outlines) == 1
    outline = outlines[0]
    assert outline.text == (
        f"## Statements\n\nConsolidated Statements of Income\n\n{header}\n\n"
        "Rows: Revenue; Cost of sales; Gross profit; Operating income; Net income"
    )
    assert not any("Revenue" in r.text and "Net income" in r.text for r in rows if r is not outline)
    # It cites the table's page and counts as a table chunk.
    assert (outline.chunk_type, outline.page_start, outline.page_end) == ("table", 2, 2)
    assert all(r.token_count <= 40 for r in rows)
    # Labels that would pass the limit are left out from the end; with no room for the header
    # rows, the parts still name their table by its caption.
    short = semantic(doc, max_tokens=20)
    assert [r.text.split("Rows: ")[-1] for r in short if r.metadata.get("table_outline")] == [
        "Revenue; Cost of sales"
    ]
    assert all("Consolidated Statements of Income" in r.text for r in short)
    assert all(r.token_count <= 20 for r in short)
    # A table that fits one chunk is its own outline: none is added.
    assert not any(r.metadata.get("table_outline") for r in semantic(doc, max_tokens=512))


def test_a_split_tables_parts_keep_its_column_heads_when_its_header_rows_do_not_fit() -> None:
    # The row labels' header is a long unit line: repeated whole in every part, with the
    # caption, it would take more than half of each chunk.
    units = "Years ended December 31 (in millions of dollars, except per share amounts and ratios)"
    header = f"| {units} | 2022 | 2021 | 2020 |\n|---|---|---|---|"
    body = [f"| Line item {i} | {i},100 | {i},200 | {i},300 |" for i in range(1, 9)]
    doc = make_doc(
        [
            ("heading", "## Summary", 2, 1),
            ("caption", "Table 1: Summary of Financial Performance", None, 1),
            ("table", header + "\n" + "\n".join(body), None, 1),
        ]
    )
    rows = [r for r in semantic(doc, max_tokens=48, overlap=0) if "| Line item" in r.text]
    assert len(rows) >= 3 and all(r.token_count <= 48 for r in rows)
    # The first part holds the header rows whole, the later ones the periods, under the caption.
    assert header in rows[0].text
    heads = "|  | 2022 | 2021 | 2020 |\n|---|---|---|---|"
    for row in rows[1:]:
        assert units not in row.text
        assert f"Table 1: Summary of Financial Performance\n\n{heads}\n| Line item" in row.text


def test_semantic_split_table_names_its_table_in_every_part() -> None:
    header = "| Key | Value |\n|---|---|"
    rows_md = [f"| r{i} | v{i} |" for i in range(1, 7)]
    table = header + "\n" + "\n".join(rows_md)
    doc = make_doc(
        [
            ("heading", "## T", 2, 1),
            ("caption", "Table 3 Fees", None, 1),
            ("table", table, None, 1),
            ("paragraph", "After the table.", None, 1),
        ]
    )
    rows = semantic(doc, max_tokens=24, overlap=0)
    parts = [r.text for r in rows if "| r" in r.text]
    assert len(parts) >= 3
    # The caption's own chunk holds it once; every later part repeats it before the header.
    assert parts[0].count("Table 3 Fees") == 1
    assert all(part.startswith(f"## T\n\nTable 3 Fees\n\n{header}\n") for part in parts[1:])
    # Below the table, as some documents place it, the caption is repeated the same way.
    below = make_doc(
        [("heading", "## T", 2, 1), ("table", table, None, 1), ("caption", "Table 3 Fees", None, 1)]
    )
    later = [r.text for r in semantic(below, max_tokens=24, overlap=0) if "| r" in r.text]
    assert all(text.count("Table 3 Fees") == 1 for text in later)
    # Other split elements carry no caption.
    plain = make_doc(
        [
            ("heading", "## T", 2, 1),
            ("caption", "Figure 1", None, 1),
            ("list", "\n".join(f"- item {i} of the list" for i in range(12)), None, 1),
        ]
    )
    assert sum("Figure 1" in r.text for r in semantic(plain, max_tokens=24, overlap=0)) == 1


def test_semantic_table_header_too_large_to_repeat_is_left_out_of_the_parts() -> None:
    header = (
        "| Register offset in bytes | Field name as specified | Access type and reset value |\n"
        "|---|---|---|"
    )
    rows_md = ["| 0x04 | HC | RW |", "| 0x08 | PC | RO |", "| 0x0C | BG | RW |"]
    doc = make_doc(
        [("heading", "## T", 2, 1), ("table", header + "\n" + "\n".join(rows_md), None, 1)]
    )
    # Heading 2 + header 20 tokens: over the limit of 16 alone. Rows are 7 tokens each.
    rows = semantic(doc, max_tokens=16)

    assert texts(rows) == [
        f"## T\n\n{rows_md[0]}\n{rows_md[1]}",
        f"## T\n\n{rows_md[2]}",
    ]
    assert all(r.token_count <= 16 for r in rows)
    # With heading line at most half the limit (20 of 40) it is repeated in every part.
    parts = [r for r in semantic(doc, max_tokens=40) if not r.metadata.get("table_outline")]
    assert len(parts) == 2 and all(r.text.startswith(f"## T\n\n{header}\n") for r in parts)


def test_semantic_oversized_code_splits_at_lines_with_fences_repeated() -> None:
    lines = [f"x{i} = {i}" for i in range(1, 5)]
    code = "```python\n" + "\n".join(lines) + "\n```"
    doc = make_doc([("heading", "## C", 2, 1), ("code", code, None, 1)])
    # Heading 2 + fences 2 leave 8 of 12 tokens: two 3-token lines per chunk.
    rows = semantic(doc, max_tokens=12)

    assert texts(rows) == [
        f"## C\n\n```python\n{lines[0]}\n{lines[1]}\n```",
        f"## C\n\n```python\n{lines[2]}\n{lines[3]}\n```",
    ]


SENTENCES = [
    "Alpha one two three.",
    "Beta one two three!",
    "Gamma one two three?",
    "Delta one two three.",
    "Epsilon one two three.",
    "Zeta one two three.",
]


def test_semantic_oversized_paragraph_splits_at_sentences_with_overlap() -> None:
    doc = make_doc([("heading", "## 2 Body", 2, 1), ("paragraph", " ".join(SENTENCES), None, 1)])
    # Heading 3 + three 4-token sentences = 15; overlap carries one sentence (4 <= 4).
    rows = semantic(doc, max_tokens=15, overlap=4)

    assert texts(rows) == [
        "## 2 Body\n\n" + " ".join(SENTENCES[0:3]),
        "## 2 Body\n\n" + " ".join(SENTENCES[2:5]),
        "## 2 Body\n\n" + " ".join(SENTENCES[4:6]),
    ]
    assert {(r.header_path, tuple(r.headings), r.logical_unit) for r in rows} == {
        ("/", ("2 Body",), "2")
    }
    # Offsets: the first chunk covers the heading, later ones only their sentences.
    for row in rows:
        body = row.text.removeprefix("## 2 Body\n\n")
        assert doc.markdown[row.start_char : row.end_char].endswith(body)
    assert doc.markdown[rows[1].start_char : rows[1].end_char] == " ".join(SENTENCES[2:5])
    assert rows[0].start_char == 0


@pytest.mark.parametrize(
    ("overlap", "parts"),
    [(0, [(0, 3), (3, 5)]), (4, [(0, 3), (2, 5)])],
)
def test_semantic_splits_an_oversized_section_into_near_equal_parts(
    overlap: int, parts: list[tuple[int, int]]
) -> None:
    doc = make_doc([("heading", "## B", 2, 1), ("paragraph", " ".join(SENTENCES[:5]), None, 1)])
    # Heading 2 + five 4-token sentences = 22 > 18: two parts either way. Filled greedily they
    # would be 4 sentences and a tail of 1, which BM25 ranks first for the section's words.
    rows = semantic(doc, max_tokens=18, overlap=overlap)

    assert texts(rows) == ["## B\n\n" + " ".join(SENTENCES[a:b]) for a, b in parts]


def test_semantic_paragraph_numbers_stay_with_their_paragraph() -> None:
    body = "1. Alpha one two three.\n2. Beta one two three.\niv. Gamma one two three."
    doc = make_doc([("heading", "## N", 2, 1), ("paragraph", body, None, 1)])
    # Heading 2 + two 5-token numbered sentences = 12: each part opens with its number.
    rows = semantic(doc, max_tokens=12)

    assert texts(rows) == [
        "## N\n\n1. Alpha one two three.\n2. Beta one two three.",
        "## N\n\niv. Gamma one two three.",
    ]


def test_semantic_splits_cjk_paragraph_at_cjk_sentence_ends() -> None:
    doc = make_doc(
        [
            ("heading", "## 中", 2, 1),
            ("paragraph", "第一句話。第二句話！第三句話？第四句話。", None, 1),
        ]
    )
    # Heading 2 ("##", "中") + two 5-character sentences = 12.
    rows = semantic(doc, max_tokens=12)

    assert texts(rows) == ["## 中\n\n第一句話。第二句話！", "## 中\n\n第三句話？第四句話。"]


def test_semantic_cuts_a_sentence_over_the_limit_between_words() -> None:
    words = [f"w{i}" for i in range(1, 26)]
    doc = make_doc([("heading", "## W", 2, 1), ("paragraph", " ".join(words), None, 1)])
    rows = semantic(doc, max_tokens=12)

    # No sentence end: the one sentence is cut into windows of 12 - 2 = 10 words.
    assert texts(rows) == [
        "## W\n\n" + " ".join(words[0:10]),
        "## W\n\n" + " ".join(words[10:20]),
        "## W\n\n" + " ".join(words[20:25]),
    ]


def test_semantic_overlap_never_repeats_a_whole_previous_chunk() -> None:
    long = "b1 b2 b3 b4 b5 b6 b7"
    doc = make_doc(
        [
            ("heading", "## O", 2, 1),
            ("paragraph", "a1 a2 a3", None, 1),
            ("paragraph", long, None, 1),
        ]
    )
    rows = semantic(doc, max_tokens=10, overlap=5)

    assert texts(rows) == ["## O\n\na1 a2 a3", f"## O\n\n{long}"]


def test_semantic_overlap_is_dropped_when_the_next_element_needs_the_room() -> None:
    doc = make_doc(
        [
            ("heading", "## O", 2, 1),
            ("paragraph", "a1 a2 a3 a4", None, 1),
            ("paragraph", "c1 c2", None, 1),
            ("paragraph", "d1 d2 d3 d4 d5 d6 d7", None, 1),
        ]
    )
    rows = semantic(doc, max_tokens=10, overlap=4)

    # "c1 c2" would be carried over, but 2 + 2 + 7 > 10.
    assert texts(rows) == ["## O\n\na1 a2 a3 a4\n\nc1 c2", "## O\n\nd1 d2 d3 d4 d5 d6 d7"]


# --- provenance ---------------------------------------------------------------------------


def test_semantic_pages_and_char_offsets_follow_the_markdown() -> None:
    doc = make_doc(
        [
            ("heading", "## 1 Intro", 2, 1),
            ("paragraph", "Alpha text.", None, 1),
            ("paragraph", "Beta text.", None, 2),
            ("heading", "## 2 Next", 2, 3),
            ("paragraph", "Gamma.", None, 3),
        ]
    )
    rows = semantic(doc)

    assert [(r.page_start, r.page_end, r.start_char, r.end_char) for r in rows] == [
        (1, 2, 0, 35),
        (3, 3, 37, 54),
    ]
    assert [doc.markdown[r.start_char : r.end_char] for r in rows] == texts(rows)
    assert {(r.doc_id, r.source_path, r.source_sha256, r.template) for r in rows} == {
        ("doc-1", "inbox/manual.pdf", "ab" * 32, "semantic")
    }


def test_semantic_chunk_ids_are_deterministic_and_indexes_contiguous() -> None:
    doc = make_doc(HEADING_TREE)
    first, second = semantic(doc, max_tokens=6, overlap=2), semantic(doc, max_tokens=6, overlap=2)

    assert [r.chunk_id for r in first] == [r.chunk_id for r in second]
    assert [r.chunk_index for r in first] == list(range(len(first)))
    assert [r.chunk_id for r in first] == [
        chunk_id_for("doc-1", "semantic", r.chunk_index, r.text) for r in first
    ]
    assert len({r.chunk_id for r in first}) == len(first)
    other = semantic(make_doc(HEADING_TREE, doc_id="doc-2"), max_tokens=6, overlap=2)
    assert not {r.chunk_id for r in first} & {r.chunk_id for r in other}


def test_semantic_empty_document_gives_no_chunks() -> None:
    assert semantic(make_doc([])) == []
    assert semantic(make_doc([("page_footer", "E-2", None, 1)])) == []


# --- semantic: a title in two headings, a table's unlabelled header rows ----------------


def test_an_empty_sibling_heading_stays_in_the_context_of_the_heading_under_it() -> None:
    # A statement's title and its unit line come as two headings of one level; the unit
    # line's section holds the table. The title is no ancestor, yet it names the table.
    doc = make_doc(
        [
            ("heading", "## Harbour Lines, Inc.", 2, 1),
            ("heading", "### Consolidated Balance Sheets", 3, 1),
            ("heading", "### (in thousands)", 3, 1),
            ("paragraph", "Total current liabilities were 5,466.", None, 1),
            ("heading", "### 3.1 Reserved", 3, 2),
            ("heading", "### 3.2 Timing", 3, 2),
            ("paragraph", "Timing text.", None, 2),
        ]
    )
    balance, timing = semantic(doc, vocabularies=("finance",))
    assert balance.context_text.startswith(
        "Harbour Lines, Inc. › Consolidated Balance Sheets › "
        "balance sheet, statement of financial position\n\n### (in thousands)\n\n"
    )
    # The structure stays the author's: the carried title is context, not a path.
    assert (balance.header_path, balance.headings) == (
        "/Harbour Lines, Inc./",
        ["Harbour Lines, Inc.", "(in thousands)"],
    )
    # Numbered sections tell themselves apart: 3.1 is not carried into 3.2.
    assert "3.1 Reserved" not in timing.context_text
    # The statement's kind is metadata a search can filter on; other sections have none.
    assert balance.metadata["financial_statement"] == "balance sheet"
    assert "financial_statement" not in timing.metadata


def test_a_split_table_repeats_the_rows_that_name_its_columns() -> None:
    rows = "\n".join(f"| Item {i} | {i},000 | {i},500 |" for i in range(12))
    statement = (
        f"|  | As of December 31, |  |\n|---|---|---|\n|  | 2017 | 2016 |\n| Assets |  |  |\n{rows}"
    )
    chunks = semantic(make_doc([("table", statement, None, 1)]), max_tokens=60)
    assert len(chunks) > 2
    assert all("|  | 2017 | 2016 |" in c.text for c in chunks)
    # A first row without a label that holds values is data, said once.
    data = "|  | Date |  |\n|---|---|---|\n|  | 4,100 | 7 |\n" + rows
    parts = semantic(make_doc([("table", data, None, 1)]), max_tokens=40)
    assert len(parts) > 2 and sum("| 4,100 |" in c.text for c in parts) == 1
