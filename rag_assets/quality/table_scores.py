"""Cell-level scores of a table we produced against a table someone else expects.

Exact cells: the share of the expected cells whose text equals the cell at the same row and
column of ours, once our table is laid over the expected one at the row and column offset under
which most non-empty cells agree. A table read whole under a title row we kept, or from a peer
that cropped its header off, is then not scored zero; a column that moved inside it still is.

TEDS (tree-edit-distance similarity, Zhong et al., PubTabNet): both tables as `table -> tr ->
td` trees with each cell's text on its `td`. Renaming a `td` costs the normalized Levenshtein
distance of the two texts, any other rename 1, inserting or deleting a node 1; TEDS is 1 minus
the distance over the larger tree's node count. Spanning cells come expanded, their text in every
slot they cover (as our markdown writes them), so the trees carry no spans.

Texts are compared with whitespace runs made one space (or, where the expectation says so,
removed), case kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from apted import APTED, Config

from rag_assets.text.markdown import TABLE_RULE, row_cells

Grid = list[list[str]]
Position = tuple[int, int]

# Offsets tried for the exact score: the ones most non-empty cells vote for. More would only
# re-score offsets that a handful of repeated values ("0", "X") happen to line up.
_OFFSETS_TRIED = 20


def normalize_cell(text: str, ignore_spaces: bool = False) -> str:
    return "".join(text.split()) if ignore_spaces else " ".join(text.split())


def markdown_grid(markdown: str) -> Grid:
    """A pipe table's rows of cell texts, header line first, delimiter rows dropped; escaped
    pipes read as pipes and `<br>` line breaks as spaces."""
    grid = []
    for line in markdown.splitlines():
        if not line.lstrip().startswith("|") or TABLE_RULE.match(line):
            continue
        grid.append([_cell_text(cell) for cell in row_cells(line)])
    return grid


def _cell_text(cell: str) -> str:
    for br in ("<br>", "<br/>", "<br />"):
        cell = cell.replace(br, " ")
    return normalize_cell(cell.replace("\\|", "|"))


@dataclass(frozen=True)
class ExpectedTable:
    """What a peer states about one table: some or all of its cells, at the peer's row and
    column indices (negative ones from the table's end). `whole` when every cell is stated (a
    grid), which TEDS needs."""

    cells: Mapping[Position, str]
    whole: bool = False
    ignore_spaces: bool = False

    @classmethod
    def from_grid(cls, grid: Sequence[Sequence[str]], ignore_spaces: bool = False):
        cells = {(r, c): text for r, row in enumerate(grid) for c, text in enumerate(row)}
        return cls(_normalized(cells, ignore_spaces), whole=True, ignore_spaces=ignore_spaces)

    @classmethod
    def from_rows(cls, rows: Mapping[int, Sequence[str]], ignore_spaces: bool = False):
        cells = {(r, c): text for r, row in rows.items() for c, text in enumerate(row)}
        return cls(_normalized(cells, ignore_spaces), ignore_spaces=ignore_spaces)

    @classmethod
    def from_cells(cls, cells: Mapping[Position, str], ignore_spaces: bool = False):
        return cls(_normalized(cells, ignore_spaces), ignore_spaces=ignore_spaces)

    def grid(self) -> Grid:
        rows = 1 + max((r for r, _ in self.cells), default=-1)
        cols = 1 + max((c for _, c in self.cells), default=-1)
        return [[self.cells.get((r, c), "") for c in range(cols)] for r in range(rows)]


def _normalized(cells: Mapping[Position, str], ignore_spaces: bool) -> dict[Position, str]:
    return {at: normalize_cell(text, ignore_spaces) for at, text in cells.items()}


def expected_from_entry(entry: Mapping) -> ExpectedTable:
    """An expectation as bench/tables/expected.json writes it: `grid`, `rows` ({row: cells})
    or `cells` ([[row, col, text], ...]), with `whitespace: ignore` where the peer compares
    texts without their spaces."""
    ignore = entry.get("whitespace") == "ignore"
    if "grid" in entry:
        return ExpectedTable.from_grid(entry["grid"], ignore)
    if "rows" in entry:
        return ExpectedTable.from_rows({int(r): row for r, row in entry["rows"].items()}, ignore)
    return ExpectedTable.from_cells({(r, c): text for r, c, text in entry["cells"]}, ignore)


def exact_cells(expected: ExpectedTable, produced: Grid, offset: Position = (0, 0)) -> float:
    """The share of expected cells equal to ours at their position moved by `offset` (a
    negative index counts from the end of our table and is not moved); a cell outside our
    table matches nothing, not even an expected empty cell."""
    if not expected.cells:
        return 0.0
    dr, dc = offset
    hits = 0
    for (r, c), text in expected.cells.items():
        row = len(produced) + r if r < 0 else r + dr
        if 0 <= row < len(produced):
            col = len(produced[row]) + c if c < 0 else c + dc
            if 0 <= col < len(produced[row]):
                hits += normalize_cell(produced[row][col], expected.ignore_spaces) == text
    return hits / len(expected.cells)


def best_offset(expected: ExpectedTable, produced: Grid) -> tuple[Position, float]:
    """The (row, column) offset at which our table best matches the expected cells, and that
    exact score; ties go to the smallest shift, no shift first."""
    where: dict[str, list[Position]] = {}
    for r, row in enumerate(produced):
        for c, text in enumerate(row):
            where.setdefault(normalize_cell(text, expected.ignore_spaces), []).append((r, c))
    votes: Counter[Position] = Counter()
    for (r, c), text in expected.cells.items():
        if text and r >= 0 and c >= 0:
            votes.update((pr - r, pc - c) for pr, pc in where.get(text, ()))
    candidates = {(0, 0), *(offset for offset, _ in votes.most_common(_OFFSETS_TRIED))}
    scored = [(exact_cells(expected, produced, o), o) for o in candidates]
    score, offset = min(scored, key=lambda s: (-s[0], abs(s[1][0]) + abs(s[1][1]), s[1]))
    return offset, score


@dataclass
class _Node:
    tag: str
    text: str = ""
    children: list[_Node] = field(default_factory=list)


def _tree(grid: Grid) -> _Node:
    return _Node(
        "table", children=[_Node("tr", children=[_Node("td", t) for t in r]) for r in grid]
    )


class _TedsCosts(Config):
    valuecls = float

    def __init__(self) -> None:
        self._text_costs: dict[tuple[str, str], float] = {}

    def rename(self, node1: _Node, node2: _Node) -> float:
        if node1.tag != node2.tag:
            return 1.0
        if node1.tag != "td":
            return 0.0
        key = (node1.text, node2.text)
        if key not in self._text_costs:
            self._text_costs[key] = normalized_levenshtein(*key)
        return self._text_costs[key]


def teds(expected: Grid, produced: Grid, ignore_spaces: bool = False) -> float:
    expected = [[normalize_cell(t, ignore_spaces) for t in row] for row in expected]
    produced = [[normalize_cell(t, ignore_spaces) for t in row] for row in produced]
    nodes = max(_count(expected), _count(produced))
    distance = APTED(_tree(expected), _tree(produced), _TedsCosts()).compute_edit_distance()
    return 1.0 - distance / nodes


def _count(grid: Grid) -> int:
    return 1 + len(grid) + sum(len(row) for row in grid)


def normalized_levenshtein(a: str, b: str) -> float:
    if a == b:
        return 0.0
    return levenshtein(a, b) / max(len(a), len(b))


def levenshtein(a: str, b: str) -> int:
    """Edit distance, bit-parallel (Myers 1999, Hyyrö 2001): one pass over `b` with `a` as bits,
    so a table of long cells costs TEDS seconds, not minutes."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    mask = (1 << len(a)) - 1
    last = 1 << (len(a) - 1)
    match: dict[str, int] = {}
    for i, char in enumerate(a):
        match[char] = match.get(char, 0) | (1 << i)
    positive, negative, distance = mask, 0, len(a)
    for char in b:
        eq = match.get(char, 0)
        xv = eq | negative
        xh = (((eq & positive) + positive) ^ positive) | eq
        ph = negative | (~(xh | positive) & mask)
        mh = positive & xh
        if ph & last:
            distance += 1
        elif mh & last:
            distance -= 1
        ph = ((ph << 1) | 1) & mask
        mh = (mh << 1) & mask
        positive = mh | (~(xv | ph) & mask)
        negative = ph & xv
    return distance


@dataclass(frozen=True)
class TableScore:
    exact: float
    teds: float | None  # None: the peer states only some cells
    table: int | None  # index of the best-aligned table among ours; None when we have none
    offset: Position  # where the expected table's (0, 0) lies on ours


def score_tables(expected: ExpectedTable, produced: Sequence[Grid]) -> TableScore:
    """The expected table against the best aligned of ours (most exact cells, then TEDS)."""
    best: TableScore | None = None
    for index, grid in enumerate(produced):
        offset, exact = best_offset(expected, grid)
        similarity = teds(expected.grid(), grid, expected.ignore_spaces) if expected.whole else None
        score = TableScore(exact, similarity, index, offset)
        if best is None or (exact, similarity or 0.0) > (best.exact, best.teds or 0.0):
            best = score
    return best or TableScore(0.0, 0.0 if expected.whole else None, None, (0, 0))
