"""The encoder counts the word pieces it embeds and the padding its batches add, per text, into
the ledger open around it; a batch's documents each get their own rows' counts."""

from __future__ import annotations

from rag_assets.embedding.models import EmbeddingSpec, load_embedder
from rag_assets.embedding.progress import encode_with_progress
from rag_assets.embedding.token_counts import TokenCount, TokenLedger, counting_tokens

# [CLS] + one word piece a letter + [SEP]
TEXTS = ["a", "a b c", "a b c d e", "a b"]
LENGTHS = [3, 5, 7, 4]


def test_the_encoder_counts_each_texts_word_pieces_and_its_batchs_padding():
    embedder = load_embedder(EmbeddingSpec(runtime="onnx", batch_size=2))
    assert embedder.runtime == "onnx"
    with counting_tokens() as ledger:
        embedder.encode_documents(TEXTS)
    assert ledger.lengths == LENGTHS
    # longest first, two a batch: (7, 5) run 7 wide, (4, 3) run 4 wide
    assert ledger.widths == [4, 7, 7, 4]
    assert ledger.per_group([4]) == [TokenCount(embedded=19, padding=3)]


def test_steps_of_one_document_batch_are_counted_in_order_and_split_per_document():
    embedder = load_embedder(EmbeddingSpec(runtime="onnx", batch_size=2))
    with counting_tokens() as ledger:
        encode_with_progress(embedder, TEXTS, lambda _: None, step=3)
    # the first step's batches: (7, 5) and (3); the second's: (4)
    assert ledger.widths == [3, 7, 7, 4]
    assert ledger.per_group([1, 3]) == [
        TokenCount(embedded=3, padding=0),
        TokenCount(embedded=16, padding=2),
    ]


def test_nothing_is_counted_outside_the_block():
    embedder = load_embedder(EmbeddingSpec(runtime="onnx", batch_size=2))
    with counting_tokens() as ledger:
        pass
    embedder.encode_documents(TEXTS)
    assert ledger.lengths == [] and ledger.widths == []


def test_a_ledger_missing_texts_counts_no_document():
    ledger = TokenLedger()  # what FlagEmbedding leaves: nothing recorded
    assert ledger.per_group([2, 1]) is None
    ledger.record([3, 5], [5, 5])
    assert ledger.per_group([2, 1]) is None
    assert ledger.per_group([1, 1]) == [TokenCount(3, 2), TokenCount(5, 0)]
    assert ledger.per_group([0, 2]) == [TokenCount(0, 0), TokenCount(8, 2)]
    assert TokenCount(8, 2).metadata() == {"embedded_tokens": 8, "padding_tokens": 2}
