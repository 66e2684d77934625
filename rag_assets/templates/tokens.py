"""Token counting for chunk limits, and splitting a text into windows of at most N tokens."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from tokenizers import Tokenizer

from rag_assets.errors import ConfigurationError
from rag_assets.text.scripts import NO_SPACE_SCRIPTS

# A unit is one character of a script written without spaces (one token, roughly) or one
# run of other non-space characters. Hangul is not such a script: a window may only end
# between Korean words.
_UNIT = re.compile(rf"[{NO_SPACE_SCRIPTS}]|[^\s{NO_SPACE_SCRIPTS}]+")
_WORD = re.compile(r"\w")
COUNTS_KEPT = 4096  # texts a counter remembers the count of


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class ApproxTokenCounter:
    """Words plus one per CJK character: no model needed, close enough for sizing."""

    name = "approx"

    def count(self, text: str) -> int:
        return sum(1 for _ in _UNIT.finditer(text))


class TokenizerCounter:
    """The embedding model's own tokenizer, counting content tokens only (no [CLS]/[SEP])."""

    def __init__(self, tokenizer: Tokenizer, name: str) -> None:
        self._tokenizer = tokenizer
        self.name = name
        # Packing asks again about texts it asked about (a section's lead, a run it grows):
        # four in ten counted characters are a repeat.
        self.count = functools.lru_cache(maxsize=COUNTS_KEPT)(self._count)

    @classmethod
    def from_model_dir(cls, path: str | Path, name: str | None = None) -> TokenizerCounter:
        folder = Path(path)
        if not folder.is_dir():
            raise ConfigurationError(f"tokenizer folder {folder} does not exist")
        tokenizer_file = folder / "tokenizer.json"
        if tokenizer_file.is_file():
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
        else:
            # Older model folders ship only vocab files; transformers converts them to a
            # fast tokenizer, whose Rust backend is what we count with.
            from transformers import AutoTokenizer

            try:
                loaded = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            except (OSError, ValueError) as error:
                raise ConfigurationError(f"no usable tokenizer in {folder}: {error}") from error
            tokenizer = loaded.backend_tokenizer
        # Model folders often configure truncation/padding to the model's input size
        # (MiniLM: 128), which would cap or inflate every count.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return cls(tokenizer, name or folder.name)

    def _count(self, text: str) -> int:
        # Long texts are cut at whitespace and encoded as a parallel batch without offsets;
        # tokenizers that pre-split on whitespace (WordPiece, SentencePiece) count the same.
        encodings = self._tokenizer.encode_batch_fast(
            _cut_at_whitespace(text, _SEGMENT_CHARS), add_special_tokens=False
        )
        return sum(len(encoding.ids) for encoding in encodings)


_SEGMENT_CHARS = 2048


def _cut_at_whitespace(text: str, size: int) -> list[str]:
    """Consecutive segments of about `size` characters, each ending before whitespace."""
    segments: list[str] = []
    start = 0
    while len(text) - start > size:
        cut = max(text.rfind(space, start + size // 2, start + size) for space in " \n\t")
        if cut <= start:
            break  # no whitespace to cut at (e.g. CJK text): keep the rest whole
        segments.append(text[start:cut])
        start = cut
    segments.append(text[start:])
    return segments


def pack_runs(
    costs: Sequence[int],
    max_tokens: int,
    overlap_tokens: int,
    fits: Callable[[int, int], bool],
    base: int = 0,
) -> list[tuple[int, int]]:
    """Group items, in order, into runs `(first, last)` (inclusive) within `max_tokens`.

    Runs are packed greedily by `base + sum(costs)`, then confirmed with `fits(first, last)`,
    the exact count of the rendered run, since texts rarely tokenize exactly additively.
    Each run after the first starts with a proper tail of the previous run worth at most
    `overlap_tokens`, then at least one new item; the tail shrinks when that item needs
    the room. An item that does not fit even alone still forms a run on its own.
    """
    runs: list[tuple[int, int]] = []
    first, fresh = 0, 0  # fresh: the first item no run holds yet
    while fresh < len(costs):
        total = base + sum(costs[first : fresh + 1])
        while first < fresh and total > max_tokens:
            total -= costs[first]
            first += 1
        last = fresh
        while last + 1 < len(costs) and total + costs[last + 1] <= max_tokens:
            last += 1
            total += costs[last]
        if not fits(first, last):
            # Largest run end that fits, by bisection: an exact count costs a tokenizer pass.
            low, high = fresh, last - 1
            while low < high:
                middle = (low + high + 1) // 2
                if fits(first, middle):
                    low = middle
                else:
                    high = middle - 1
            last = low
            while first < fresh and not fits(first, last):
                first += 1
        runs.append((first, last))
        fresh = last + 1
        start, carried = fresh, 0
        while start - 1 > runs[-1][0] and carried + costs[start - 1] <= overlap_tokens:
            start -= 1
            carried += costs[start]
        first = start
    return runs


def balanced_runs(
    costs: Sequence[int],
    max_tokens: int,
    overlap_tokens: int,
    fits: Callable[[int, int], bool],
    base: int = 0,
) -> list[tuple[int, int]]:
    """As `pack_runs`, in as few runs, but of near-equal size: the smallest limit that
    needs no more runs than `max_tokens` does is found by bisection, then the items are
    packed to it. Greedy filling leaves a small tail part, which BM25's length
    normalisation favours over the parts that hold a section's substance.
    """
    greedy = pack_runs(costs, max_tokens, overlap_tokens, fits, base)
    if len(greedy) < 2:
        return greedy

    def count(limit: int) -> int:
        # Sized by costs alone: the exact count confirms only the packing finally chosen.
        return len(pack_runs(costs, limit, overlap_tokens, lambda first, last: True, base))

    low, high = min(base + max(costs), max_tokens), max_tokens
    while low < high:
        middle = (low + high) // 2
        if count(middle) <= len(greedy):
            high = middle
        else:
            low = middle + 1
    balanced = pack_runs(costs, low, overlap_tokens, fits, base)
    return balanced if len(balanced) == len(greedy) else greedy


def token_windows(
    text: str, counter: TokenCounter, max_tokens: int, overlap_tokens: int = 0
) -> list[tuple[int, int]]:
    """Character spans of consecutive windows of at most `max_tokens` tokens.

    Windows break between words (and between CJK characters), never before a unit without
    letters or digits (`。`, a table's closing `|`), so no window is punctuation alone; a
    single word longer than `max_tokens` is cut between characters. Each window after the
    first starts with trailing words of the previous one worth at most `overlap_tokens`
    tokens.
    Whitespace between windows belongs to neither.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    units = _units(text, counter, max_tokens)

    def fits(first: int, last: int) -> bool:
        return counter.count(text[units[first][0] : units[last][1]]) <= max_tokens

    runs = pack_runs([cost for _, _, cost in units], max_tokens, overlap_tokens, fits)
    return [(units[first][0], units[last][1]) for first, last in runs]


def _units(text: str, counter: TokenCounter, max_tokens: int) -> list[tuple[int, int, int]]:
    """(start, end, tokens) of each unit; units over the limit are cut into character runs,
    and a unit without letters or digits is part of the one before it."""
    cache: dict[str, int] = {}
    units: list[tuple[int, int, int]] = []
    for match in _UNIT.finditer(text):
        word = match.group()
        cost = cache.get(word)
        if cost is None:
            cost = cache[word] = counter.count(word)
        if units and not _WORD.search(word) and units[-1][2] + cost <= max_tokens:
            # Punctuation alone would make a window of nothing: it joins the unit before.
            units[-1] = (units[-1][0], match.end(), units[-1][2] + cost)
        elif cost <= max_tokens:
            units.append((match.start(), match.end(), cost))
        else:
            units.extend(_cut_word(word, match.start(), counter, max_tokens))
    return units


def _cut_word(
    word: str, offset: int, counter: TokenCounter, max_tokens: int
) -> list[tuple[int, int, int]]:
    """Greedy longest pieces within the limit, at least one character each."""
    pieces: list[tuple[int, int, int]] = []
    start = 0
    while start < len(word):
        end = _longest_fitting_end(word, start, counter, max_tokens)
        pieces.append((offset + start, offset + end, counter.count(word[start:end])))
        start = end
    return pieces


def _longest_fitting_end(word: str, start: int, counter: TokenCounter, max_tokens: int) -> int:
    def fits(end: int) -> bool:
        return counter.count(word[start:end]) <= max_tokens

    # Gallop from about one character per token, then bisect: every count stays close to
    # the piece's own size, even inside a huge blob (base64, a long URL).
    low, high, step = start + 1, len(word), max_tokens
    while low < high:
        probe = min(low + step, high)
        if not fits(probe):
            high = probe - 1
            break
        low, step = probe, step * 2
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
