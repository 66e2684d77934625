"""The word pieces an encoder ran: each text's own and the padding its batch added to it.

Counted by the encoder as its batches run (OnnxEncoder; FlagEmbedding counts nothing), into the
ledger a caller has open in this thread or task; what chunk_embeddings records per document and
the throughput bench sets against the model's ceiling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from rag_assets.ledgers import opened


@dataclass(frozen=True)
class TokenCount:
    embedded: int  # the texts' own word pieces after truncation, [CLS] and [SEP] included
    padding: int  # positions run past a text's end, up to its batch's longest text

    def metadata(self) -> dict[str, int]:
        return {"embedded_tokens": self.embedded, "padding_tokens": self.padding}


class TokenLedger:
    """Per text encoded while it is open, in the order the texts were given: its word pieces
    and the width of the batch it ran in."""

    def __init__(self) -> None:
        self.lengths: list[int] = []
        self.widths: list[int] = []

    def record(self, lengths: Sequence[int], widths: Sequence[int]) -> None:
        self.lengths.extend(lengths)
        self.widths.extend(widths)

    def per_group(self, sizes: Sequence[int]) -> list[TokenCount] | None:
        """The counts of consecutive groups of the texts (a batch's documents, in the order
        their texts were encoded), or None when not every text was counted.

        A text's padding is its batch's width less its own length, so a batch mixing
        documents charges each one the padding of its own rows: exact, not a share."""
        if sum(sizes) != len(self.lengths):
            return None
        counts, first = [], 0
        for size in sizes:
            lengths = self.lengths[first : first + size]
            widths = self.widths[first : first + size]
            counts.append(TokenCount(sum(lengths), sum(widths) - sum(lengths)))
            first += size
        return counts


_open_ledger: ContextVar[TokenLedger | None] = ContextVar("open_token_ledger", default=None)


@contextlib.contextmanager
def counting_tokens() -> Iterator[TokenLedger]:
    """A ledger of what the encoder runs inside the block, in this thread only: another
    step encoding at the same time in the same process keeps its own."""
    with opened(_open_ledger, TokenLedger()) as ledger:
        yield ledger


def record_tokens(lengths: Sequence[int], widths: Sequence[int]) -> None:
    """Into the open ledger, if any: one length and batch width per text."""
    ledger = _open_ledger.get()
    if ledger is not None:
        ledger.record(lengths, widths)
