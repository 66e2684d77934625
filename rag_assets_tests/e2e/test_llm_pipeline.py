"""The LLM inside the asset graph (vision tables, template choice), against a local OpenAI-compatible server."""

from pathlib import Path

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

from rag_assets.profile.llm import PROMPT
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.storage import read_chunks
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets_tests.support.openai_stub import Behaviour, serve_stub

pytestmark = pytest.mark.slow

KEY = "sk-pipeline-secret-0123456789"
ROWS = [
    ["Pump", "Flow", "Head"],
    ["P-101", "120 m3/h", "45 m"],
    ["P-102", "80 m3/h", "60 m"],
]
# The model reads the units more faithfully than the parser would: this is what must land.
VISION_TABLE = (
    "| Pump | Flow | Head |\n|---|---|---|\n| P-101 | 120 m3/h | 45 m |\n| P-102 | 80 m3/h | 60 m |"
)


@pytest.fixture(scope="module")
def pump_pdf(tmp_path_factory) -> Path:
    from reportlab.lib import colors
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table

    styles = getSampleStyleSheet()
    path = tmp_path_factory.mktemp("pdf") / "pumps.pdf"
    SimpleDocTemplate(str(path)).build(
        [
            Paragraph("1 Pumps", styles["Heading1"]),
            Paragraph("The plant runs two centrifugal pumps. " * 3, styles["BodyText"]),
            Spacer(1, 12),
            Table(ROWS, style=[("GRID", (0, 0), (-1, -1), 0.5, colors.black)]),
        ]
    )
    return path


def _materializations(instance, asset: str, key: str):
    return instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[key]), limit=1
    ).records


def test_vision_tables_land_in_the_chunks_once_and_the_key_stays_secret(
    pump_pdf, tmp_path, monkeypatch
):
    monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", KEY)
    with serve_stub() as stub:
        stub.default = Behaviour(text=f"```markdown\n{VISION_TABLE}\n```")
        monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "stub-vision")
        settings = Settings(data_dir=tmp_path)
        instance = DagsterInstance.ephemeral()

        (first,) = ingest(settings, [pump_pdf], instance=instance)
        assert first.success, first.summary()
        # One vision call for the one table (the `auto` template may ask the LLM too).
        (request,) = [r for r in stub.requests if r.image_urls()]
        assert request.model == "stub-vision" and request.image_urls()[0].startswith(
            "data:image/png;base64,"
        )
        assert {k.lower(): v for k, v in request.headers.items()}[
            "authorization"
        ] == f"Bearer {KEY}"
        metadata = _materializations(instance, "table_markdown", first.doc_id)[
            0
        ].asset_materialization.metadata
        assert metadata["vision"].value == "vision: on (model stub-vision)"
        assert metadata["methods"].value == {"vision": 1} and metadata["llm_calls"].value == 1
        chunks = read_chunks(settings, "pumps.pdf")
        assert any(VISION_TABLE in c.text for c in chunks)

        # An unchanged document starts no run at all; a fresh instance over the same data
        # folder materializes it again, and the vision answer comes from the disk cache.
        again = DagsterInstance.ephemeral()
        (second,) = ingest(settings, [pump_pdf], instance=again)
        assert second.success
        assert [r for r in stub.requests if r.image_urls()] == [request]  # no new vision call
        metadata = _materializations(again, "table_markdown", first.doc_id)[
            0
        ].asset_materialization.metadata
        assert (metadata["llm_calls"].value, metadata["cache_hits"].value) == (0, 1)

    logged = " ".join(
        str(e) for i in (instance, again) for run in i.get_runs() for e in i.all_logs(run.run_id)
    )
    assert KEY not in logged
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_without_an_endpoint_vision_is_off_and_says_so(pump_pdf, tmp_path, monkeypatch):
    for name in ("RAG_ASSETS_LLM_BASE_URL", "RAG_ASSETS_LLM_MODEL", "RAG_ASSETS_VISION_MODEL"):
        monkeypatch.delenv(name, raising=False)
    instance = DagsterInstance.ephemeral()
    (outcome,) = ingest(Settings(data_dir=tmp_path), [pump_pdf], instance=instance)
    assert outcome.success
    metadata = _materializations(instance, "table_markdown", outcome.doc_id)[
        0
    ].asset_materialization.metadata
    assert metadata["vision"].value.startswith("vision: off")
    assert metadata["methods"].value == {"structure": 1}


def test_auto_asks_the_llm_for_the_template_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_LLM_API_KEY", KEY)
    guide = tmp_path / "handover.md"
    guide.write_text(
        "# Shift handover\n\nQuestion: Who signs the log?\n\nThe shift lead signs it.\n"
    )
    with serve_stub() as stub:
        stub.default = Behaviour(
            text='{"template": "semantic", "confidence": 0.92, "reason": "a short guide"}'
        )
        monkeypatch.setenv("RAG_ASSETS_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "stub-chat")
        settings = Settings(data_dir=tmp_path / "data", template="auto")
        instance = DagsterInstance.ephemeral()
        (outcome,) = ingest(settings, [guide], instance=instance)
    assert outcome.success and outcome.template == f"semantic v{SemanticTemplate.version}", (
        outcome.summary()
    )
    # One call for the profile (normalized_documents), one for the template (document_chunks).
    assert [r.model for r in stub.requests] == ["stub-chat", "stub-chat"]
    assert [PROMPT.splitlines()[0] in r.text for r in stub.requests] == [True, False]
    metadata = _materializations(instance, "document_chunks", outcome.doc_id)[
        0
    ].asset_materialization.metadata
    assert metadata["template_reason"].value.startswith("llm: a short guide (semantic at 0.92")
    assert metadata["llm_calls"].value == 1
