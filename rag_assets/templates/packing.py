"""Packing elements into chunks within a token limit, shared by the section-based templates.

A template hands over the elements of one unit (a section, a clause, an answer) and the
`lead` its chunks' context_text will put before them. `Packer.pieces` keeps an element
whole when it fits a chunk alone; an element too large is cut at its natural seams
(sentences, list items, table rows with the header repeated, code lines), and a seam still
too large between words (a table row between its cells). `Packer.pack` groups consecutive
pieces into chunks of near-equal size, each continuing chunk first repeating the tail of
the one before it (within `overlap_tokens`). `render` writes a chunk's text: its heading
line, then each element's covered slice.

Token limit: every chunk counted after `lead` holds at most `max_tokens`, except where the
lead alone leaves no room for content. A split table's header rows (a code block's fences)
are repeated in every part only while, with the lead, they take at most half the limit.
Chunks of several pieces are checked with an exact count; a single seam is sized by adding
counts, which is exact for tokenizers that split on whitespace first (WordPiece,
SentencePiece) and within a token or two for byte-level BPE.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import groupby

from rag_assets.contracts.ir import DocumentElement
from rag_assets.templates.base import ElementSpan, contextualize, has_words
from rag_assets.templates.tokens import TokenCounter, balanced_runs, token_windows
from rag_assets.text.markdown import TABLE_RULE, markdown_row, row_cells
from rag_assets.text.numbering import section_number_pattern
from rag_assets.vocabulary import Vocabulary

BLOCK_SEPARATOR = "\n\n"

# Body rows without a row label that a split table repeats with its header rows, at most.
MAX_UNLABELLED_HEADER_ROWS = 2
_PERIOD = re.compile(r"\b(?:19|20)\d\d\b|\b(?:Q|H)[1-4]\b|\b\d{1,2}(?=,\s*(?:19|20)\d\d)", re.I)
_CELL_END = re.compile(r"(?<!\\)\|[ \t]*")  # a table row's cell ends at its unescaped pipe
# A sentence ends at . ! ? before whitespace, or at 。！？ (no space follows in CJK text);
# closing quotes and brackets stay with their sentence.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[。！？]+[\"'”’)\]」』）]*")
# A paragraph number ("2.", "3.1.", "iv.") ends in a full stop but opens the sentence after it.
_ENUMERATOR = re.compile(rf"{section_number_pattern()}\.|[ivxlcIVXLC]{{1,6}}\.")
_LIST_ITEM = re.compile(r"^([ \t]*)(?:[-*+•]|\d+[.)])[ \t]")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Piece:
    """A contiguous slice of one element's text; the unit that chunks are packed from."""

    index: int  # the element's position in reading order, to merge adjacent slices
    element: DocumentElement
    start: int
    end: int
    tokens: int
    # Repeated around a partial element: a table's header rows, a code block's fences.
    prefix: str = ""
    suffix: str = ""
    # A split table's caption, put before every part whose chunk does not hold the caption's
    # own element (position `caption_index`; None when the caption is the table's own).
    caption: str = ""
    caption_index: int | None = None

    @property
    def span(self) -> ElementSpan:
        return ElementSpan(self.element, self.start, self.end)


def render(line: str, pieces: Sequence[Piece]) -> str:
    """Heading line, then each element's covered slice; adjacent slices of one element merge."""
    blocks = [line] if line else []
    held = {piece.index for piece in pieces}
    for _, group in groupby(pieces, key=lambda piece: piece.index):
        slices = list(group)
        first, last = slices[0], slices[-1]
        if first.caption and first.caption_index not in held:
            blocks.append(first.caption)
        body = first.element.text[first.start : last.end]
        blocks.append(first.prefix + body + first.suffix)
    return BLOCK_SEPARATOR.join(blocks)


@dataclass(frozen=True)
class Packer:
    """Cuts elements into pieces and packs pieces into chunks of at most `max_tokens`."""

    counter: TokenCounter
    max_tokens: int
    overlap_tokens: int
    vocabularies: Sequence[Vocabulary] = ()  # the document's packs, whose names crumbs add

    def lead(self, title: str | None, headings: Sequence[str], line: str) -> str:
        """What chunks under `line` are sized after: breadcrumb and heading line, as their
        context_text puts them before the content, so that what is embedded keeps the limit;
        the heading line alone when the two take more than half the limit."""
        lead = contextualize(title, headings, line, self.vocabularies)
        return lead if self.counter.count(lead) <= self.max_tokens // 2 else line

    def pieces(
        self,
        index: int,
        element: DocumentElement,
        lead: str,
        caption: str = "",
        caption_index: int | None = None,
    ) -> list[Piece]:
        """The element whole if it fits a chunk alone, else its seams, cut further if needed.

        `lead` is what each chunk's context_text puts before the content (breadcrumb and
        heading line, `lead`): the limit holds for what is embedded. A split table repeats
        its header rows in every part, and its `caption` where the part's chunk does not
        already hold it, so that every part names its table.
        """
        counter, text, limit = self.counter, element.text, self.max_tokens
        base = counter.count(lead)
        alone = counter.count(render(lead, [Piece(index, element, 0, len(text), 0)]))
        if alone <= limit:
            return [Piece(index, element, 0, len(text), alone - base)]
        prefix_end, seams, suffix_start = _seams(element)
        header = text[:prefix_end]
        prefix, suffix, caption, overhead = self._repeats(
            index, element, lead, header, text[suffix_start:], caption
        )
        repeated = (prefix, suffix, caption, caption_index)
        budget = max(1, limit - overhead)
        pieces: list[Piece] = []
        for start, end in _worded(text, seams):
            cost = counter.count(text[start:end])
            if cost <= budget:
                pieces.append(Piece(index, element, start, end, cost, *repeated))
            else:
                pieces += self._cut_seam(index, element, start, end, budget, repeated)
        if pieces and prefix != header and prefix:
            # The first part keeps the header rows whole where they fit: their text is kept.
            whole = replace(pieces[0], prefix=header)
            if counter.count(render(lead, [whole])) <= limit:
                pieces[0] = whole
        return pieces

    def _repeats(
        self,
        index: int,
        element: DocumentElement,
        lead: str,
        prefix: str,
        suffix: str,
        caption: str,
    ) -> tuple[str, str, str, int]:
        """What every part of a split element repeats (prefix, suffix, caption) and what that
        costs a chunk besides its content, from the most to nothing: the header rows (or
        fences) and caption would leave too little room for the rows themselves when the lead
        is long, so a table's parts keep its column heads (the periods) without the row
        labels' header, then the caption alone."""
        repeats = [(prefix, suffix, caption)]
        if prefix and element.type in ("table", "toc"):
            repeats.append((_column_heads(prefix), suffix, caption))
        repeats += [("", "", caption), ("", "", "")]
        for prefix, suffix, caption in repeats:
            overhead = self.counter.count(
                render(lead, [Piece(index, element, 0, 0, 0, prefix, suffix, caption)])
            )
            if overhead <= self.max_tokens // 2:
                break
        return prefix, suffix, caption, overhead

    def _cut_seam(
        self,
        index: int,
        element: DocumentElement,
        start: int,
        end: int,
        budget: int,
        repeated: tuple[str, str, str, int | None],
    ) -> list[Piece]:
        """A seam over the budget, cut into windows that fit it."""
        text, pieces = element.text, []
        for window_start, window_end in _windows(element, text[start:end], self.counter, budget):
            cut = (start + window_start, start + window_end)
            if not has_words(text[slice(*cut)]):
                continue  # the tail of a long dot leader: no chunk of its own
            cost = self.counter.count(text[slice(*cut)])
            pieces.append(Piece(index, element, *cut, cost, *repeated))
        return pieces

    def pack(self, pieces: Sequence[Piece], lead: str) -> list[list[Piece]]:
        """Consecutive pieces within the limit, counted after `lead` (as in `pieces`), in parts
        of near-equal size; a chunk continuing a unit opens with the previous chunk's tail."""

        def fits(first: int, last: int) -> bool:
            text = render(lead, pieces[first : last + 1])
            return self.counter.count(text) <= self.max_tokens

        runs = balanced_runs(
            [piece.tokens for piece in pieces],
            self.max_tokens,
            self.overlap_tokens,
            fits,
            base=self.counter.count(lead),
        )
        return [list(pieces[first : last + 1]) for first, last in runs]


def _seams(element: DocumentElement) -> tuple[int, list[tuple[int, int]], int]:
    """Where an element may be cut: (prefix end, seam spans, suffix start) in its text.

    The prefix and suffix are repeated around every part: a table's header rows,
    a code block's opening and closing fences. Tables without a header rule, code
    without fences and TOCs are cut at lines.
    """
    text = element.text
    if element.type in ("table", "toc"):  # adapters may render a TOC as a table
        lines = _lines(text)
        rule = next((i for i, (s, e) in enumerate(lines) if TABLE_RULE.match(text[s:e])), None)
        if rule is None or rule == len(lines) - 1:
            return 0, lines, len(text)
        body = rule + 1 + _unlabelled_rows(text, lines[rule + 1 :])
        return lines[body][0], lines[body:], len(text)
    if element.type in ("code", "formula"):
        lines = _lines(text)
        if len(lines) >= 3 and all(_FENCE.match(text[slice(*lines[i])]) for i in (0, -1)):
            return lines[1][0], lines[1:-1], lines[-2][1]
        return 0, lines, len(text)
    if element.type == "list":
        return 0, _items(text), len(text)
    return 0, _sentences(text), len(text)


def _column_heads(prefix: str) -> str:
    """A table's header rows with the row labels' column emptied (often a long unit line,
    `Years Ended December 31, (Millions, except percentages ...)`); the rule kept."""
    lines = []
    for line in prefix.splitlines():
        if TABLE_RULE.match(line) or not line.strip():
            lines.append(line)
            continue
        cells = row_cells(line)
        lines.append(markdown_row(["", *(c.strip() for c in cells[1:])]))
    return "\n".join(lines) + ("\n" if prefix.endswith("\n") else "")


def _unlabelled_rows(text: str, rows: list[tuple[int, int]]) -> int:
    """How many of the first body rows are more header: rows whose first cell, the row label,
    is empty while others are not (a statement's `| | 2017 | 2016 |` under `| | As of December
    31, |`). At most MAX_UNLABELLED_HEADER_ROWS, and never every row."""
    count = 0
    for start, end in rows[: min(MAX_UNLABELLED_HEADER_ROWS, len(rows) - 1)]:
        cells = [c.strip() for c in row_cells(text[start:end])]
        named = [c for c in cells[1:] if c]
        if len(cells) < 2 or cells[0] or not named or not all(map(_names_a_column, named)):
            break
        count += 1
    return count


def _names_a_column(cell: str) -> bool:
    """A cell that names a column rather than holding a value: words without figures, or
    a period (`2017`, `December 31, 2017`, `Fiscal 2018`, `Q1 2021`)."""
    return not re.search(r"\d", _PERIOD.sub("", cell))


def _worded(text: str, seams: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Seams without a word (the `. . . .` of a dot leader, an empty table row, a `}` line)
    joined to the seam before them, leading ones to the first seam with a word: alone in a
    chunk they would leave it nothing to find."""
    joined: list[tuple[int, int]] = []
    leading: int | None = None  # start of wordless seams before the first with a word
    for start, end in seams:
        if has_words(text[start:end]):
            joined.append((start if leading is None else leading, end))
            leading = None
        elif joined:
            joined[-1] = (joined[-1][0], end)
        elif leading is None:
            leading = start
    if leading is not None:  # not a word anywhere: one seam
        joined.append((leading, seams[-1][1]))
    return joined


def _windows(
    element: DocumentElement, seam: str, counter: TokenCounter, budget: int
) -> list[tuple[int, int]]:
    """Spans of a seam over the budget. A table row is cut only between its cells (a cell
    over the budget alone, by tokens), so that no part holds a fragment of a value."""
    if element.type not in ("table", "toc"):
        return token_windows(seam, counter, budget)
    bounds = [0, *(m.end() for m in _CELL_END.finditer(seam))]
    bounds = bounds if bounds[-1] == len(seam) else [*bounds, len(seam)]
    spans: list[tuple[int, int]] = []
    start = 0
    for cell_start, cell_end in zip(bounds, bounds[1:], strict=False):
        if counter.count(seam[start:cell_end]) <= budget:
            continue
        if start < cell_start:
            spans.append((start, cell_start))
        if counter.count(seam[cell_start:cell_end]) > budget:
            windows = token_windows(seam[cell_start:cell_end], counter, budget)
            spans += [(cell_start + a, cell_start + b) for a, b in windows]
            start = cell_end
        else:
            start = cell_start
    if start < len(seam):
        spans.append((start, len(seam)))
    return spans


def _lines(text: str) -> list[tuple[int, int]]:
    """Spans of the non-blank lines, without their line breaks."""
    spans = []
    start = 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((start, start + len(line.rstrip())))
        start += len(line) + 1
    return spans


def _items(text: str) -> list[tuple[int, int]]:
    """List items at the outermost marker indentation; nested items stay with their parent."""
    lines = _lines(text)
    markers = [(s, e, _LIST_ITEM.match(text[s:e])) for s, e in lines]
    depths = [len(m.group(1)) for _, _, m in markers if m]
    if not depths:
        return lines
    top = min(depths)
    items: list[tuple[int, int]] = []
    for start, end, marker in markers:
        if not items or (marker and len(marker.group(1)) == top):
            items.append((start, end))
        else:
            items[-1] = (items[-1][0], end)
    return items


def _sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans with surrounding whitespace trimmed."""
    spans = []
    start = 0
    ends = [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for end in ends:
        sentence = text[start:end]
        if end < len(text) and _ENUMERATOR.fullmatch(sentence.strip()):
            continue
        if sentence.strip():
            lead = len(sentence) - len(sentence.lstrip())
            spans.append((start + lead, start + len(sentence.rstrip())))
        start = end
    return spans


@dataclass(frozen=True)
class TableOutline:
    """A split table as one chunk names it: its caption and header rows (`head`), then its
    rows' labels (`Rows: Revenues; Cost of sales; ...`), the words a question about the table
    uses, which its parts hold only a few of each."""

    head: str
    labels: list[str]

    def text(self, labels: int) -> str:
        """The outline with the first `labels` row labels."""
        return f"{self.head}{BLOCK_SEPARATOR}Rows: " + "; ".join(self.labels[:labels])


def table_outline(element: DocumentElement, caption: str = "") -> TableOutline | None:
    """The outline of a table; None for one without header rows, or whose first column holds
    no words in most rows."""
    prefix_end, seams, _ = _seams(element)
    text = element.text
    firsts = [" ".join(row_cells(text[start:end])[0].split()) for start, end in seams]
    labels = [cell for cell in firsts if any(c.isalpha() for c in cell)]
    # A first column of figures or codes (`6`, `4`, `2`) names no row.
    if not prefix_end or len(labels) < max(2, len(firsts) / 2):
        return None
    head = [caption] if caption else []
    return TableOutline(BLOCK_SEPARATOR.join([*head, text[:prefix_end].rstrip()]), labels)
