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


def test_escaped_markup_of_an_html_page_is_inert_in_the_ir_preview(tmp_path: Path) -> None:
    from dagster import AssetKey, DagsterInstance

    from rag_assets.defs.build import build_defs
    from rag_assets.defs.ingest import place_in_inbox
    from rag_assets.defs.jobs import INGEST_JOB
    from rag_assets.defs.partitions import documents_partitions
    from rag_assets.settings import Settings
    from rag_assets.sources.keys import partition_key_for

    source = tmp_path / "page.html"
    source.write_text(
        "<html><body><main><h1>Notes</h1>"
        "<p>The form echoed &lt;img src=x onerror=alert(1)&gt; back.</p></main></body></html>",
        encoding="utf-8",
    )
    settings = Settings(data_dir=tmp_path / "data")
    (relative,), _ = place_in_inbox([source], settings.inbox_dir, settings.inbox_follow_symlinks)
    key = partition_key_for(relative)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(documents_partitions.name, [key])
    assets = ["raw_documents", "parsed_documents", "normalized_documents"]
    result = (
        build_defs(settings)
        .resolve_job_def(INGEST_JOB)
        .execute_in_process(
            partition_key=key, asset_selection=[AssetKey(a) for a in assets], instance=instance
        )
    )
    (materialization,) = result.asset_materializations_for_node("normalized_documents")
    preview = materialization.metadata["markdown_preview"].value
    assert "onerror=alert(1)" in preview and "<img" not in preview
