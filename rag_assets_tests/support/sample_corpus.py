"""The sample corpus (examples/corpus) ingested once per test session through the project's ingest.

Test modules that answer questions about it share one data folder: the ingest (parse, chunk,
embed, index three documents) is the slow part, so it runs for the first module that asks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.index.rows import IndexRow
from rag_assets.index.store import MilvusIndex
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.templates.spec import SpecTemplate
from rag_assets.templates.tokens import ApproxTokenCounter

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"
DOCUMENTS = ("host-controller-spec.pdf", "operator-guide.md", "travel-policy.docx")


def ingested_sample(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.getbasetemp() / "sample-corpus"
    settings = Settings(data_dir=root / "data", template="auto")
    done = root / "ingested"
    if not done.exists():
        outcomes = ingest(
            settings, [CORPUS / name for name in DOCUMENTS], instance=DagsterInstance.ephemeral()
        )
        assert [o.summary() for o in outcomes if not o.success] == []
        done.touch()
    return settings


def index_spec_document(settings: Settings, doc: StandardizedDocument) -> None:
    """A hand-built document chunked by the spec template and indexed next to the sample (the
    index only: the stored chunks stay the sample's), for what the sample corpus lacks."""
    chunks = SpecTemplate().chunk(doc, ApproxTokenCounter())
    embedder = load_embedder(EmbeddingSpec())
    vectors = embedder.encode_documents([c.context_text or c.text for c in chunks]).dense
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        collection = index.collection_name(embedder.name, embedder.dimension)
        rows = [IndexRow.from_chunk(c, v) for c, v in zip(chunks, vectors, strict=True)]
        index.replace_document(collection, doc.doc_id, rows)
