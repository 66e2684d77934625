"""A batch's documents embedded in one call and handed back apart, each with its own counts."""

import numpy as np

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.embedding.batch import embed_documents
from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.templates.tokens import TokenizerCounter


def chunks(doc_id: str, texts: list[str]) -> list[ChunkRow]:
    return [
        ChunkRow(
            chunk_id=f"{doc_id}-{n}",
            doc_id=doc_id,
            source_path=f"{doc_id}.md",
            source_sha256="0" * 64,
            template="semantic",
            chunk_index=n,
            text=text,
        )
        for n, text in enumerate(texts)
    ]


BOILERPLATE = "This message is confidential and intended for the addressee only."
BATCH = {
    "memo": chunks("memo", ["The audit starts on Monday.", BOILERPLATE]),
    "notice": chunks("notice", [BOILERPLATE, "Offices close at noon on Friday.", "Bring a badge."]),
}


def test_each_document_gets_its_own_rows_in_order_with_the_vectors_of_its_texts():
    embedder = load_embedder(EmbeddingSpec())
    batch = embed_documents(embedder, BATCH, lambda _: None, None, "text")
    assert list(batch.documents) == ["memo", "notice"]
    for key, doc_chunks in BATCH.items():
        rows = batch.documents[key].rows
        assert [r.chunk_id for r in rows] == [c.chunk_id for c in doc_chunks]
        alone = embedder.encode_documents([c.text for c in doc_chunks]).dense
        np.testing.assert_allclose([r.dense for r in rows], alone, atol=1e-5)
    assert (batch.reuse.texts, batch.reuse.embedded, batch.reuse.repeated) == (5, 4, 1)


def test_a_text_embedded_for_one_document_costs_the_next_no_word_pieces():
    embedder = load_embedder(EmbeddingSpec())
    batch = embed_documents(embedder, BATCH, lambda _: None, None, "text")
    memo, notice = batch.documents["memo"].tokens, batch.documents["notice"].tokens
    counter = TokenizerCounter.from_model_dir(embedder.model_dir)
    # The model also runs [CLS] and [SEP] around each text's content word pieces.
    own = {t: counter.count(t) + 2 for t in [c.text for d in BATCH.values() for c in d]}
    assert memo.embedded == own["The audit starts on Monday."] + own[BOILERPLATE]
    assert notice.embedded == own["Offices close at noon on Friday."] + own["Bring a badge."]
