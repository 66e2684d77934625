"""What one line of a briefing paper or FAQ is: part, topic, question, answer, bullet, furniture.

Lines arrive as the IR wrote them, so a marker may follow the decorations a parser adds:
a list marker (PyMuPDF writes a bulleted `(B) 安置安排` as `- (B) 安置安排`), markdown `#`s
or bold (`**問：…**`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

PartKind = Literal["qa", "speaking_notes"]

# Decorations before a marker: indentation, a list marker, markdown heading hashes, bold.
_LEAD = r"^[ \t]*(?:[-*+][ \t]+|\d{1,2}[.)][ \t]+)?(?:#{1,6}[ \t]+)?(?:\*\*|__)?[ \t]*"
_LEAD_RE = re.compile(_LEAD)
# Bold closing a line: `**問：…？**`.
_TRAIL_RE = re.compile(r"[ \t]*(?:\*\*|__)[ \t]*$")

# A part of a briefing paper: 發言要點 (speaking notes), 備用問答 / 備用問題 (standby Q&A) or
# their English names, optionally numbered ("一、", "Part 2:"). An "Others" part holds Q&A
# without markers.
_PART = re.compile(
    r"^(?:[一二三四五六七八九十]+[、.．]\s*|Part\s+[\dIVX]+[.:]?\s*)?"
    r"(?:(?P<notes>發言要點|Speaking\s+(?:Notes|Points))"
    r"|(?P<qa>備用問答|備用問題|(?:Supplementary|Standby|Possible)\s+Questions(?:\s+and\s+Answers)?)"
    r"|(?P<others>Others|其他(?:問題)?))"
    r"\s*[:：]?$",
    re.IGNORECASE,
)
# A topic grouping Q&A pairs: "(A) 排水系統"; the letter prefixes its questions' ids.
_TOPIC = re.compile(r"^[(（]\s*(?P<label>[A-Z])\s*[)）]\s*\S")
# A narrative section: "(1) 住戶的安置補償".
_NARRATIVE = re.compile(r"^[(（]\s*(?P<label>\d{1,2})\s*[)）]\s*\S")
# Headings are short and end without a sentence's or clause's punctuation.
_HEADING_MAX_CHARS = 40
_CLAUSE_END = re.compile(r"[。；;，,：:？?！!]$")

# 問 A1： / 問A3: / 問：, the colon full-width (：), vertical (︰) or ASCII.
_ZH_QUESTION = re.compile(_LEAD + r"問\s*(?P<id>[A-Z]{0,2}\d{1,3})?\s*[：︰:]\s*")
# 答 A1： at a line start, or inside the question's line after a space or a question mark
# (never the 答 of a word such as 回答：).
_ZH_ANSWER = re.compile(
    r"(?:^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?|(?<=[\s？?。*]))答\s*(?:[A-Z]{0,2}\d{1,3})?\s*[：︰:]"
)
# Q1 … Q24 opening a line; the answer is whatever follows, unmarked.
_NUMBERED_QUESTION = re.compile(
    _LEAD + r"Q(?P<number>\d{1,3})(?:\*\*|__)?(?:[.:：)][ \t]*|[ \t]+)(?=\S)"
)
# MkDocs admonitions: ??? question "…" (collapsible) or !!! question "…".
_ADMONITION = re.compile(_LEAD + r"(?:\?{3}\+?|!{3})\s*question\s*\"\s*(?P<text>[^\"]+?)\s*\"")
# A question without a marker: one line ending in a question mark (closing quotes allowed).
_BARE_QUESTION = re.compile(r"[?？][\"'”’」』)）]*$")
_BARE_QUESTION_MAX_CHARS = 200

# Bracketed asides inside answers: internal notes ([內部參考…], [內部補充資料…]) and
# follow-ups ([如被追問…], [如追問…]).
BRACKET_OPEN = "[［【"
BRACKET_CLOSE = "]］】"
BRACKETS = re.compile(r"[\[［【\]］】]")  # the openers above and their closers
INTERNAL_NOTE = re.compile(r"[\[［【]\s*內部(?:參考|補充資料)")

# Running page furniture left inside a paragraph: "E-2", the date line under it, the (E) mark.
_FURNITURE_TOKEN = (
    r"(?:[A-Z]{1,2}-\d{1,3}|[(（]E[)）]"
    r"|\d{4}\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*日|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"
    r"|\d{1,2}[./]\d{1,2}[./]\d{4}|\d{1,2}\s+[A-Z][a-z]{2,8}\s+\d{4})"
)
_FURNITURE = re.compile(rf"^\s*{_FURNITURE_TOKEN}(?:\s+{_FURNITURE_TOKEN})*\s*$")

# A speaking-note bullet: an optional list marker, then the bullet's own mark.
_LIST_MARK = re.compile(r"^(?P<indent>[ \t]*)(?P<mark>[-*+]|\d{1,2}[.)])[ \t]+")
_GLYPH_MARK = re.compile(r"^(?P<mark>[⚫●■◆▪•➢➤►▶]|[ivx]{1,4}[.)](?=[ \t]))")


@dataclass(frozen=True)
class Part:
    kind: PartKind
    id_prefix: str | None  # "O" for an "Others" part, whose questions carry no ids


@dataclass(frozen=True)
class QuestionStart:
    question_id: str | None  # as written ("A1", "Q3"); None when the marker has none
    words_start: int  # where the question's words begin in the line
    quoted: str | None  # an admonition's question, given whole in quotes
    answer_marked: bool  # True: the answer opens with 答; False: it is whatever follows


def clean(line: str) -> str:
    """The line without leading decorations or closing bold, whitespace collapsed."""
    return " ".join(_TRAIL_RE.sub("", _LEAD_RE.sub("", line, count=1)).split())


def part(title: str) -> Part | None:
    match = _PART.match(title)
    if not match:
        return None
    if match.group("notes"):
        return Part("speaking_notes", None)
    return Part("qa", "O" if match.group("others") else None)


def topic_label(title: str) -> str | None:
    """The letter of a topic line such as "(A) 排水系統"."""
    match = _TOPIC.match(title)
    return match.group("label") if match and heading_like(title) else None


def narrative_label(title: str) -> str | None:
    """The number of a narrative heading such as "(1) 住戶的安置補償"."""
    match = _NARRATIVE.match(title)
    return match.group("label") if match and heading_like(title) else None


def heading_like(title: str) -> bool:
    """Short, and not a sentence, clause or bracketed aside ([內部參考：…])."""
    return (
        len(title) <= _HEADING_MAX_CHARS
        and not _CLAUSE_END.search(title)
        and title[:1] not in BRACKET_OPEN
        and title[-1:] not in BRACKET_CLOSE
    )


def question_start(line: str) -> QuestionStart | None:
    """A marked question opening this line: 問 A1：, Q1, or a question admonition."""
    if match := _ZH_QUESTION.match(line):
        return QuestionStart(match.group("id"), match.end(), None, answer_marked=True)
    if match := _NUMBERED_QUESTION.match(line):
        return QuestionStart(f"Q{match.group('number')}", match.end(), None, answer_marked=False)
    if match := _ADMONITION.match(line):
        return QuestionStart(None, match.start("text"), match.group("text"), answer_marked=False)
    return None


def answer_marker(line: str, start: int = 0) -> int | None:
    """Where a 答 marker sits in the line at or after `start`, if anywhere."""
    match = _ZH_ANSWER.search(line, start)
    return match.start() if match else None


def is_bare_question(line: str) -> bool:
    """A line that is a question on its own, not a bracketed aside."""
    text = clean(line)
    return (
        0 < len(text) <= _BARE_QUESTION_MAX_CHARS
        and text[0] not in BRACKET_OPEN
        and bool(_BARE_QUESTION.search(text))
    )


def is_furniture(line: str) -> bool:
    return bool(_FURNITURE.match(line))


def bullet_mark(line: str) -> tuple[int, str] | None:
    """(indentation, kind of mark) of a bullet line; the kind tells nesting levels apart."""
    listed = _LIST_MARK.match(line)
    rest = line[listed.end() :] if listed else line.lstrip(" \t")
    indent = len(listed.group("indent")) if listed else len(line) - len(rest)
    kind = None
    if listed:
        kind = "number" if listed.group("mark")[0].isdigit() else "dash"
    if glyph := _GLYPH_MARK.match(rest):
        mark = glyph.group("mark")
        kind = "roman" if mark[-1] in ".)" else mark
    return (indent, kind) if kind else None


def bracket_depth(text: str, depth: int) -> int:
    """Open brackets after `text`, given `depth` open before it."""
    for match in BRACKETS.finditer(text):
        depth = depth + 1 if match.group() in BRACKET_OPEN else max(0, depth - 1)
    return depth
