"""Which questions ask what a term means (glossary entries lead only for those)."""

from __future__ import annotations

import pytest

from rag_assets.retrieval.fusion import weigh_chunk_types
from rag_assets.retrieval.intent import asks_for_definition


@pytest.mark.parametrize(
    "question",
    [
        "What is a Block Gap?",
        "what are DAT lines",
        "What does the access type RW1C mean?",
        "What does ADMA stand for?",
        "Define TMCLK.",
        "Give the definition of a data breach",
        "meaning of pseudonymisation",
        "Was ist eine Auftragsverarbeitung?",
        "Was bedeutet Pseudonymisierung?",
        "什么是经济补偿？",
        "非全日制用工是什么？",
        "試用期是指什麼？",
        "劳务派遣的含义",
    ],
)
def test_definition_questions(question: str) -> None:
    assert asks_for_definition(question)


@pytest.mark.parametrize(
    "question",
    [
        "How long is the card detect input debounced by the hardware?",
        "Which bit of the Interrupt Status Register reports a data timeout?",
        "When must a controller designate a data protection officer?",
        "Wie lange darf die Probezeit dauern?",
        "经济补偿怎么计算？",
        "员工每周最多可以远程办公几天？",
    ],
)
def test_other_questions(question: str) -> None:
    assert not asks_for_definition(question)


def test_chunk_type_weights_rescore_and_keep_ties_in_order() -> None:
    fused = [("g", 1.0, {"bm25": 1}), ("t", 0.98, {"bm25": 2}), ("u", 0.98, {"dense": 1})]
    types = {"g": "glossary", "t": "text", "u": None}
    assert weigh_chunk_types(fused, types, {"glossary": 0.95}) == [
        ("t", 0.98, {"bm25": 2}),
        ("u", 0.98, {"dense": 1}),
        ("g", 0.95, {"bm25": 1}),
    ]
    assert weigh_chunk_types(fused, types, {}) == fused
