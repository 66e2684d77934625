"""chunk_embeddings reports chunks embedded of total, and the steps change no vector."""

import numpy as np

from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.embedding.progress import encode_with_progress

TEXTS = [f"Register {n} holds the interrupt status of port {n}." for n in range(5)]


def test_progress_is_reported_per_step_and_the_vectors_are_those_of_one_call():
    embedder = load_embedder(EmbeddingSpec())
    reports: list[str] = []
    batch = encode_with_progress(embedder, TEXTS, reports.append, step=2)
    assert reports == [
        "chunks embedded: 2 of 5",
        "chunks embedded: 4 of 5",
        "chunks embedded: 5 of 5",
    ]
    whole = embedder.encode_documents(TEXTS)
    assert batch.dense.shape == whole.dense.shape
    np.testing.assert_allclose(batch.dense, whole.dense, atol=1e-5)
    assert batch.sparse == whole.sparse


def test_no_chunks_no_report():
    embedder = load_embedder(EmbeddingSpec())
    reports: list[str] = []
    assert encode_with_progress(embedder, [], reports.append).dense.shape == (
        0,
        embedder.dimension,
    )
    assert reports == []
