"""Golden snapshots: what Layers 1-3 make today of every real and generated test document.

For each document, `golden/<group>/<name>.ir.txt` holds its IR (one line per element) and
`.chunks.txt` the chunks of the template `auto` picks (one line per chunk); see golden.py for
the line format. Two files, not one: a diff then says at a glance whether a change moved the
IR (parsers, adapters, repairs) or only the chunks (templates, selection, token limits).

A test fails with a unified diff when the output moves. If the new output is right:

    python -m pytest rag_assets_tests/golden/test_golden.py --update-golden   # -k to narrow
    git diff rag_assets_tests/golden/

and the commit that changes snapshots says why the new output is right. A missing snapshot is
written locally with a warning and fails in CI (CI=true).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.embedding.models import EmbeddingSpec, resolve_model
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file
from rag_assets.settings import Settings
from rag_assets.sources.formats import detect_format
from rag_assets.tables.structure import structure_markdown, with_table_markdown
from rag_assets.templates.registry import build_template
from rag_assets.templates.select import choose_template
from rag_assets.templates.tokens import TokenizerCounter
from rag_assets_tests.conftest import REPO_ROOT
from rag_assets_tests.normalize.repairs.test_repair_document import build_spec_pdf
from rag_assets_tests.parsers.test_docling import STATED, write_docx
from rag_assets_tests.parsers.test_page_pool import _long_report
from rag_assets_tests.parsers.test_parity_markdown import CASES as PARITY_MARKDOWN
from rag_assets_tests.parsers.test_pymupdf import _build_handbook
from rag_assets_tests.parsers.test_unstructured import _write_small_pdf
from rag_assets_tests.support.golden import (
    GOLDEN,
    assert_matches_snapshot,
    render_chunks,
    render_error,
    render_ir,
)
from rag_assets_tests.support.legco_paper import build_legco_paper
from rag_assets_tests.templates.test_element_pages import build_list_pdf
from rag_assets_tests.templates.test_spec_template import build_one_table_spec_pdf

# Every document of ../shared/fixtures the parsers read (not the *.groundtruth.* beside them);
# test_every_shared_fixture_has_a_snapshot keeps this list complete.
FIXTURES = [
    "docx/unit_test_headers_numbered.docx",
    "docx/word_tables.docx",
    "html/wiki_duck.html",
    "legal/gdpr_eurlex_pdf_extracted.txt",
    "legal/劳动合同法(2012-12-28).md",
    "md/docling_deployment.md",
    "md/nested.md",
    "pdf/2305.03393v1-pg9.pdf",
    "pdf/WARN-Report-for-7-1-2015-to-03-25-2016.pdf",
    "pdf/issue-336-example_zh_anhui_land_use_standard.pdf",
    "pdf/normal_4pages.pdf",
    "pdf/ocr_test.pdf",
    "pdf/redp5110_sampled.pdf",
    "qa/docling_faq.md",
    "qa/ms_vsdocs_zhtw_unit-test-basics.md",
]

# A fixed sample of ../shared/corpus (MANIFEST.tsv), in the formats read today, chosen for
# their shapes: each line says what the document brings.
CORPUS = [
    "pypdf-sample-files/004-pdflatex-4-pages__pdflatex-4-pages.pdf",  # LaTeX, 4 pages
    "pypdf-sample-files/006-pdflatex-outline__pdflatex-outline.pdf",  # LaTeX sections, outline
    "pypdf-sample-files/026-latex-multicolumn__multicolumn.pdf",  # two columns
    "pypdf-sample-files/015-arabic__habibi.pdf",  # Arabic, right to left
    "pdfplumber/tests__pdfs__senate-expenditures.pdf",  # one ruled table
    "pdfplumber/tests__pdfs__la-precinct-bulletin-2014-p1.pdf",  # dense tabular layout
    "pdfminer/samples__jo.pdf",  # Japanese, vertical writing
    "pdfminer/samples__simple1.pdf",  # broken xref, repaired on open
    "pdfminer/samples__contrib__pagelabels.pdf",  # 5 pages with page labels
    "pdfjs/test__pdfs__XiaoBiaoSong.pdf",  # Chinese
    "unstructured/example-docs__pdf__list-item-example.pdf",  # lists over 2 pages
    "unstructured/example-docs__pdf__fake-memo-with-duplicate-page.pdf",  # a repeated page
    "docling/tests__data__docx__sources__word_sample.docx",  # headings, lists, a table, images
    "docling/tests__data__docx__sources__docx_lists.docx",  # nested lists
    "docling/tests__data__docx__sources__tablecell.docx",  # formatting inside table cells
    "docling/tests__data__docx__sources__unit_test_formatting.docx",  # inline formatting
    "unstructured/example-docs__docx-hdrftr.docx",  # page headers and footers
    "docling/tests__data__html__sources__example_03.html",  # headings, lists, a table
    "docling/tests__data__html__sources__table_06.html",  # spanning cells
    "docling/tests__data__html__sources__html_description_list.html",  # <dl>
    "unstructured/example-docs__example-steelJIS-datasheet.html",  # a datasheet, some CJK
    "unstructured/example-docs__fake-html-cp1252.html",  # not UTF-8
    "docling/tests__data__md__sources__mixed.md",  # mixed blocks
    "docling/tests__data__md_deepseek__sources__deepseek_example.md",  # OCR-model Markdown
    "docling/tests__data__md__sources__escaped_characters.md",  # backslash escapes
    "unstructured/example-docs__codeblock.md",  # fenced code
    "unstructured/example-docs__norwich-city.txt",  # 48 kB of prose, no headings
    "unstructured/example-docs__book-war-and-peace-1p.txt",  # a book's opening page
    "unstructured/example-docs__language-docs__eng_afr_spa.txt",  # three languages
]

EXAMPLES = sorted(p.name for p in (REPO_ROOT / "examples" / "corpus").iterdir())

# The documents the other tests write, by the same functions, under fixed names.
GENERATED: dict[str, Callable[[Path], None]] = {
    "legco_paper.pdf": build_legco_paper,
    "handbook.pdf": _build_handbook,
    "list_over_pages.pdf": build_list_pdf,
    "spec_running_header.pdf": build_spec_pdf,
    "one_table_spec.pdf": build_one_table_spec_pdf,
    "long_report.pdf": _long_report,
    "two_pages.pdf": _write_small_pdf,
    "stated_levels.docx": lambda path: write_docx(path, STATED[1]),
    **{
        f"parity/{re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')}.md": (
            lambda path, markdown=markdown: path.write_text(markdown, encoding="utf-8")
        )
        for name, (markdown, _) in PARITY_MARKDOWN.items()
    },
}


@dataclass(frozen=True)
class Case:
    group: str  # fixtures, corpus, examples or generated
    name: str

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}"


CASES = [
    *(Case("fixtures", name) for name in FIXTURES),
    *(Case("corpus", name) for name in CORPUS),
    *(Case("examples", name) for name in EXAMPLES),
    *(Case("generated", name) for name in GENERATED),
]
# PDFs run the layout models (and OCR on pages without text): seconds each, not milliseconds.
PARAMS = [
    pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.name.endswith(".pdf") else [])
    for c in CASES
]


@dataclass(frozen=True)
class Output:
    ir: str
    chunks: str


@pytest.fixture(scope="module")
def output_of(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[Case], Output]:
    """Each document parsed and chunked once for both of its tests, as the pipeline would with
    default settings and no LLM (tables in their structure markdown)."""
    # PDFs go to PyMuPDF, what `auto` picks without Docling's layout models (the default
    # set-up, CI): pinned, so a machine that has the models writes the same snapshots. One
    # process per document: the split parse equals the whole one (test_page_pool.py).
    routers = {
        "pdf": ParserRouter("pymupdf", parse_workers=1),
        "other": ParserRouter("auto", parse_workers=1),
    }
    model = resolve_model(EmbeddingSpec())  # the default embedding model's tokenizer
    counter = TokenizerCounter.from_model_dir(model.path, name=model.name)
    defaults = Settings(data_dir=Path("unused"))
    options = {
        "max_tokens": defaults.chunk_max_tokens,
        "overlap_tokens": defaults.chunk_overlap_tokens,
    }

    def source(case: Case) -> Path:
        if case.group == "fixtures":
            return request.getfixturevalue("shared_fixtures") / case.name
        if case.group == "corpus":
            return request.getfixturevalue("shared_fixtures").parent / "corpus" / case.name
        if case.group == "examples":
            return REPO_ROOT / "examples" / "corpus" / case.name
        # A folder per document: builders leave fonts beside what they write.
        path = tmp_path_factory.mktemp("golden") / Path(case.name).name
        GENERATED[case.name](path)
        return path

    def chunks_of(doc: StandardizedDocument) -> str:
        tabled = with_table_markdown(doc, structure_markdown(doc))
        choice = choose_template(tabled, "auto")
        template = build_template(choice.template, options)
        return render_chunks(
            template.chunk(tabled, counter),
            f"{template.name} v{template.version}",
            choice.reason,
            f"max {options['max_tokens']} tokens, overlap {options['overlap_tokens']}, "
            f"counted by {counter.name}",
        )

    # A crash is output too: stored like the rest, so its fix shows as a changed snapshot.
    @functools.cache
    def output(case: Case) -> Output:
        path = source(case)
        router = routers["pdf" if detect_format(path) == "pdf" else "other"]
        try:
            doc = parse_file(path, router).document
        except Exception as error:
            return Output(ir=render_error(error), chunks=render_error(error))
        try:
            return Output(ir=render_ir(doc), chunks=chunks_of(doc))
        except Exception as error:
            return Output(ir=render_ir(doc), chunks=render_error(error))

    return output


@pytest.mark.parametrize("case", PARAMS)
def test_ir_matches_its_snapshot(case: Case, output_of, update_golden: bool) -> None:
    assert_matches_snapshot(GOLDEN / f"{case.id}.ir.txt", output_of(case).ir, update_golden)


@pytest.mark.parametrize("case", PARAMS)
def test_chunks_match_their_snapshot(case: Case, output_of, update_golden: bool) -> None:
    assert_matches_snapshot(GOLDEN / f"{case.id}.chunks.txt", output_of(case).chunks, update_golden)


def test_every_shared_fixture_has_a_snapshot(shared_fixtures: Path) -> None:
    documents = sorted(
        p.relative_to(shared_fixtures).as_posix()
        for p in shared_fixtures.rglob("*")
        if p.is_file() and ".groundtruth" not in p.name and p.name != "MANIFEST.md"
    )
    assert documents == sorted(FIXTURES), "add new fixtures to FIXTURES, drop removed ones"


def test_no_snapshot_without_its_document() -> None:
    expected = {f"{c.id}.{kind}.txt" for c in CASES for kind in ("ir", "chunks")}
    stored = {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*.txt")}
    assert sorted(stored - expected) == [], "snapshots of documents no longer listed: delete them"
