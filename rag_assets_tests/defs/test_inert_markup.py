"""Text that was escaped markup in the source stays inert where the UI renders markdown."""

from __future__ import annotations

from pathlib import Path

from rag_assets.defs.metadata import chunk_preview, inert_markdown

ATTACK = "<img src=x onerror=alert(1)>"


def test_a_tag_in_document_text_shows_as_text() -> None:
    shown = inert_markdown(f"# Notes\n\nThe page says {ATTACK} & more.").value
    assert "<img" not in shown and "&lt;img src=x onerror=alert(1)>" in shown
    assert "&amp; more" in shown
    preview = chunk_preview(
        [{"chunk_index": 0, "header_path": "/Notes/", "text": ATTACK, "page_start": None}]
    ).value
    assert "<img" not in preview and "**#0** `/Notes/`" in preview


def test_escape_sequences_in_a_preview_show_as_text() -> None:
    shown = inert_markdown("The valve\x1b]0;owned\x07\x1b[2J opens.\r\nIt closes.").value
    assert shown == "The valve\\x1b]0;owned\\x07\\x1b[2J opens.\r\nIt closes."


def test_escaped_markup_of_an_html_page_is_inert_in_the_ir_preview(tmp_path: Path) -> None:
    from rag_assets_tests.support.builders import materialize_file

    source = tmp_path / "page.html"
    source.write_text(
        "<html><body><main><h1>Notes</h1>"
        "<p>The form echoed &lt;img src=x onerror=alert(1)&gt; back.</p></main></body></html>",
        encoding="utf-8",
    )
    result, _ = materialize_file(source, tmp_path / "data")
    (materialization,) = result.asset_materializations_for_node("normalized_documents")
    preview = materialization.metadata["markdown_preview"].value
    assert "onerror=alert(1)" in preview and "<img" not in preview
