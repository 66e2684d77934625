"""Heading stacks agree with peers' Markdown chunkers, on their own test cases.

The cases are those of LlamaIndex's `MarkdownNodeParser` tests
(llama-index-core/tests/node_parser/test_markdown.py) and LangChain's
`MarkdownHeaderTextSplitter` tests (libs/text-splitters/tests/unit_tests), restated here as
inputs and the heading stack each piece of body text sits under. They go through the real
path: Docling parses the file, the adapter and the repairs build the IR. docling-core's
`HierarchicalChunker` (installed with Docling) is asked live for its headings on the same
documents, and must agree wherever we do not differ on purpose.

Where we differ on purpose, and why (pinned by `test_where_we_differ_on_purpose`, the last
one by `test_semantic_heading_tree_paths_and_heading_lines` in test_semantic.py):
- `    ## Bar` (four spaces): LangChain strips the indentation and splits on it; CommonMark,
  Docling and we read an indented code block, so `## Bar` is code, not a section.
- A byte-order mark before `## Bar` mid-document: LangChain drops invisible characters
  first; CommonMark reads the line as paragraph text, and the text stays as written.
- Bold lines (`**Chapter 1**`): LangChain splits on them when asked (custom patterns);
  Markdown states its structure with `#`, so bold stays emphasis.
- A fence closed by ` ```` ` (one space in): LlamaIndex counts fences line by line and calls
  the rest of the file code; CommonMark closes a fence indented up to three spaces.
- A heading inside a block quote (`> # Quoted`): Docling's stock Markdown backend drops the
  quote and opens a section there (so would docling-core's chunker on its document); we
  read it as quoted text of the section it is in, as LlamaIndex and LangChain do (their
  line starts with `>`), and the text after the quote stays where it was.
- A heading with no body of its own: LlamaIndex emits a node for it; the IR keeps it as a
  heading and `semantic` gives it no chunk (its title lives on in the stacks below it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.docling import DoclingParser

Stacks = list[tuple[tuple[str, ...], str]]  # (heading stack, body text) in reading order


@pytest.fixture(scope="module")
def parser() -> DoclingParser:
    return DoclingParser()


def parse(parser: DoclingParser, tmp_path: Path, markdown: str) -> ParsedDocument:
    path = tmp_path / "case.md"
    path.write_text(markdown, encoding="utf-8")
    return parser.parse(path, "md")


def ir(parsed: ParsedDocument) -> StandardizedDocument:
    return to_ir(parsed, doc_id="case", source_sha256="0" * 64)


def stacks(doc: StandardizedDocument) -> Stacks:
    """Each body element's text under the titles of the headings it sits in."""
    open_headings: list[tuple[int, str]] = []
    out: Stacks = []
    for element in doc.elements:
        if element.type in ("title", "heading"):
            level = element.level or 1
            while open_headings and open_headings[-1][0] >= level:
                open_headings.pop()
            open_headings.append((level, element.text.lstrip("#").strip()))
        elif element.type not in ("page_header", "page_footer"):
            out.append((tuple(title for _, title in open_headings), element.text))
    return out


LLAMAINDEX = {
    "two top-level headers": (
        "# Main Header\n\nHeader 1 content\n\n# Header 2\nHeader 2 content\n    ",
        [(("Main Header",), "Header 1 content"), (("Header 2",), "Header 2 content")],
    ),
    "four levels, a slash in a title": (
        "# Main Header\n\nHeader 1 content\n\n## FAQ\nFAQ content\n\n### 24/7 Support\n"
        "Support content\n\n#### Contact info\nContact info content\n",
        [
            (("Main Header",), "Header 1 content"),
            (("Main Header", "FAQ"), "FAQ content"),
            (("Main Header", "FAQ", "24/7 Support"), "Support content"),
            (("Main Header", "FAQ", "24/7 Support", "Contact info"), "Contact info content"),
        ],
    ),
    "hashes that are no headings": (
        "# Header 1\n\n#Not a header\nAlso # not a header\n    # Still not a header\n",
        [(("Header 1",), "#Not a header Also # not a header # Still not a header")],
    ),
    "text before the first header": (
        "\npre-header content\n\n# Header 1\nContent\n## Sub-header\n",
        [((), "pre-header content"), (("Header 1",), "Content")],
    ),
    "a new top header closes the others": (
        "# Main Header\nContent\n## Sub-header\nContent\n### Sub-sub header\nContent\n"
        "# New title\nClosing\n",
        [
            (("Main Header",), "Content"),
            (("Main Header", "Sub-header"), "Content"),
            (("Main Header", "Sub-header", "Sub-sub header"), "Content"),
            (("New title",), "Closing"),
        ],
    ),
    "a level jump": (
        "# Main Header\nContent\n### Sub-header\nContent\n### Sub-sub header\nContent\n",
        [
            (("Main Header",), "Content"),
            (("Main Header", "Sub-header"), "Content"),
            (("Main Header", "Sub-sub header"), "Content"),
        ],
    ),
    "fences at the top level, in a list item, unbalanced": (
        "Some text\n# Header 1\n## Header 2\n### Header 3\n```txt\nNon indented block code\n```\n"
        "A list begins here:\n\n* Element 1\n\n    ```txt\n    # has some indented code\n    ```\n"
        "* Element 2\n\n```txt\n    # also has some code, unbalanced fences\n ```\n\n"
        "* Element 3\n* Element 4\n### Another Header 3\n ```txt\n# wrongly indented fence\n```\n\n"
        "## Another Header 2\n",
        [
            ((), "Some text"),
            (("Header 1", "Header 2", "Header 3"), "```\nNon indented block code\n```"),
            (("Header 1", "Header 2", "Header 3"), "A list begins here:"),
            (
                ("Header 1", "Header 2", "Header 3"),
                "- Element 1\n  ```\n  # has some indented code\n  ```\n- Element 2",
            ),
            (
                ("Header 1", "Header 2", "Header 3"),
                "```\n    # also has some code, unbalanced fences\n```",
            ),
            (("Header 1", "Header 2", "Header 3"), "- Element 3\n- Element 4"),
            (("Header 1", "Header 2", "Another Header 3"), "```\n# wrongly indented fence\n```"),
        ],
    ),
}

LANGCHAIN = {
    "two levels": (
        "# Foo\n\n## Bar\n\nHi this is Jim\n\nHi this is Joe\n\n ## Baz\n\n Hi this is Molly",
        [
            (("Foo", "Bar"), "Hi this is Jim"),
            (("Foo", "Bar"), "Hi this is Joe"),
            (("Foo", "Baz"), "Hi this is Molly"),
        ],
    ),
    "three and four levels, then back to two": (
        "# Foo\n\n## Bar\n\nHi this is Jim\n\nHi this is Joe\n\n ### Boo \n\n Hi this is Lance \n\n"
        " #### Bim \n\n Hi this is John \n\n ## Baz\n\n Hi this is Molly",
        [
            (("Foo", "Bar"), "Hi this is Jim"),
            (("Foo", "Bar"), "Hi this is Joe"),
            (("Foo", "Bar", "Boo"), "Hi this is Lance"),
            (("Foo", "Bar", "Boo", "Bim"), "Hi this is John"),
            (("Foo", "Baz"), "Hi this is Molly"),
        ],
    ),
    "backtick fence": (
        "# This is a Header\n\n```\nfoo()\n# Not a header\nbar()\n```",
        [(("This is a Header",), "```\nfoo()\n# Not a header\nbar()\n```")],
    ),
    "tilde fence": (
        "# This is a Header\n\n~~~\nfoo()\n# Not a header\nbar()\n~~~",
        [(("This is a Header",), "```\nfoo()\n# Not a header\nbar()\n```")],
    ),
    "interleaved fences": (
        "# This is a Header\n\n```\nfoo\n# Not a header\n~~~\n# Not a header\n```",
        [(("This is a Header",), "```\nfoo\n# Not a header\n~~~\n# Not a header\n```")],
    ),
}

CASES = {f"llamaindex: {k}": v for k, v in LLAMAINDEX.items()} | {
    f"langchain: {k}": v for k, v in LANGCHAIN.items()
}


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_heading_stacks_agree_with_the_peers(parser, tmp_path, name):
    markdown, expected = CASES[name]
    assert stacks(ir(parse(parser, tmp_path, markdown))) == expected


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_heading_stacks_agree_with_docling_core_hierarchical_chunker(parser, tmp_path, name):
    from docling_core.transforms.chunker.hierarchical_chunker import HierarchicalChunker
    from docling_core.types.doc import DoclingDocument

    parsed = parse(parser, tmp_path, CASES[name][0])
    native = DoclingDocument.model_validate(parsed.native)
    theirs = [tuple(c.meta.headings or ()) for c in HierarchicalChunker().chunk(native)]
    ours = [stack for stack, _ in stacks(ir(parsed))]
    assert _runs(theirs) == _runs(ours)


def _runs(items: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Consecutive repeats as one: the chunker splits a list into items, the IR does not."""
    return [item for i, item in enumerate(items) if i == 0 or items[i - 1] != item]


# --- where we differ on purpose ----------------------------------------------------------------


DIFFERENCES = {
    # LangChain: [("Foo", "Bar") for Jim and Joe]; an indented line is code in CommonMark.
    "four-space indent is code": (
        "# Foo\n\n    ## Bar\n\nHi this is Jim\n\n ## Baz\n\n Hi this is Molly",
        [
            (("Foo",), "```\n## Bar\n```"),
            (("Foo",), "Hi this is Jim"),
            (("Foo", "Baz"), "Hi this is Molly"),
        ],
    ),
    # LangChain: ("Foo", "Bar") for bar(); a BOM mid-text is a character, the line text.
    "byte-order mark mid-document": (
        "\ufeff# Foo\n\nfoo()\n\ufeff## Bar\n\nbar()",
        [(("Foo",), "foo() \ufeff## Bar"), (("Foo",), "bar()")],
    ),
    # LangChain (custom patterns): "Chapter 1" / "Section 1.1" stacks; bold is emphasis.
    "bold lines are no headings": (
        "**Chapter 1**\n\nContent one.\n\n***Section 1.1***\n\nContent two.\n",
        [((), "Chapter 1"), ((), "Content one."), ((), "Section 1.1"), ((), "Content two.")],
    ),
    # Docling's stock backend: ("Quoted",) for the paragraphs after the quote.
    "a quoted heading stays in its section": (
        "# Guide\n\nBefore.\n\n> # Quoted\n>\n> Quoted text.\n\nAfter the quote.\n",
        [
            (("Guide",), "Before."),
            (("Guide",), "Quoted"),
            (("Guide",), "Quoted text."),
            (("Guide",), "After the quote."),
        ],
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", DIFFERENCES)
def test_where_we_differ_on_purpose(parser, tmp_path, name):
    markdown, expected = DIFFERENCES[name]
    assert stacks(ir(parse(parser, tmp_path, markdown))) == expected


@pytest.mark.slow
@pytest.mark.parametrize("file_format", ["md", "html", "docx"])
def test_stated_levels_agree_with_docling_core_in_every_markup(parser, tmp_path, file_format):
    """Numbers inside titles ("Header 2", "Chapter 1", "1.1") never move a stated level."""
    from docling_core.transforms.chunker.hierarchical_chunker import HierarchicalChunker
    from docling_core.types.doc import DoclingDocument

    headings = [(1, "Header 1"), (2, "Chapter 2 Scope"), (3, "Header 3"), (1, "Part A"),
                (2, "1.1 Foo")]  # fmt: skip
    path = tmp_path / f"levels.{file_format}"
    if file_format == "md":
        path.write_text("".join(f"{'#' * n} {t}\n\nBody of {t}.\n\n" for n, t in headings))
    elif file_format == "html":
        body = "".join(f"<h{n}>{t}</h{n}><p>Body of {t}.</p>" for n, t in headings)
        path.write_text(f"<html><body>{body}</body></html>")
    else:
        import docx

        document = docx.Document()
        for n, t in headings:
            document.add_heading(t, level=n)
            document.add_paragraph(f"Body of {t}.")
        document.save(path)
    parsed = parser.parse(path, file_format)
    native = DoclingDocument.model_validate(parsed.native)
    theirs = [tuple(c.meta.headings or ()) for c in HierarchicalChunker().chunk(native)]
    ours = stacks(ir(parsed))
    assert [stack for stack, _ in ours] == theirs
    assert ours[2] == (("Header 1", "Chapter 2 Scope", "Header 3"), "Body of Header 3.")
