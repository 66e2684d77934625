"""Question sets a collection writes for itself (`rag-assets evaluate --generate`).

Without a model, questions come from the documents' own structure: a section heading asks
what its section says, a table row asks for one of its cells, a defined term for its
definition. With an LLM configured, sampled passages each get a question the model writes
for them, in its own words. Either way each question's target is its document, its page and
evidence the answer's chunk must contain (a few words of the answer, or a row's label and
cell), so templates that cut a passage differently are scored alike (metrics.py).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, Field

from rag_assets.contracts.ir import FURNITURE_TYPES, DocumentElement, StandardizedDocument
from rag_assets.llm.client import LLMClient, LLMError
from rag_assets.text.markdown import row_cells
from rag_assets.text.normalize import normalize_unspaced

QUESTIONS_PER_DOCUMENT = 12
EVIDENCE_WORDS = 8  # the answer's opening words a relevant chunk must hold
MIN_ANSWER_WORDS = 8  # a section or definition shorter than this asks nothing
_WORDS = re.compile(r"\S+")
# `"Term" means ...`, `Term means ...`, `Term: the ...`, `**Term:** the ...` at a paragraph's
# start.
_DEFINITION = re.compile(
    r"^\W{0,3}[“\"]?(?P<term>[A-Z][\w\- ]{1,48}?)[”\"]?(?:\*\*|__)?\s*(?:means|shall mean"
    r"|refers to|is defined as"
    r"|:)(?:\*\*|__)?\s+(?P<definition>\S.{30,})",
    re.S,
)
_NUMBER = re.compile(r"^[\s$€£(¥-]*[\d.,]+[)%]?\s*$")


class GeneratedQuestion(BaseModel):
    """A question and where it came from (`kind`: heading, table row, definition, LLM)."""

    question: str
    kind: str
    doc_id: str
    page: int | None  # None for a document without pages (Markdown, DOCX, HTML)
    evidence: list[str] = Field(default_factory=list)

    def record(self, number: int, collection_tag: str) -> dict:
        """The question as a line of the project's JSONL sets (sets.py), tagged with the
        collection it was asked of (`collection:specs`)."""
        return {
            "id": f"generated-{number:04}",
            "question": self.question,
            "tags": ["generated", self.kind, collection_tag],
            "doc": self.doc_id,
            **({"page": self.page} if self.page is not None else {}),
            "evidence": self.evidence,
        }


def structural_questions(
    documents: Sequence[StandardizedDocument], per_document: int = QUESTIONS_PER_DOCUMENT
) -> list[GeneratedQuestion]:
    """Up to `per_document` questions a document, drawn evenly from what it offers (headings
    over a section, table rows, defined terms), the same draw every time."""
    found: list[GeneratedQuestion] = []
    for doc in documents:
        offered = {
            "heading": list(_heading_questions(doc)),
            "table row": list(_table_questions(doc)),
            "definition": list(_definition_questions(doc)),
        }
        rng = random.Random(_seed(doc.doc_id))
        for questions in offered.values():
            rng.shuffle(questions)
        # Round robin over the kinds, so a table-heavy document still asks of its prose.
        picked: list[GeneratedQuestion] = []
        while len(picked) < per_document and any(offered.values()):
            for questions in offered.values():
                if questions and len(picked) < per_document:
                    picked.append(questions.pop())
        found.extend(sorted(picked, key=lambda q: (q.page, q.kind, q.question)))
    return found


def _seed(doc_id: str) -> int:
    return int.from_bytes(hashlib.sha256(doc_id.encode()).digest()[:8])


def _body(doc: StandardizedDocument) -> list[DocumentElement]:
    return [e for e in doc.elements if e.type not in FURNITURE_TYPES]


def _page(doc: StandardizedDocument, element: DocumentElement) -> int | None:
    """The element's page, when the document has pages (its chunks then name theirs)."""
    return element.page_start if doc.page_count else None


def _opening(text: str) -> str | None:
    words = _WORDS.findall(" ".join(text.split()))
    return " ".join(words[:EVIDENCE_WORDS]) if len(words) >= MIN_ANSWER_WORDS else None


def _heading_questions(doc: StandardizedDocument) -> Iterator[GeneratedQuestion]:
    """A heading whose section opens with a paragraph: what does the section say."""
    body = _body(doc)
    for position, element in enumerate(body[:-1]):
        following = body[position + 1]
        heading = " ".join(element.text.lstrip("#").split()).strip(" .:")
        opening = _opening(following.text) if following.type == "paragraph" else None
        if element.type != "heading" or not opening or not 3 <= len(heading) <= 80:
            continue
        yield GeneratedQuestion(
            question=f"What does the document say about {heading}?",
            kind="heading",
            doc_id=doc.doc_id,
            page=_page(doc, following),
            evidence=[opening],
        )


def _table_questions(doc: StandardizedDocument) -> Iterator[GeneratedQuestion]:
    """A row with a label and a value under a named column: what is that value."""
    for element in _body(doc):
        if element.type != "table":
            continue
        rows = (
            element.table.grid()
            if element.table is not None
            else [row_cells(line) for line in element.text.splitlines() if line.startswith("|")]
        )
        rows = [r for r in rows if r and not all(set(c) <= set("-: ") for c in r)]
        if len(rows) < 2:
            continue
        header, body_rows = rows[0], rows[1:]
        for row in body_rows:
            label = " ".join(row[0].split())
            if not label or _NUMBER.match(label) or len(label) > 80:
                continue
            column = next(
                (
                    i
                    for i in range(1, min(len(row), len(header)))
                    if row[i].strip() and header[i].strip() and header[i].strip() != row[i].strip()
                ),
                None,
            )
            if column is None:
                continue
            name = " ".join(header[column].split())
            yield GeneratedQuestion(
                question=f"What is the {name} for {label}?",
                kind="table row",
                doc_id=doc.doc_id,
                page=_page(doc, element),
                evidence=[label, " ".join(row[column].split())],
            )


def _definition_questions(doc: StandardizedDocument) -> Iterator[GeneratedQuestion]:
    """A paragraph or list item that defines a term: what does the term mean."""
    for element in _body(doc):
        if element.type not in ("paragraph", "list"):
            continue
        for line in element.text.splitlines():
            match = _DEFINITION.match(line.strip().lstrip("-*• ").strip())
            opening = _opening(match.group("definition")) if match else None
            if match is None or opening is None:
                continue
            term = " ".join(match.group("term").split())
            yield GeneratedQuestion(
                question=f"What does {term} mean?",
                kind="definition",
                doc_id=doc.doc_id,
                page=_page(doc, element),
                evidence=[opening],
            )


class _AskedQuestion(BaseModel):
    question: str
    evidence: str  # words copied from the passage that hold the answer


PROMPT = """Write one question that a reader of this document could ask and that the passage
below answers. Use your own words: do not copy a phrase of more than three words from the
passage into the question. Answer in JSON: {{"question": "...", "evidence": "..."}}, where
evidence is a short exact quote (at most 12 words) from the passage that holds the answer.

Passage (page {page} of {name}):
{text}"""


def model_questions(
    documents: Sequence[StandardizedDocument],
    llm: LLMClient,
    per_document: int = QUESTIONS_PER_DOCUMENT,
) -> tuple[list[GeneratedQuestion], list[str]]:
    """Questions the model writes for sampled passages (paragraphs of a few sentences, the
    same sample every time), and what went wrong with the others (one line each): a failed
    call, or evidence that is not in its passage."""
    found: list[GeneratedQuestion] = []
    problems: list[str] = []
    for doc in documents:
        passages = [
            e for e in _body(doc) if e.type == "paragraph" and len(_WORDS.findall(e.text)) >= 25
        ]
        rng = random.Random(_seed(doc.doc_id))
        sample = rng.sample(passages, min(per_document, len(passages)))
        name = (doc.source_path or doc.doc_id).rsplit("/", 1)[-1]
        for passage in sorted(sample, key=lambda e: e.start_char):
            prompt = PROMPT.format(page=passage.page_start, name=name, text=passage.text[:3000])
            try:
                asked = llm.chat_json([{"role": "user", "content": prompt}], _AskedQuestion)
            except LLMError as error:
                problems.append(f"{name} p.{passage.page_start}: the LLM failed ({error.reason})")
                continue
            evidence = " ".join(asked.evidence.split())
            if not evidence or normalize_unspaced(evidence) not in normalize_unspaced(passage.text):
                problems.append(f"{name} p.{passage.page_start}: evidence not in the passage")
                continue
            found.append(
                GeneratedQuestion(
                    question=" ".join(asked.question.split()),
                    kind="LLM",
                    doc_id=doc.doc_id,
                    page=_page(doc, passage),
                    evidence=[evidence],
                )
            )
    return found, problems
