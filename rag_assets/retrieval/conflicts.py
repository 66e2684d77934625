"""Table values against prose: a table row and a passage of the same document that give
different values for the same field of the same named thing.

A row names its subject in its short text cells ("Register: Tuning Control Register") and
states values in others ("Reset Value: 0x00000001", "Tuning Time: 150 us"). A prose sentence
that names the subject and, shortly after, states a value of the same kind (hex, or a number
with the same unit) that none of the row's cells holds contradicts the row's cell of that
kind: the one whose column name the sentence uses ("resets" -> "Reset Value"), or the only
one. Bare numbers (bit positions, counts) are too ambiguous to compare and are left alone.

`reconcile` keeps an answer that already gives the table's value and says the sources differ,
and otherwise appends a cited note saying so: the table's value applies (issue 11).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from rag_assets.retrieval.tools.table_rows import parse_markdown_rows, parse_row_text
from rag_assets.retrieval.tools.toolbox import Source, fold

TABLE_TYPES = frozenset({"table", "table_row"})
NAME_WINDOW = 80  # characters after a subject's name in which its value is looked for
_UNITS = (
    r"ms|us|µs|μs|ns|ps|s|secs?|seconds?|min|minutes?|hz|khz|mhz|ghz|mv|v|ma|ua|mw|°c"
    r"|bytes?|kb|kib|mb|mib|gb|gib|bits?|%"
)
_SAME_UNIT = {"µs": "us", "μs": "us", "sec": "s", "secs": "s", "second": "s", "seconds": "s"}
_SAME_UNIT |= {"minute": "min", "minutes": "min", "byte": "bytes", "bit": "bits"}
_GENERIC = frozenset({"value", "values"})  # in most column names: names none of them
_VALUE = re.compile(
    rf"(?<![\w.])(?:0x[0-9a-f]+|(?P<number>\d+(?:\.\d+)?)\s?(?P<unit>{_UNITS}))(?![\w])",
    re.IGNORECASE,
)
_NOTE = re.compile(r"\s*\(Note: [^)]*\)")
_ROW_NAME = re.compile(r"^\[(?P<name>[^\]]*)\]")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_DIFFERS = re.compile(
    r"\b(?:differ|disagree|conflict|contradict|inconsistent|discrepan)\w*", re.IGNORECASE
)
_MAX_NAME_WORDS = 6
_WORD = re.compile(r"[^\W\d_]{3}")


@dataclass(frozen=True)
class Conflict:
    subject: str  # "Tuning Control Register"
    column: str  # "Reset Value"
    table: str  # "Table 1: Tuning Register Summary"
    table_value: str
    text_value: str
    table_marker: int
    text_marker: int

    def note(self) -> str:
        return (
            f"Note: the sources disagree on the {self.column} of the {self.subject}: "
            f"{self.table} gives {self.table_value} [{self.table_marker}], the text gives "
            f"{self.text_value} [{self.text_marker}]; the table's value applies."
        )


@dataclass(frozen=True)
class _Row:
    marker: int
    doc_id: str
    table: str
    names: list[str]  # subject names, as the table writes them
    values: dict[str, str]  # column -> value cell (notes removed)


def find_conflicts(sources: Mapping[int, Source]) -> list[Conflict]:
    """Every (row, prose sentence) pair of one document that disagree, once per subject,
    column and text value, by marker."""
    rows = [row for marker, source in sources.items() for row in _rows(marker, source)]
    names: dict[str, set[str]] = {}
    for row in rows:
        names.setdefault(row.doc_id, set()).update(row.names)
    found: dict[tuple[str, str, str], Conflict] = {}
    for marker, source in sources.items():
        if source.chunk_type in TABLE_TYPES:
            continue
        for sentence in _prose_sentences(source.text):
            for row in rows:
                if row.doc_id != source.doc_id:
                    continue
                for conflict in _disagreements(row, marker, sentence, names[row.doc_id]):
                    key = (conflict.subject, conflict.column, conflict.text_value)
                    found.setdefault(key, conflict)
    return list(found.values())


def reconcile(answer: str, conflicts: list[Conflict]) -> tuple[str, list[Conflict]]:
    """The answer with a note for each conflict it does not already acknowledge (it gives the
    table's value and a word such as "differs"), and the conflicts noted."""
    said_so = bool(_DIFFERS.search(answer))
    given = {_key(m) for m in _VALUE.finditer(answer)}
    missing = [
        c for c in conflicts if not (said_so and _key(_VALUE.search(c.table_value)) in given)
    ]
    if not missing:
        return answer, []
    return "\n\n".join([answer.rstrip(), *(c.note() for c in missing)]), missing


def _rows(marker: int, source: Source) -> list[_Row]:
    if source.chunk_type == "table_row":
        all_cells = [parse_row_text(source.text)]
    elif source.chunk_type == "table":
        all_cells = parse_markdown_rows(source.text)
    else:
        return []
    prefix = _ROW_NAME.match(source.text)
    table = prefix.group("name") if prefix else source.section
    rows = []
    for cells in all_cells:
        names, values = [], {}
        for column, cell in cells.items():
            value = _NOTE.sub("", cell).strip()
            if _VALUE.fullmatch(value):
                values[column] = value
            elif not _VALUE.search(value) and _is_name(value):
                names.append(value)
        if names and values:
            rows.append(_Row(marker, source.doc_id, table, names, values))
    return rows


def _is_name(cell: str) -> bool:
    """A short label ("Tuning Control Register"), not a description, an access code ("RW")
    or a bit range ("15:8")."""
    return bool(_WORD.search(cell)) and len(cell.split()) <= _MAX_NAME_WORDS


def _prose_sentences(text: str) -> list[str]:
    """Sentences of a passage, without the lines of any markdown table it holds."""
    prose = " ".join(line for line in text.split("\n") if not line.lstrip().startswith("|"))
    return _SENTENCE.split(" ".join(prose.split()))


def _mentions(name: str, text: str) -> Iterator[re.Match[str]]:
    spelled = r"\s+".join(re.escape(word) for word in name.split())
    return re.finditer(rf"(?<!\w){spelled}(?!\w)", text, re.IGNORECASE)


def _disagreements(row: _Row, text_marker: int, sentence: str, names: set[str]) -> list[Conflict]:
    """What the sentence states about the row's subject that the row contradicts: values
    shortly after the subject's name and before any other row's name ("High Speed reaches
    52 MHz; in Default Speed mode 26 MHz": 26 MHz is Default Speed's)."""
    conflicts = []
    row_values = {_key(_VALUE.search(v)) for v in row.values.values()}
    for name in row.names:
        for mention in _mentions(name, sentence):
            if _inside_longer_name(mention, name, sentence, names):
                continue
            window = sentence[mention.end() : mention.end() + NAME_WINDOW]
            for other in names - {name}:
                window = window[: next((m.start() for m in _mentions(other, window)), None)]
            for stated in _VALUE.finditer(window):
                key = _key(stated)
                if key in row_values:
                    continue
                column = _column(
                    row, key[0], [window[: stated.start()], sentence[: mention.start()]]
                )
                if column is None:
                    continue
                conflicts.append(
                    Conflict(
                        subject=name,
                        column=column,
                        table=row.table,
                        table_value=row.values[column],
                        text_value=stated.group(0),
                        table_marker=row.marker,
                        text_marker=text_marker,
                    )
                )
    return conflicts


def _inside_longer_name(mention: re.Match[str], name: str, sentence: str, names: set[str]) -> bool:
    """ "Block Gap" inside "Block Gap Control Register" names another row."""
    return any(
        m.start() <= mention.start() and mention.end() <= m.end()
        for other in names
        if len(other) > len(name)
        for m in _mentions(other, sentence)
    )


def _column(row: _Row, kind: str, contexts: list[str]) -> str | None:
    """The row's column of this kind of value that the sentence speaks of: named by a word's
    stem ("resets" names "Reset Value") between the name and the value, else before the name;
    else the only column of its kind."""
    same_kind = [c for c, v in row.values.items() if _key(_VALUE.search(v))[0] == kind]
    for context in contexts:
        words = fold(context).split()
        named = [
            c
            for c in same_kind
            if any(
                w.startswith(stem[:5])
                for stem in fold(c).split()
                if len(stem) >= 3 and stem not in _GENERIC
                for w in words
            )
        ]
        if named:
            return named[0] if len(named) == 1 else None
    return same_kind[0] if len(same_kind) == 1 else None


def _key(value: re.Match[str] | None) -> tuple[str, float]:
    """Hex values compare as integers (0x0E == 0x000E); others by number and unit."""
    assert value is not None
    if value.group("unit") is None:
        return ("hex", float(int(value.group(0), 16)))
    unit = fold(value.group("unit"))
    return (_SAME_UNIT.get(unit, unit), float(value.group("number")))
