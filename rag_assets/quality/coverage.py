"""Coverage: how much of a document's text its chunks hold, by their spans in the IR markdown."""

from __future__ import annotations

from rag_assets.quality.outcome import CheckOutcome


def check_coverage(records: list[dict], markdown: str, floor: float) -> CheckOutcome:
    """Share of the IR markdown's non-blank characters inside some chunk's [start_char, end_char).

    Blank characters are left out of both counts: line breaks between blocks belong to no chunk.
    """
    size = len(markdown)
    covered = bytearray(size)
    for r in records:
        start, end = r.get("start_char"), r.get("end_char")
        if start is not None and end is not None:
            start, end = max(start, 0), min(end, size)
            if end > start:
                covered[start:end] = b"\x01" * (end - start)
    text = [i for i, ch in enumerate(markdown) if not ch.isspace()]
    inside = sum(1 for i in text if covered[i])
    share = inside / len(text) if text else 1.0
    gaps = _largest_gap(covered, markdown)
    return CheckOutcome(
        passed=share >= floor,
        description=f"{share:.1%} of the document's characters lie in a chunk (floor {floor:.0%})",
        metadata={"coverage": round(share, 4), "floor": floor, "largest_gap": gaps},
    )


def _largest_gap(covered: bytearray, markdown: str) -> str:
    """The longest uncovered non-blank stretch, shortened: where to look when coverage is low."""
    best, start = (0, 0), None
    for i in range(len(markdown) + 1):
        if i < len(markdown) and not covered[i]:
            start = i if start is None else start
        elif start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    gap = markdown[best[0] : best[1]].strip()
    return gap[:200] + (" …" if len(gap) > 200 else "")
