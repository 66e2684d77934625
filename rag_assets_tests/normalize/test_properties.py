"""Property-based tests: random IR of the shapes parsers leave, through every repair and template.

The strategies build documents page by page: mixed scripts, words broken by hyphens, soft
hyphens and letter-spacing, dot leaders, numbered and unnumbered headings whose level the source
states or not, paragraphs holding heading lines and running header lines, lists and tables that
run over a page break, page furniture (typed or left as text) and empty elements. Each property
must hold for every such document:

- every repair, called on its own, returns elements and a count without raising;
- `repair_document` skips no repair and keeps the invariants (`invariants.repair_problems`);
- every template chunks the repaired document, and the chunks keep the invariants and pass the
  blocking chunk checks.

Profiles (registered in conftest): `ci` (the default: derandomized, no example database) and
`soak` (`pytest --hypothesis-profile soak`), many more random examples for a local run.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import (
    BBox,
    DocumentElement,
    StandardizedDocument,
    TableCell,
    TableData,
)
from rag_assets.contracts.tabular import to_arrow, to_records
from rag_assets.normalize.repairs import REPAIRS, repair_document
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.quality.chunks import (
    check_chunks_have_content,
    check_ids_unique_and_deterministic,
    check_metadata_complete,
)
from rag_assets.templates.registry import available_templates, build_template
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import doc_from_elements
from rag_assets_tests.support.invariants import chunk_problems, repair_problems

# --- strategies ----------------------------------------------------------------------------

WORDS = {
    "latin": ["scope", "data", "the", "of", "and", "personal", "processing", "Regulation"],
    "accented": ["données", "Verarbeitung", "Straße", "über", "niño", "façade", "Ærø"],
    "cjk": ["中华人民共和国", "劳动合同", "用人单位", "为了", "总则", "土地", "利用"],
    "hangul": ["개인정보", "보호법", "들어가며", "맺으며"],
    "arabic": ["البيانات", "الشخصية", "حماية"],
    "numbers": ["3", "12", "2016", "4.5.2016", "1,234", "12%", "L 119/2"],
}
# What parsers do to words: hyphen and soft-hyphen line breaks, letter-spacing, spaces between
# CJK characters, dot leaders of contents pages, compounds and apostrophes to leave alone.
BROKEN = [
    "implemen-\ntation",
    "Verarbei\u00ad\ntung",
    "Verarbei\u00adtung",
    "technolo \u00ad\ngically",
    "infor¬\nmation",
    "EU-\nDatenschutz",
    "well-\nknown",
    "well-known",
    "Territor ial",
    "inform ation",
    "interm ediar y",
    "T E R R I T O R I A L",
    "super vision",
    "a system atic",
    "e f",
    "re\u2011use",
    "card's",
    "中 华 人 民",
    "第三章 总则",
    "Scope .......... 3",
    "1.2 Scope ····· 12",
    "Contents . . . . . 4",
]
# Any character of these, in any order: the words above miss what no one thought of.
ODD_CHARS = "aZé中한ع1.-\u00ad¬ \n|#*()第条章…\u2010"

ROMAN = ["I", "II", "III", "IV", "V"]
CN_NUMBERS = ["一", "二", "三", "八", "十"]
TITLES = ["Scope", "Principles relating to processing", "总则", "개인정보 보호", "Definitions"]
UNNUMBERED = ["Introduction", "References", "Contents", "Appendix", "目录", "Notes"]


@st.composite
def words(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from([*WORDS, "broken", "odd"]))
    if kind == "broken":
        return draw(st.sampled_from(BROKEN))
    if kind == "odd":
        return draw(st.text(ODD_CHARS, min_size=1, max_size=12))
    return draw(st.sampled_from(WORDS[kind]))


def lines(max_words: int = 10) -> st.SearchStrategy[str]:
    return st.lists(words(), min_size=1, max_size=max_words).map(" ".join)


@st.composite
def heading_titles(draw: st.DrawFn) -> str:
    """`Article 5`, `1.2 Scope`, `CHAPTER III`, `第八条`, `Appendix A`, a bare `3` or no number."""
    n = draw(st.integers(1, 4))
    marker = draw(
        st.sampled_from(
            [
                f"Article {n}",
                f"{n}.{draw(st.integers(1, 3))}",
                f"{n}",
                f"{n}.",
                f"CHAPTER {ROMAN[n]}",
                f"Chapter {n}",
                f"PART {ROMAN[n]}",
                f"Section {n}.{draw(st.integers(1, 3))}",
                f"第{CN_NUMBERS[n]}条",
                f"第{CN_NUMBERS[n]}章",
                f"Appendix {'ABCD'[n - 1]}",
                f"({n})",
                f"{CN_NUMBERS[n]}、",
                f"{'ABCD'[n - 1]}.",
                "",
            ]
        )
    )
    if not marker:
        return draw(st.sampled_from(UNNUMBERED))
    title = draw(st.sampled_from(["", *TITLES]))
    return f"{marker} {title}".strip()


def _box(top: float, height: float = 14.0) -> BBox:
    return (72.0, top, 520.0, top + height)


@st.composite
def headings(draw: st.DrawFn, page: int, box: BBox | None) -> DocumentElement:
    title = draw(heading_titles())
    kind = draw(st.sampled_from(["heading", "heading", "title"]))
    level = draw(st.integers(1, 6)) if kind == "heading" else draw(st.sampled_from([1, None]))
    marks = draw(st.booleans())  # adapters may or may not keep the markdown marks
    text = f"{'#' * (level or 1)} {title}" if marks else title
    stated = {LEVEL_STATED: True} if draw(st.booleans()) else {}
    return DocumentElement(
        type=kind, text=text, level=level, page_start=page, page_end=page, bbox=box, metadata=stated
    )


@st.composite
def paragraph_texts(draw: st.DrawFn) -> str:
    """Lines of words, some of them numbered heading lines as plain text leaves them."""
    parts = draw(
        st.lists(st.one_of(lines(), heading_titles(), st.just("")), min_size=1, max_size=6)
    )
    return "\n".join(parts)


@st.composite
def list_texts(draw: st.DrawFn, items: int) -> str:
    bullet = draw(st.sampled_from(["- ", "1. ", "• ", ""]))
    return "\n".join(f"{bullet}{draw(lines(6))}" for _ in range(items))


@st.composite
def tables(
    draw: st.DrawFn, page: int, box: BBox | None, cols: int | None = None
) -> DocumentElement:
    cols = cols or draw(st.integers(1, 4))
    rows = draw(st.integers(1, 5))
    header_rows = draw(st.integers(0, min(1, rows)))
    cell = st.one_of(st.sampled_from(["", "Year", "Amount", "1,234", "12%", "2016"]), lines(3))
    data = TableData(
        num_rows=rows,
        num_cols=cols,
        cells=[
            TableCell(row=r, col=c, text=draw(cell), is_header=r < header_rows)
            for r in range(rows)
            for c in range(cols)
        ],
        header_rows=header_rows,
        caption=draw(st.sampled_from([None, "Table 3 Costs", "Table 3 (continued)", "表 2"])),
    )
    return DocumentElement(
        type="table",
        text=table_to_markdown(data),
        page_start=page,
        page_end=page,
        bbox=box,
        table=data,
    )


@st.composite
def spanning(draw: st.DrawFn, page: int, box: BBox | None) -> DocumentElement:
    """A list or paragraph that goes on to the next page, saying where its lines do."""
    first, second = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["list", "paragraph"]))
    if kind == "list":
        text = draw(list_texts(first + second))
    else:
        text = "\n".join(draw(lines()) for _ in range(first + second))
    return DocumentElement(
        type=kind,
        text=text,
        page_start=page,
        page_end=page + 1,
        bbox=box,
        metadata={"line_pages": [[0, page], [first, page + 1]]},
    )


@st.composite
def body_elements(draw: st.DrawFn, page: int, box: BBox | None) -> DocumentElement:
    kind = draw(
        st.sampled_from(
            ["heading", "paragraph", "paragraph", "list", "table", "caption", "footnote", "code"]
            + ["figure", "toc", "empty"]
        )
    )
    if kind == "heading":
        return draw(headings(page, box))
    if kind == "table":
        return draw(tables(page, box))
    if kind == "empty":
        text = draw(st.sampled_from(["", " ", "\n"]))
        return DocumentElement(
            type="paragraph", text=text, page_start=page, page_end=page, bbox=box
        )
    text = draw(list_texts(draw(st.integers(1, 4))) if kind == "list" else paragraph_texts())
    return DocumentElement(type=kind, text=text, page_start=page, page_end=page, bbox=box)


@st.composite
def documents(draw: st.DrawFn) -> StandardizedDocument:
    """A document page by page: body elements, perhaps a running header and a page label on
    every page (typed furniture, or left as text), a table continued on the next page, and a
    list or paragraph running over the break."""
    layout = draw(st.booleans())  # PDF boxes, or text without layout
    pages = draw(st.integers(1, 7))
    running = draw(st.sampled_from([None, "ACME Annual Report", "Official Journal of the EU"]))
    running_type = draw(st.sampled_from(["page_header", "paragraph"]))
    # Text without layout keeps a PDF's running line inside its paragraphs: `... L 119/3`.
    glued = not layout and draw(st.booleans())
    elements: list[DocumentElement] = []
    page = 1
    while page <= pages:
        top = 100.0

        def box() -> BBox | None:
            nonlocal top
            top += 20.0
            return _box(top) if layout else None

        if running:
            elements.append(
                DocumentElement(
                    type=running_type,
                    text=running,
                    page_start=page,
                    page_end=page,
                    bbox=_box(30.0) if layout else None,
                )
            )
        continued = elements[-1] if elements and elements[-1].type == "table" else None
        if continued is not None and continued.table is not None and draw(st.booleans()):
            elements.append(draw(tables(page, box(), cols=continued.table.num_cols)))
        elements += [draw(body_elements(page, box())) for _ in range(draw(st.integers(0, 5)))]
        if glued:
            line = (
                f"{draw(lines(3))}\n4.5.2016 L 119/{page} Official Journal of the European Union EN"
            )
            elements.append(
                DocumentElement(type="paragraph", text=line, page_start=page, page_end=page)
            )
        if draw(st.booleans()):
            label = draw(st.sampled_from([f"{page}", f"Page {page} of {pages}", f"- {page} -"]))
            kind = draw(st.sampled_from(["page_footer", "paragraph"]))
            elements.append(
                DocumentElement(
                    type=kind,
                    text=label,
                    page_start=page,
                    page_end=page,
                    bbox=_box(790.0) if layout else None,
                )
            )
        if page < pages and draw(st.integers(0, 3)) == 0:
            elements.append(draw(spanning(page, box())))
            page += 1
            continue
        if page < pages and draw(st.integers(0, 3)) == 0:
            elements.append(draw(tables(page, box())))  # may go on at the top of the next page
        page += 1
    return doc_from_elements(elements)


# --- properties ----------------------------------------------------------------------------


@given(documents())
def test_every_repair_called_alone_returns_elements_and_a_count(doc: StandardizedDocument) -> None:
    """No repair raises, on the adapter's elements nor on what the repairs before it left."""
    elements = doc.elements
    for _name, repair in REPAIRS:
        for given_elements in (doc.elements, elements):
            out, count = repair(list(given_elements))
            assert all(isinstance(e, DocumentElement) for e in out)
            assert count >= 0
        elements = out


@given(documents())
def test_repair_document_skips_no_repair_and_keeps_the_invariants(
    doc: StandardizedDocument,
) -> None:
    repaired = repair_document(doc)
    assert repaired.metadata.get("repairs_failed", {}) == {}
    assert repair_problems(doc.elements, repaired) == []


# The defaults, and limits small enough that elements are cut at their seams and between words.
TEMPLATE_OPTIONS = st.sampled_from(
    [{}, {"max_tokens": 48, "overlap_tokens": 8}, {"max_tokens": 24, "overlap_tokens": 4}]
)


@given(documents(), TEMPLATE_OPTIONS)
def test_every_template_chunks_the_repaired_document_within_the_checks(
    doc: StandardizedDocument, options: dict[str, int]
) -> None:
    repaired = repair_document(doc)
    counter = ApproxTokenCounter()
    for name in available_templates():
        template = build_template(name, options)
        chunks = template.chunk(repaired, counter)
        assert chunk_problems(chunks, repaired, template, counter) == [], name
        records = to_records(to_arrow(chunks, ChunkRow), ChunkRow)  # as stored
        for outcome in (
            check_metadata_complete(records, repaired.doc_id),
            check_ids_unique_and_deterministic(records),
            check_chunks_have_content(records, repaired, template.headings_from_text),
        ):
            assert outcome.passed, f"{name}: {outcome.description}"
