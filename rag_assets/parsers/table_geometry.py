"""What a table finder's grid leaves out, read from the table's page: the partial rules that
say which columns a head spans, the heads the grid cut at a column's edge, and the words it cut
at a row's edge.

pymupdf4llm's table grid is rows of cell text and cell boxes. A typesetter rules under a head
the columns it spans (`Fair value hierarchy` over Levels 1 to 3); the grid puts the head in one
cell, or in pieces over several. Each partial rule is kept with the words set right above it,
so the IR can name every column under it (table_headers.py). The finder also places each
character by its own glyph box, so a word set across two rows' edge loses its tall letters to
the row above and its descenders to the row below (`Lanuae` over `gg`): such cells are read
again a word at a time. A head centred over several columns without a rule is cut the same
way at the columns' edges (`Yea | r ended December | 31,`): a line of words the grid split
over several cells is kept whole with the columns it crosses.
"""

from __future__ import annotations

import bisect
import itertools
from typing import Any

from rag_assets.text.normalize import sorted_characters

# Partial rules: horizontal strokes (or filled bars this thin) at least this long, shorter than
# this share of the table's width (a rule across the whole table spans nothing).
RULE_MAX_HEIGHT = 1.5
RULE_MIN_WIDTH = 8.0
RULE_MAX_SHARE = 0.9
# Rules a table keeps at most (a ruled form may draw a line under every cell).
MAX_RULES_PER_TABLE = 200
# A head's lines above its rule: at most this many, each this close (in line heights) to the
# one below it, the lowest this close to the rule.
MAX_HEAD_LINES = 3
HEAD_LINE_GAP = 0.6
# Words of one line further apart than this (in line heights) are separate heads.
HEAD_WORD_GAP = 1.0
# A word is cut by a row's edge when at least this share of its height lies on each side.
CUT_SHARE = 0.3
# A line's first and last word lie in the columns they reach this far (pt) into.
EDGE_OVERLAP = 1.0
# Words of one head cut at column edges are a space apart (about a quarter of their height);
# heads of neighbouring columns on one line further (`Top-1 Top-5`: 0.8 of it).
SPAN_WORD_GAP = 0.5
# Rows read for heads cut at a column's edge: a table's heads are in its first few rows.
HEAD_ROWS_READ = 5

# PyMuPDF's `get_text("words")` rows: x0, y0, x1, y1, text, block, line, word.
Word = tuple[float, float, float, float, str, int, int, int]


def read_table_geometry(doc: Any, pages: list[Any]) -> list[str]:
    """Each table box of `pages` (pymupdf4llm's page layouts) gains `rules` and has its cut
    words read again, from its page of `doc` as the parse left it (unrotated). Optional: a
    page where that fails keeps its tables as the finder read them, and is named in the
    returned failures (`page 3: ValueError: ...`)."""
    failures = []
    for page_layout in pages:
        tables = [box.table for box in page_layout.boxes if box.table and box.table.get("bbox")]
        if not tables:
            continue
        try:
            _read_page_tables(doc[page_layout.page_number - 1], tables)
        except Exception as error:  # a drawing or word list PyMuPDF could not give
            failures.append(f"page {page_layout.page_number}: {type(error).__name__}: {error}")
    return failures


def _read_page_tables(page: Any, tables: list[dict]) -> None:
    segments = horizontal_segments(page.get_drawings())
    for table in tables:
        words = page.get_text("words", clip=table["bbox"])
        table["rules"] = table_rules(table["bbox"], segments, words)
        if table.get("cells") and table.get("extract"):
            reread_cut_words(table, words)
            heads_cut_at_columns(table, words)


def horizontal_segments(drawings: list[dict]) -> list[tuple[float, float, float]]:
    """(x0, x1, y) of every horizontal stroke and thin bar among a page's drawings (PyMuPDF's
    `get_drawings` paths), at least RULE_MIN_WIDTH long, from the top."""
    found = set()
    for path in drawings:
        for item in path.get("items", ()):
            if item[0] == "l":
                start, end = item[1], item[2]
                if abs(start.y - end.y) < 0.5:
                    a, b = sorted((start.x, end.x))
                    found.add((a, b, (start.y + end.y) / 2))
            elif item[0] == "re":
                rect = item[1]
                if rect.height <= RULE_MAX_HEIGHT:
                    found.add((rect.x0, rect.x1, (rect.y0 + rect.y1) / 2))
    return sorted(
        ((a, b, y) for a, b, y in found if b - a >= RULE_MIN_WIDTH), key=lambda s: (s[2], s[0])
    )


def table_rules(
    bbox: list[float], segments: list[tuple[float, float, float]], words: list[Word]
) -> list[list]:
    """The partial rules inside a table with the head set above each: [x0, x1, y, head] rows
    (the head is "" when no words sit right above the rule)."""
    x0, y0, x1, y1 = bbox
    inside = [
        (a, b, y)
        for a, b, y in segments
        if x0 - 2 <= a
        and b <= x1 + 2
        and y0 - 2 <= y <= y1 + 2
        and b - a < RULE_MAX_SHARE * (x1 - x0)
    ][:MAX_RULES_PER_TABLE]
    return [
        [round(a, 1), round(b, 1), round(y, 1), _head_above(a, b, y, words)] for a, b, y in inside
    ]


def _head_above(left: float, right: float, y: float, words: list[Word]) -> str:
    """The head set right above a rule within its width, up to MAX_HEAD_LINES lines: "" when
    none, or when a line holds words set apart as separate heads (`Level 1   Level 2`)."""
    within = [w for w in words if left - 1 <= (w[0] + w[2]) / 2 <= right + 1]
    head: list[str] = []
    edge = y
    for _ in range(MAX_HEAD_LINES):
        line = sorted((w for w in within if _sits_on(w, edge)), key=lambda w: w[0])
        if not line:
            break
        height = max(w[3] - w[1] for w in line)
        if any(b[0] - a[2] > HEAD_WORD_GAP * height for a, b in itertools.pairwise(line)):
            return ""
        head.insert(0, " ".join(w[4] for w in line))
        edge = min(w[1] for w in line)
    return " ".join(head)


def _sits_on(word: Word, edge: float) -> bool:
    """Whether `word` is set right above `edge` (a rule, or the top of the line under it)."""
    height = word[3] - word[1]
    return -0.5 * height <= edge - word[3] <= HEAD_LINE_GAP * height + 1


def heads_cut_at_columns(table: dict, words: list[Word]) -> None:
    """Lines of a row's words (words more than a space apart are separate lines) that the
    grid cut into pieces at column edges, in a word (`Yea | r ended`) or between words
    (`Year | Ended December 31,`): `table["spans"]` rows [row, first column, last column, the
    line's text], kept when two or more of the row's cells over those columns hold pieces of
    it and the cells hold its characters and no others, and no rule has it for its head."""
    grid, boxes = table["extract"], table["cells"]
    # A head ruled under is the rule's to place (table_headers.ruled_heads).
    ruled = {rule[3] for rule in table.get("rules") or () if len(rule) > 3 and rule[3]}
    spans = []
    for r, row in enumerate(boxes[: min(HEAD_ROWS_READ, len(grid))]):
        extent = _row_span(row)
        if extent is None:
            continue
        inside = [w for w in words if extent[0] <= (w[1] + w[3]) / 2 < extent[1]]
        for line in _lines_apart(inside, SPAN_WORD_GAP):
            first = _column_at(row, line[0][0] + EDGE_OVERLAP)
            last = _column_at(row, line[-1][2] - EDGE_OVERLAP)
            if first is None or last is None or first >= last:
                continue
            text = " ".join(word[4] for word in line)
            if text in ruled:
                continue
            cells = [grid[r][c] or "" for c in range(first, last + 1)]
            if sum(1 for cell in cells if cell.strip()) > 1 and sorted_characters(
                cells
            ) == sorted_characters([text]):
                spans.append([r, first, last, text])
    if spans:
        table["spans"] = spans


def _lines_apart(words: list[Word], gap: float) -> list[list[Word]]:
    """The words of each text line, left to right, split where words are further apart than
    `gap` times their height."""
    lines: dict[tuple[int, int], list[Word]] = {}
    for word in words:
        lines.setdefault((word[5], word[6]), []).append(word)
    runs = []
    for line in lines.values():
        line.sort(key=lambda w: w[0])
        run = [line[0]]
        for before, word in itertools.pairwise(line):
            if word[0] - before[2] > gap * max(word[3] - word[1], before[3] - before[1]):
                runs.append(run)
                run = []
            run.append(word)
        runs.append(run)
    return runs


def reread_cut_words(table: dict, words: list[Word]) -> None:
    """Cells whose words the finder cut at a row's edge, read again from whole words, each in
    the row holding its centre; a column's cells are kept read again when they hold the same
    characters as before. `table["reread"]` lists the cells read again."""
    grid, boxes = table["extract"], table["cells"]
    spans = [_row_span(row) for row in boxes]
    # The edges between rows that both hold cells, from the top, and the row above each.
    edges = [(a[1], r) for r, (a, b) in enumerate(itertools.pairwise(spans)) if a and b]
    ys, above = [y for y, _ in edges], [r for _, r in edges]
    cut: set[tuple[int, int]] = set()
    for x0, y0, x1, y1, text, *_ in words:
        margin = CUT_SHARE * (y1 - y0)
        first, last = bisect.bisect_left(ys, y0 + margin), bisect.bisect_right(ys, y1 - margin)
        for r in above[first:last]:
            col = _column_at(boxes[r], (x0 + x1) / 2)
            # A word whole in either cell was placed, not cut (a label centred on two rows).
            if col is not None and not any(text in (grid[n][col] or "") for n in (r, r + 1)):
                cut |= {(r, col), (r + 1, col)}
    reread = []
    for col in sorted({c for _, c in cut}):
        cells = [(r, c) for r, c in sorted(cut) if c == col and boxes[r][c] is not None]
        texts = [_words_in(boxes[r][c], words) for r, c in cells]
        if sorted_characters(grid[r][c] or "" for r, c in cells) == sorted_characters(texts):
            for (r, c), text in zip(cells, texts, strict=True):
                grid[r][c] = text
            reread.extend([r, c] for r, c in cells)
    if reread:
        table["reread"] = reread


def _row_span(row: list) -> tuple[float, float] | None:
    boxes = [box for box in row if box]
    return (min(b[1] for b in boxes), max(b[3] for b in boxes)) if boxes else None


def _column_at(row: list, x: float) -> int | None:
    return next((c for c, box in enumerate(row) if box and box[0] <= x < box[2]), None)


def _words_in(box: list[float], words: list[Word]) -> str:
    """The words whose centre lies in `box`, a line of the page a line of the text."""
    lines: dict[tuple[int, int], list[str]] = {}
    for x0, y0, x1, y1, text, block, line, _ in words:
        if box[0] <= (x0 + x1) / 2 < box[2] and box[1] <= (y0 + y1) / 2 < box[3]:
            lines.setdefault((block, line), []).append(text)
    return "\n".join(" ".join(line) for line in lines.values())
