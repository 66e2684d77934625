"""Progress lines, "<measure>: <done> of <total>": what a long step writes to its run's log, and
how whoever watches the run (the CLI's progress bars) reads them back."""

from __future__ import annotations

import re
from typing import NamedTuple

PAGES_PARSED = "pages parsed"
CHUNKS_EMBEDDED = "chunks embedded"
TEMPLATES_EVALUATED = "templates evaluated"
MEASURES = (PAGES_PARSED, CHUNKS_EMBEDDED, TEMPLATES_EVALUATED)

# At the end of a message, alone or after a prefix such as the document's path.
_LINE = re.compile(rf"(?:^|: )({'|'.join(MEASURES)}): (\d+) of (\d+)$")


class ProgressLine(NamedTuple):
    measure: str
    done: int
    total: int


def progress_line(measure: str, done: int, total: int) -> str:
    return f"{measure}: {done} of {total}"


def read_progress_line(message: str) -> ProgressLine | None:
    """The measure and counts a log message ends with; None for any other message."""
    found = _LINE.search(message)
    if found is None:
        return None
    return ProgressLine(found[1], int(found[2]), int(found[3]))
