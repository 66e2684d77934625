"""Plain text keeps its lines: extracted PDF text stays readable by clause and Q&A markers."""

import pytest

from rag_assets.errors import DocumentError
from rag_assets.normalize.adapt import to_ir
from rag_assets.parsers.plaintext import PlainTextParser
from rag_assets.parsers.routing import ParserRouter
from rag_assets.templates.registry import build_template
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets.text.numbering import marker_at


def _ir(path):
    return to_ir(PlainTextParser().parse(path, "txt"), doc_id="d", source_sha256="x")


def test_txt_is_routed_to_the_plaintext_parser():
    choice = ParserRouter().choose("txt")
    assert choice.parser == "plaintext"


def test_gdpr_keeps_its_lines_numbering_and_every_article(shared_fixtures):
    doc = _ir(shared_fixtures / "legal" / "gdpr_eurlex_pdf_extracted.txt")
    lines = [line.lstrip("# ") for line in doc.markdown.splitlines()]
    articles = [m for line in lines if (m := marker_at(line, 0)) and m.kind == "article"]
    assert [m.number for m in articles] == [(n,) for n in range(1, 100)]
    # Article 2's own paragraph numbers survive (a Markdown reader renumbers them as one list).
    article_2 = next(i for i, line in enumerate(lines) if line.startswith("Article 2 "))
    assert any(line.startswith("1.") for line in lines[article_2 : article_2 + 5])
    # Its 39 soft-hyphenated line breaks (`rep\u00ad\nresentative`) are whole words.
    assert "\u00ad" not in doc.markdown
    assert "The representative should act" in doc.markdown
    assert "technologically neutral" in doc.markdown
    rows = build_template("clauses", {"max_tokens": 256, "overlap_tokens": 32}).chunk(
        doc, ApproxTokenCounter()
    )
    units = [r.logical_unit for r in rows if r.chunk_type == "clause"]
    assert len(dict.fromkeys(units)) == 99
    assert "Article 5 Principles relating to processing of personal data" in units


def test_other_encodings_are_decoded_and_said(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes(
        "Article 1\nDéfinitions générales du règlement, à lire attentivement.\n".encode("cp1252")
    )
    parsed = PlainTextParser().parse(path, "txt")
    assert "Définitions" in parsed.native["text"]
    assert parsed.notes and "not UTF-8" in parsed.notes[0]


def test_a_file_of_blank_lines_is_a_clear_error(tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("\n \n\t\n")
    with pytest.raises(DocumentError, match="no text"):
        PlainTextParser().parse(path, "txt")
