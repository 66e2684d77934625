"""Answers held to their sources: the prompt of numbered sources, the model's answer checked
sentence by sentence (a marker of a given source on every sentence, every number in a source it
cites; one retry), and the table's value kept where a table and the text it rests on disagree."""

from __future__ import annotations

import re

from rag_assets.llm.client import LLMClient, LLMError
from rag_assets.retrieval.conflicts import find_conflicts, reconcile
from rag_assets.retrieval.tools.tool import Found
from rag_assets.retrieval.tools.toolbox import fold

MODEL_NOT_FOUND = "NOT_FOUND"

SYSTEM_PROMPT = f"""You answer questions about documents using ONLY the numbered sources the \
user gives. Rules:
- End every sentence with the marker of each source it rests on, like [1] or [2][3]. Use only \
the given markers.
- Quote table values (offsets, bits, reset values, amounts, units) exactly as the table row \
states them.
- When a table and the prose disagree, give the table's value and say that the text differs.
- Use no knowledge beyond the sources. If they do not answer the question, reply exactly \
{MODEL_NOT_FOUND}."""

MARKER = re.compile(r"\[(\d+)\]")
_MARKERS_AFTER_STOP = re.compile(r"([.!?。！？])\s*((?:\[\d+\]\s*)+)")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_VALUE = re.compile(r"0x[0-9a-f]+|\d+(?:[.:]\d+)*", re.IGNORECASE)


def with_table_values(text: str, numbered: list[tuple[int, Found]], notes: list[str]) -> str:
    """The answer, noting where a table and the text it rests on disagree (the table wins)."""
    cited = {int(m) for m in MARKER.findall(text)}
    conflicts = [
        c
        for c in find_conflicts({marker: item.source for marker, item in numbered})
        if {c.table_marker, c.text_marker} & cited
    ]
    text, noted = reconcile(text, conflicts)
    notes += [
        f"table and text disagree on the {c.column} of the {c.subject}: note appended"
        for c in noted
    ]
    return text


def prompt(question: str, numbered: list[tuple[int, Found]]) -> str:
    sources = "\n\n".join(
        f"[{marker}] ({item.kind}; {item.source.citation})\n{item.text}"
        for marker, item in numbered
    )
    return f"Sources:\n\n{sources}\n\nQuestion: {question}"


def ask(
    client: LLMClient, question: str, numbered: list[tuple[int, Found]], notes: list[str]
) -> tuple[str | None, str]:
    """The model's answer once it passes `check_answer` (one retry), else (None, problems)."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt(question, numbered)},
    ]
    problems: list[str] = []
    for attempt in range(2):
        try:
            text = client.chat_text(messages).text.strip()
        except LLMError as error:
            notes.append(f"the model call failed: {error}")
            return None, str(error)
        if text == MODEL_NOT_FOUND:
            return text, ""
        problems = check_answer(text, {m: item.text for m, item in numbered})
        if not problems:
            return text, ""
        notes.append(f"answer {attempt + 1} rejected: {'; '.join(problems)}")
        messages += [
            {"role": "assistant", "content": text},
            {
                "role": "user",
                "content": "Your answer was rejected: "
                + "; ".join(problems)
                + ". Answer again from the numbered sources only, every sentence ending with "
                "its markers.",
            },
        ]
    return None, "; ".join(problems)


def check_answer(text: str, sources: dict[int, str]) -> list[str]:
    """What is wrong with an answer: sentences without a marker, markers pointing at no
    source, numbers that none of a sentence's cited sources contains."""
    problems = []
    folded = {marker: fold(body) for marker, body in sources.items()}
    for sentence in sentences(text):
        markers = [int(m) for m in MARKER.findall(sentence)]
        unknown = [m for m in markers if m not in sources]
        if unknown:
            problems.append(f"markers {unknown} point at no source")
            continue
        if not markers:
            problems.append(f"no citation marker in {sentence[:60]!r}")
            continue
        cited = " ".join(folded[m] for m in dict.fromkeys(markers))  # each source once
        for value in _VALUE.findall(MARKER.sub(" ", sentence)):
            if fold(value) not in cited:
                problems.append(f"{value} is not in source {markers}")
    return problems


def sentences(text: str) -> list[str]:
    """Sentences with their trailing markers ("... 0x0E. [1]" keeps its [1])."""
    text = _MARKERS_AFTER_STOP.sub(lambda m: f"{m.group(2).strip()}{m.group(1)} ", text)
    parts = []
    for line in text.split("\n"):
        parts += [s.strip() for s in _SENTENCE.split(line) if re.search(r"\w", s)]
    # A line holding only markers belongs to the sentence before it.
    merged: list[str] = []
    for part in parts:
        if merged and not MARKER.sub("", part).strip(" .,;"):
            merged[-1] += " " + part
        else:
            merged.append(part)
    return merged
