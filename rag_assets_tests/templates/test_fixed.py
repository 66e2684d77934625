"""Ground truth for the `fixed` template on hand-built IR.

Counts use ApproxTokenCounter (one token per word, punctuation run or CJK character).
"""

from __future__ import annotations

from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.fixed import FixedTemplate
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.support.builders import make_doc, texts

APPROX = ApproxTokenCounter()


# --- fixed --------------------------------------------------------------------------------


def test_fixed_windows_overlap_and_cover_the_text() -> None:
    words = [f"w{i}" for i in range(1, 21)]
    doc = make_doc([("paragraph", " ".join(words), None, 1)])
    rows = FixedTemplate(TemplateOptions(max_tokens=10, overlap_tokens=3)).chunk(doc, APPROX)

    assert texts(rows) == [" ".join(words[0:10]), " ".join(words[7:17]), " ".join(words[14:20])]
    assert [r.token_count for r in rows] == [10, 10, 6]
    assert [doc.markdown[r.start_char : r.end_char] for r in rows] == texts(rows)
    assert {(r.header_path, tuple(r.headings), r.chunk_type, r.template) for r in rows} == {
        ("/", (), "text", "fixed")
    }


def test_fixed_skips_page_furniture_and_maps_pages() -> None:
    doc = make_doc(
        [
            ("heading", "## Intro", 2, 1),
            ("paragraph", "a1 a2 a3 a4", None, 1),
            ("page_footer", "E-2", None, 1),
            ("page_header", "2026-05-15", None, 2),
            ("paragraph", "b1 b2 b3 b4", None, 2),
        ]
    )
    rows = FixedTemplate(TemplateOptions(max_tokens=5, overlap_tokens=1)).chunk(doc, APPROX)

    assert texts(rows) == ["## Intro\n\na1 a2 a3", "a3 a4\n\nb1 b2 b3", "b3 b4"]
    assert [(r.page_start, r.page_end) for r in rows] == [(1, 1), (1, 2), (2, 2)]
    # The middle window's span in the IR markdown also covers the dropped footer/header.
    middle = doc.markdown[rows[1].start_char : rows[1].end_char]
    assert middle == "a3 a4\n\nE-2\n\n2026-05-15\n\nb1 b2 b3"
    assert [r.chunk_index for r in rows] == [0, 1, 2]
