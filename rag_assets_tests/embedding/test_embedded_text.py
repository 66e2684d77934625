"""What of a chunk is embedded: its text by default, its context on request; BM25 is unaffected."""

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.defs.observed_sources import SHARED
from rag_assets.defs.resources import EmbeddingConfig, EmbeddingResource
from rag_assets.embedding.rows import embed_rows
from rag_assets.settings import Settings
from rag_assets_tests.embedding.test_vector_reuse import CountingEmbedder

CHUNKS = [
    ChunkRow(
        chunk_id=f"c{n}",
        doc_id="d",
        source_path="d.pdf",
        source_sha256="0" * 64,
        template="semantic",
        chunk_index=n,
        text=text,
        context_text=f"Acme Corp · annual report › Item 7\n\n{text}",
    )
    for n, text in enumerate(["Revenue rose 4%.", "Margins fell."])
]


def embedded(part=None):
    embedder = CountingEmbedder()
    embed_rows(embedder, CHUNKS, **({"part": part} if part else {}))
    return sorted(embedder.ran)


def test_the_text_is_embedded_by_default():
    assert Settings().embedded_text == "text"
    assert embedded() == sorted(c.text for c in CHUNKS)


def test_the_context_is_embedded_on_request():
    assert embedded("context") == sorted(c.context_text for c in CHUNKS)


def test_the_choice_is_part_of_the_embedding_settings_version():
    def version(part: str) -> str:
        resource = EmbeddingResource(embedding=EmbeddingConfig(embedded_text=part))
        return SHARED["embedding_settings"](SimpleNamespace(embedding=resource)).version

    assert version("text") != version("context")


def test_an_unknown_choice_is_refused(monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_EMBEDDED_TEXT", "title")
    with pytest.raises(ValidationError):
        Settings.from_env()
    with pytest.raises(ValidationError):
        EmbeddingConfig(embedded_text="title")
