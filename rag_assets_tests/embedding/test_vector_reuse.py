"""Identical texts are embedded once: within a call, and across calls through the vector store."""

import sqlite3

import numpy as np
import pytest

from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.embedding.reuse import VectorStore, embed_once
from rag_assets.embedding.token_counts import counting_tokens

DISCLAIMER = "Forward-looking statements involve risks and uncertainties."
TEXTS = [
    DISCLAIMER,
    "Revenue rose 4% to $8.2 billion.",
    DISCLAIMER,
    "Operating margin was 21.3%, down from 22.1%.",
    DISCLAIMER,
]


class CountingEmbedder:
    """The bundled model, recording every text it is asked to run."""

    def __init__(self) -> None:
        self._embedder = load_embedder(EmbeddingSpec())
        self.ran: list[str] = []

    def __getattr__(self, name):
        return getattr(self._embedder, name)

    def encode_documents(self, texts):
        self.ran.extend(texts)
        return self._embedder.encode_documents(texts)


@pytest.fixture
def embedder():
    return CountingEmbedder()


def alone(embedder, texts):
    return embedder._embedder.encode_documents(list(texts)).dense


def test_repeated_texts_run_once_and_every_text_gets_its_own_vector(embedder):
    batch, reuse = embed_once(embedder, TEXTS)
    assert sorted(embedder.ran) == sorted(set(TEXTS))
    assert (reuse.texts, reuse.embedded, reuse.repeated, reuse.stored) == (5, 3, 2, 0)
    np.testing.assert_allclose(batch.dense, alone(embedder, TEXTS), atol=1e-5)


def test_stored_vectors_are_reused_by_a_later_call(embedder, tmp_path):
    identity = embedder.vectors_identity
    embed_once(embedder, TEXTS[:2], store=VectorStore(tmp_path, identity))
    embedder.ran.clear()

    later = [*TEXTS, "A text no run has seen."]
    batch, reuse = embed_once(embedder, later, store=VectorStore(tmp_path, identity))
    assert sorted(embedder.ran) == sorted([TEXTS[3], "A text no run has seen."])
    assert (reuse.embedded, reuse.stored, reuse.store_error) == (2, 2, None)
    np.testing.assert_allclose(batch.dense, alone(embedder, later), atol=1e-5)


def test_another_model_identity_reads_none_of_the_vectors(embedder, tmp_path):
    embed_once(embedder, TEXTS, store=VectorStore(tmp_path, embedder.vectors_identity))
    embedder.ran.clear()
    _, reuse = embed_once(embedder, TEXTS, store=VectorStore(tmp_path, "another-model"))
    assert reuse.stored == 0
    assert sorted(embedder.ran) == sorted(set(TEXTS))


def test_an_unreadable_store_embeds_every_text_and_says_so(embedder, tmp_path):
    store = VectorStore(tmp_path, embedder.vectors_identity)
    store.path.write_bytes(b"not a database" * 100)
    batch, reuse = embed_once(embedder, TEXTS, store=store)
    assert reuse.store_error and reuse.store_error.startswith("read:")
    assert reuse.embedded == 3
    np.testing.assert_allclose(batch.dense, alone(embedder, TEXTS), atol=1e-5)


def test_a_stored_vector_of_another_size_is_embedded_again(embedder, tmp_path):
    store = VectorStore(tmp_path, embedder.vectors_identity)
    embed_once(embedder, TEXTS, store=store)
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE vectors SET dense = ?", (np.zeros(3, dtype=np.float32).tobytes(),))
    embedder.ran.clear()
    batch, reuse = embed_once(embedder, TEXTS, store=store)
    assert reuse.stored == 0
    assert reuse.store_error == "3 stored vectors of the wrong size"
    np.testing.assert_allclose(batch.dense, alone(embedder, TEXTS), atol=1e-5)


def test_only_the_first_occurrence_of_a_text_is_charged_its_word_pieces(embedder):
    with counting_tokens() as ledger:
        embed_once(embedder, TEXTS)
    assert len(ledger.lengths) == len(TEXTS)
    assert ledger.lengths[2] == ledger.lengths[4] == 0
    assert ledger.widths[2] == ledger.widths[4] == 0
    assert all(n > 0 for n in (ledger.lengths[0], ledger.lengths[1], ledger.lengths[3]))


def test_nothing_to_embed(embedder, tmp_path):
    batch, reuse = embed_once(embedder, [], store=VectorStore(tmp_path, "m"))
    assert batch.dense.shape == (0, embedder.dimension)
    assert (reuse.texts, reuse.embedded) == (0, 0)


def test_the_identity_follows_what_decides_the_vectors():
    onnx = load_embedder(EmbeddingSpec())
    assert onnx.vectors_identity == load_embedder(EmbeddingSpec(batch_size=16)).vectors_identity
    assert onnx.vectors_identity != load_embedder(EmbeddingSpec(max_length=128)).vectors_identity
