"""Text as a terminal is to show it: document text, file names, keys and model answers printed as
text, never as terminal commands.

A document holding `ESC ]0;title BEL` or `ESC [2J` would retitle the window or clear the screen
when printed raw, and a file name holding a line break would print a line of its own making.
Control characters are shown as escapes instead (`\\x1b`, `\\u202e`); `visible` keeps line breaks
and tabs (the layout of a text), `visible_line` shows them too, so a name stays on its line.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL, but for line feed and tab.
_CONTROL = r"\x00-\x08\x0b-\x1f\x7f-\x9f"
_CONTROL_BUT_CR = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
# Bidirectional overrides and isolates reorder what follows them on the line: a name could show
# as another ("report\u202efdp.exe" as "reportexe.pdf").
_REORDERING = r"\u202a-\u202e\u2066-\u2069"
# A carriage return ending a line (CRLF text) moves nothing the line feed does not.
_IN_TEXT = re.compile(f"[{_CONTROL_BUT_CR}]|\\r(?!\\n)")
_IN_LINE = re.compile(f"[{_CONTROL}\\n\\u2028\\u2029{_REORDERING}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return "\\n" if code == 0x0A else f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character but line breaks and tabs shown as an escape."""
    return _IN_TEXT.sub(_escape, text)


def visible_line(text: str) -> str:
    """`text` on one line: line breaks, controls and reordering marks shown as escapes."""
    return _IN_LINE.sub(_escape, text)
