"""Evaluation sets: questions and what is relevant to them, read from a folder.

Three set formats are read:

- the project's JSONL (`*.jsonl`, one question a line): `id`, `question`, `language`, `tags`,
  and relevance as `doc` (doc id or source file name), `page` and/or `evidence` (a string the
  chunk's text must contain, whitespace aside, or a list of such strings); a chunk is relevant
  when it meets every field given. `relevant: [{doc, page, evidence}, ...]` lists several targets instead.
- BEIR (a folder with `queries.jsonl`, `qrels/*.tsv` and `corpus.jsonl`): a corpus row with
  `doc` / `page` / `evidence` (top level or under `metadata`) maps onto an ingested document;
  any other row is a passage indexed as a document of its own.
- SQuAD / CMRC 2018 JSON (`data[].paragraphs[].qas[]`): passage retrieval, each paragraph a
  document of its own and the one relevant to its questions.

A question is bounded as a query is (`retrieval/inputs.py`), and a line of questions is read up
to `MAX_QUESTION_LINE_CHARS` and no further: a bad line (too long, not JSON, a question out of
bounds, no target) is left out with one problem naming the file, the line and what is wrong, and
the rest of the set is evaluated.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.errors import ConfigurationError
from rag_assets.language import detect_language
from rag_assets.normalize.document import document_of
from rag_assets.retrieval.inputs import MAX_QUERY_CHARS, QueryText, one_line

# A question at the query bound, with room for its id, tags and evidence strings.
MAX_QUESTION_LINE_CHARS = 16 * MAX_QUERY_CHARS


class Target(BaseModel):
    """One thing a question asks for; a chunk matches it when it meets every field given."""

    doc: str | None = None  # doc id, source path or file name
    page: int | None = None
    # Text the chunk must contain; a list when the parts may be laid out apart (table cells).
    evidence: list[str] = Field(default_factory=list)

    @field_validator("evidence", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value or []

    @model_validator(mode="after")
    def _something(self) -> Target:
        if self.doc is None and self.page is None and not self.evidence:
            raise ValueError("a relevance target needs a doc, a page or an evidence string")
        if self.page is not None and self.doc is None:
            raise ValueError("a page means nothing without its doc")
        return self


class EvalQuestion(BaseModel):
    id: str
    question: QueryText
    language: str = ""  # detected from the text when empty
    tags: list[str] = Field(default_factory=list)
    targets: list[Target]
    set_name: str = ""

    @model_validator(mode="after")
    def _defaults(self) -> EvalQuestion:
        if not self.targets:
            raise ValueError(f"question {self.id!r} has no relevance target")
        if not self.language:
            self.language = detect_language(self.question)
        return self


class Passage(BaseModel):
    """A set's own passage, indexed as a document of its own."""

    doc_id: str
    title: str = ""
    text: str


class EvalSet(BaseModel):
    name: str
    questions: list[EvalQuestion]
    passages: list[Passage] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)  # "file:line: what is wrong; left out"


def find_eval_sets(folder: Path) -> list[Path]:
    """The sets in `folder`, unread: `*.jsonl` and `*.json` files, BEIR sub-folders; none when
    the folder does not exist."""
    if not folder.is_dir():
        return []
    return [
        path
        for path in sorted(folder.iterdir())
        if (path.is_dir() and (path / "queries.jsonl").is_file())
        or (path.is_file() and path.suffix in (".jsonl", ".json"))
    ]


def load_eval_sets(folder: Path) -> list[EvalSet]:
    """Every set in `folder`: `*.jsonl` files, SQuAD/CMRC `*.json` files, BEIR sub-folders."""
    if not folder.is_dir():
        raise ConfigurationError(f"no evaluation folder {folder}")
    sets: list[EvalSet] = []
    for path in find_eval_sets(folder):
        _within(folder, path)
        sets.append(load_eval_set(path))
    return sets


def load_eval_set(path: Path) -> EvalSet:
    """One set by path, whatever its format."""
    if path.is_dir():
        return load_beir_set(path)
    return load_jsonl_set(path) if path.suffix == ".jsonl" else load_squad_set(path)


def _jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, json.loads(line)


def _question_lines(path: Path, problems: list[str]) -> Iterable[tuple[int, dict]]:
    """`path`'s JSON objects a line, each line read up to `MAX_QUESTION_LINE_CHARS`; a line
    over it (skipped unread) or not a JSON object is a problem."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        number = 0
        while line := handle.readline(MAX_QUESTION_LINE_CHARS + 1):
            number += 1
            if len(line) > MAX_QUESTION_LINE_CHARS:
                while line and not line.endswith("\n"):  # the rest of the line, a block at a time
                    line = handle.readline(MAX_QUESTION_LINE_CHARS)
                problems.append(
                    f"{path}:{number}: the line is over {MAX_QUESTION_LINE_CHARS:,} characters "
                    f"(a question may hold {MAX_QUERY_CHARS:,}); left out"
                )
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as error:
                problems.append(f"{path}:{number}: not JSON ({error}); left out")
                continue
            if not isinstance(record, dict):
                problems.append(f"{path}:{number}: not a JSON object; left out")
                continue
            yield number, record


def _question(where: str, problems: list[str], **fields: Any) -> EvalQuestion | None:
    """The question, or None with a problem saying `where` it is and what is out of bounds."""
    try:
        return EvalQuestion(**fields)
    except ValidationError as error:
        problems.append(f"{where}: {one_line(error, 'question')}; left out")
    return None


def load_jsonl_set(path: Path) -> EvalSet:
    questions: list[EvalQuestion] = []
    problems: list[str] = []
    for number, record in _question_lines(path, problems):
        if "question" not in record:
            problems.append(f"{path}:{number}: no question; left out")
            continue
        targets = record.get("relevant") or [
            {k: record[k] for k in ("doc", "page", "evidence") if record.get(k) is not None}
        ]
        question = _question(
            f"{path}:{number}",
            problems,
            id=str(record.get("id", f"{path.stem}-{number}")),
            question=record["question"],
            language=record.get("language", ""),
            tags=list(record.get("tags", [])),
            targets=targets,
            set_name=path.stem,
        )
        if question is not None:
            questions.append(question)
    return EvalSet(name=path.stem, questions=questions, problems=problems)


def load_squad_set(path: Path) -> EvalSet:
    """SQuAD / CMRC 2018: each paragraph is a passage, relevant to the questions asked of it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    passages: dict[str, Passage] = {}
    questions: list[EvalQuestion] = []
    problems: list[str] = []
    for article in data.get("data", []):
        title = str(article.get("title", ""))
        for paragraph in article.get("paragraphs", []):
            text = paragraph["context"]
            # The text's hash: a paragraph repeated across articles is one passage.
            doc_id = f"{path.stem}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
            passages.setdefault(doc_id, Passage(doc_id=doc_id, title=title, text=text))
            for qa in paragraph.get("qas", []):
                if qa.get("is_impossible"):
                    continue
                question = _question(
                    f"{path}: question {qa['id']!r}",
                    problems,
                    id=str(qa["id"]),
                    question=qa["question"],
                    targets=[Target(doc=doc_id)],
                    set_name=path.stem,
                )
                if question is not None:
                    questions.append(question)
    return EvalSet(
        name=path.stem, questions=questions, passages=list(passages.values()), problems=problems
    )


def _within(root: Path, path: Path) -> Path:
    """`path`, refused when it (through a symbolic link) leads outside `root`: evaluation sets,
    like the inbox, never read what lies outside their folder."""
    if not path.resolve().is_relative_to(root.resolve()):
        raise ConfigurationError(f"{path}: a symbolic link leading outside {root}; not read")
    return path


def load_beir_set(folder: Path) -> EvalSet:
    for part in (folder / "corpus.jsonl", folder / "queries.jsonl", *folder.glob("qrels/*")):
        _within(folder, part)
    corpus_targets, passages = _beir_corpus(folder)
    relevant = _beir_relevant(folder, corpus_targets)
    problems: list[str] = []
    questions = []
    queries = folder / "queries.jsonl"
    for number, query in _question_lines(queries, problems):
        if not relevant.get(str(query.get("_id"))):
            continue
        question = _question(
            f"{queries}:{number}",
            problems,
            id=str(query["_id"]),
            question=query.get("text"),
            language=query.get("metadata", {}).get("language", ""),
            tags=list(query.get("metadata", {}).get("tags", [])),
            targets=relevant[str(query["_id"])],
            set_name=folder.name,
        )
        if question is not None:
            questions.append(question)
    return EvalSet(name=folder.name, questions=questions, passages=passages, problems=problems)


def _beir_corpus(folder: Path) -> tuple[dict[str, Target], list[Passage]]:
    """Each corpus id's target: the document, page or evidence its metadata names, else a
    passage of its own."""
    corpus_targets: dict[str, Target] = {}
    passages: list[Passage] = []
    corpus = folder / "corpus.jsonl"
    if not corpus.is_file():
        return corpus_targets, passages
    for _, row in _jsonl(corpus):
        fields = {**row.get("metadata", {}), **row}
        mapped = {k: fields[k] for k in ("doc", "page", "evidence") if fields.get(k)}
        corpus_id = str(row["_id"])
        if mapped:
            corpus_targets[corpus_id] = Target(**mapped)
        else:
            doc_id = f"{folder.name}-{corpus_id}"
            passages.append(Passage(doc_id=doc_id, title=row.get("title", ""), text=row["text"]))
            corpus_targets[corpus_id] = Target(doc=doc_id)
    return corpus_targets, passages


def _beir_relevant(folder: Path, corpus_targets: dict[str, Target]) -> dict[str, list[Target]]:
    """Each query id's relevant targets, from the qrels files (a positive score)."""
    relevant: dict[str, list[Target]] = defaultdict(list)
    for qrels in sorted((folder / "qrels").glob("*.tsv")):
        with qrels.open(encoding="utf-8", newline="") as handle:
            for row in csv.reader(handle, delimiter="\t"):
                if len(row) < 3 or row[0] == "query-id" or float(row[2]) <= 0:
                    continue
                if row[1] not in corpus_targets:
                    corpus = folder / "corpus.jsonl"
                    raise ConfigurationError(f"{qrels}: corpus id {row[1]!r} is not in {corpus}")
                relevant[row[0]].append(corpus_targets[row[1]])
    return relevant


def passage_document(passage: Passage) -> StandardizedDocument:
    """A passage as IR: its title as a heading (when it has one) over one paragraph."""
    elements = [DocumentElement(type="paragraph", text=passage.text)]
    if passage.title:
        elements.insert(0, DocumentElement(type="heading", level=1, text=passage.title))
    return document_of(
        elements,
        doc_id=passage.doc_id,
        source_path=passage.doc_id,
        source_sha256=hashlib.sha256(passage.text.encode()).hexdigest(),
        parser="passage",
        parser_version="1",
        language=detect_language(passage.text),
        title=passage.title or None,
    )
