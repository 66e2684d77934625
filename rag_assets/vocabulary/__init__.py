"""Domain vocabularies as data: packs a collection opts into, or its documents' kinds choose."""

from rag_assets.vocabulary.pack import Measure, SectionKind, Vocabulary
from rag_assets.vocabulary.packs import (
    chosen_packs,
    load_pack,
    packs_fingerprint,
    packs_for,
    shipped_packs,
)

__all__ = [
    "Measure",
    "SectionKind",
    "Vocabulary",
    "chosen_packs",
    "load_pack",
    "packs_fingerprint",
    "packs_for",
    "shipped_packs",
]
