"""The coverage check: the share of the IR's non-blank characters inside some chunk span."""

from rag_assets.quality.coverage import check_coverage

MARKDOWN = "# Pumps\n\nPrime the pump.\n\n## Seals\n\nReplace the seal every 4000 hours.\n"


def span(text: str) -> dict:
    start = MARKDOWN.index(text)
    return {"start_char": start, "end_char": start + len(text)}


def test_chunks_holding_every_block_cover_the_document():
    found = check_coverage(
        [
            span("# Pumps\n\nPrime the pump."),
            span("## Seals\n\nReplace the seal every 4000 hours."),
        ],
        MARKDOWN,
        floor=0.9,
    )
    # Blank lines between blocks belong to no chunk and are not counted.
    assert found.passed and found.metadata["coverage"] == 1.0
    assert found.metadata["largest_gap"] == ""


def test_a_dropped_paragraph_falls_under_the_floor_and_is_shown():
    found = check_coverage(
        [span("# Pumps\n\nPrime the pump."), span("## Seals")], MARKDOWN, floor=0.9
    )
    text = [c for c in MARKDOWN if not c.isspace()]
    dropped = [c for c in "Replace the seal every 4000 hours." if not c.isspace()]
    assert not found.passed
    assert found.metadata["coverage"] == round(1 - len(dropped) / len(text), 4)
    assert found.metadata["largest_gap"] == "Replace the seal every 4000 hours."
    assert "floor 90%" in found.description


def test_spans_without_offsets_or_outside_the_text_are_ignored():
    found = check_coverage(
        [{"start_char": None, "end_char": None}, {"start_char": 500, "end_char": 900}],
        MARKDOWN,
        floor=0.5,
    )
    assert not found.passed and found.metadata["coverage"] == 0.0
