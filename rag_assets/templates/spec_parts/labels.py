"""Table, figure and section labels: the captions that define them, the text that cites them.

Labels are canonical (`Table 3`, `Figure 7-1`, `Section 2.1.1`) whatever the source wrote
(`TABLE 3`, `Fig. 7–1`, `表 3`, `§2.1.1`), so references and cross-reference keys match.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.templates.base import SKIPPED_TYPES

LabelKind = Literal["table", "figure"]

# "3", "7-1", "7.4", "A.1"; a lone letter only before a number, so "Table A" is not a label.
_ID = r"(?:\d+|[A-Z](?=[.\-–]\d))(?:[.\-–]\d+)*"
# Every spelling of a label word is told apart by its first character.
_KINDS = {"t": "table", "表": "table", "f": "figure", "图": "figure", "圖": "figure"}
_KINDS |= {"s": "section", "§": "section"}
_CAPTION = re.compile(
    rf"^(?P<word>(?i:table|tab\.|figure|fig\.)|表|图|圖)\s*(?P<id>{_ID})"
    r"(?P<sep>\s*[:.：\-–—]|\s+|$)\s*(?P<title>.*)$",
    re.DOTALL,
)
_STRICT_SEPARATOR = re.compile(r"\s*[:.：\-–—]")
_REFERENCE = re.compile(
    r"(?P<word>\b(?i:tables?|tab\.|figures?|figs?\.|sections?|sec\.)|§|表|图|圖)\s*\.?\s*"
    rf"(?P<ids>{_ID}(?:\s*(?:,|and|or|&)\s*{_ID})*)"
)
_LIST_ID = re.compile(_ID)
# "see 2.1.1": a bare section number counts only after these words and only when the
# document has that section, since bare numbers are mostly values ("3.3 V").
_BARE_SECTION = re.compile(
    r"\b(?i:see|described in|defined in|specified in|refer to)\s+(?P<id>\d+(?:\.\d+)+)\b"
)
# A label at the start of a line followed by punctuation defines it (a caption), not cites it.
_LINE_LEAD = re.compile(r"[\s\[*_#>|]*$")
_DEFINING_TAIL = re.compile(r"\s*(?:[:.：\-–—\]]|$)", re.MULTILINE)
_EMPHASIS = re.compile(r"\*{1,3}|(?<!\w)_{1,3}|_{1,3}(?!\w)")
_SENTENCE_CUT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_NAME_WORDS = 10
_NAME_CHARS = 90


@dataclass(frozen=True)
class Caption:
    kind: LabelKind
    label: str | None  # canonical, "Table 3"; None for a caption without a label
    text: str  # the whole caption, emphasis removed
    name: str  # label and the title's first sentence, shortened: what a row chunk is prefixed with


def _kind(word: str) -> str:
    """table, figure or section."""
    return _KINDS[word[0].lower()]


def _canonical(kind: str, ident: str) -> str:
    return f"{kind.capitalize()} {ident.replace('–', '-')}"


def plain(text: str) -> str:
    """Text without markdown emphasis, whitespace collapsed."""
    return " ".join(_EMPHASIS.sub("", text).split())


def parse_caption(text: str, *, strict: bool) -> Caption | None:
    """A caption that opens with a table or figure label.

    Strict (for paragraphs): the label must be followed by punctuation, so that
    "Table 2 shows ..." stays a sentence. Caption elements may use a plain space.
    """
    cleaned = plain(text)
    match = _CAPTION.match(cleaned)
    if not match or (strict and not _STRICT_SEPARATOR.match(match.group("sep"))):
        return None
    kind: LabelKind = "table" if _kind(match.group("word")) == "table" else "figure"
    head = cleaned[: match.start("title")].rstrip()
    title = _shorten(match.group("title"))
    return Caption(
        kind=kind,
        label=_canonical(kind, match.group("id")),
        text=cleaned,
        name=f"{head} {title}" if title else head.rstrip(":.：-–— "),
    )


def shorten_name(text: str) -> str:
    """A caption without a label (or a heading) as a short name."""
    return _shorten(plain(text))


def _shorten(title: str) -> str:
    """The first sentence, cut to a few words: row chunks repeat it, so it must stay short."""
    first = _SENTENCE_CUT.split(title.strip(), maxsplit=1)[0].rstrip(".。")
    words = first.split()
    if len(words) > _NAME_WORDS:
        return " ".join(words[:_NAME_WORDS]) + " …"
    if len(first) > _NAME_CHARS:
        return first[:_NAME_CHARS].rstrip() + "…"
    return first


def table_caption(doc: StandardizedDocument, index: int) -> tuple[Caption | None, int | None]:
    """The table's caption and the caption element's index.

    The caption comes from the table's own structure when it has one, else from a caption
    (or a paragraph that opens with a table label) right before or after the table.
    """
    element = doc.elements[index]
    near = nearby_caption(doc, index, "table")
    own = element.table.caption if element.table and element.table.caption else None
    if own is None:
        return (near[1], near[0]) if near else (None, None)
    caption = parse_caption(own, strict=False) or Caption(
        "table", None, plain(own), shorten_name(own)
    )
    near_index = near[0] if near and near[1].text == caption.text else None
    return caption, near_index


def nearby_caption(
    doc: StandardizedDocument, index: int, kind: LabelKind
) -> tuple[int, Caption] | None:
    """A caption of `kind` right before or after `index`, furniture skipped.

    Tables are looked up above first and figures below first, as they are usually set; on
    the other side, a caption set that way for another element of the same type is its.
    """
    own_type = doc.elements[index].type
    preferred, other = (-1, 1) if kind == "table" else (1, -1)
    for step in (preferred, other):
        neighbour = _neighbour(doc, index, step)
        if neighbour is None:
            continue
        element = doc.elements[neighbour]
        if element.type not in ("caption", "paragraph"):
            continue
        beyond = _neighbour(doc, neighbour, step)
        if step == other and beyond is not None and doc.elements[beyond].type == own_type:
            continue
        caption = parse_caption(element.text, strict=element.type == "paragraph")
        if caption and caption.kind == kind:
            return neighbour, caption
    return None


def _neighbour(doc: StandardizedDocument, index: int, step: int) -> int | None:
    position = index + step
    while 0 <= position < len(doc.elements):
        if doc.elements[position].type not in SKIPPED_TYPES:
            return position
        position += step
    return None


def find_references(
    text: str, known_sections: Collection[str], exclude: str | None = None
) -> list[str]:
    """Labels the text cites, in order of first mention: `Table 3`, `Figure 7-1`, `Section 2.1`."""
    found: list[tuple[int, str]] = []
    for match in _REFERENCE.finditer(text):
        if _defines(text, match):
            continue
        kind = _kind(match.group("word"))
        ids = _LIST_ID.findall(match.group("ids"))
        plural = match.group("word").lower().rstrip(".").endswith("s")
        for ident in ids if plural else ids[:1]:
            found.append((match.start(), _canonical(kind, ident)))
    for match in _BARE_SECTION.finditer(text):
        label = _canonical("section", match.group("id"))
        if label in known_sections:
            found.append((match.start("id"), label))
    labels = dict.fromkeys(label for _, label in sorted(found) if label != exclude)
    return list(labels)


def _defines(text: str, match: re.Match[str]) -> bool:
    line_start = text.rfind("\n", 0, match.start()) + 1
    return bool(
        _LINE_LEAD.match(text[line_start : match.start()])
        and _DEFINING_TAIL.match(text, match.end())
    )
