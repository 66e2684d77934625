"""Reading a document's bytes before a parser sees them, with errors a person can act on."""

from __future__ import annotations

import re
from pathlib import Path

from rag_assets.errors import DocumentError

# YAML front matter opening a Markdown file is metadata; a Markdown reader would take it
# for a setext heading over a paragraph, which would then sit in every header path.
_FRONT_MATTER = re.compile(
    rb"\A---\r?\n[A-Za-z_][\w.-]*[ \t]*:.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL
)


def read_document_bytes(path: Path, file_format: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    if not data:
        raise DocumentError(f"{path} is empty (0 bytes): there is no {file_format.upper()} in it")
    return data


def strip_front_matter(data: bytes) -> tuple[bytes, list[str]]:
    """The Markdown without its YAML front matter, and a note when there was some."""
    front = _FRONT_MATTER.match(data)
    if front is None:
        return data, []
    lines = front.group().count(b"\n")
    return data[front.end() :], [f"YAML front matter ({lines} lines) left out"]


# MkDocs / Python-Markdown blocks whose body is indented by four spaces: admonitions
# (`!!! note "Title"`), collapsible ones (`??? tip`, `???+ tip`) and content tabs
# (`=== "Debian"`, `===+ "RHEL"`). Plain Markdown reads that body as a code block: the box's
# text would show and be chunked as code, its lists and fences as literal lines.
_ADMONITION = re.compile(
    r"(?:(?:!!!|\?\?\?\+?)(?:[ \t]+[\w-]+)*(?:[ \t]+\"[^\"]*\")?|===[!+]?[ \t]+\"[^\"]*\")[ \t]*"
)
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_INDENT = ("    ", "\t")


def quote_admonitions(data: bytes) -> tuple[bytes, list[str]]:
    """Admonition bodies as block quotes (their headings then stay quoted text, quotes.py),
    the marker line kept as written; a note saying how many. Untouched when there are none."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data, []
    lines, count = _quote_admonitions(text.split("\n"))
    if not count:
        return data, []
    return "\n".join(lines).encode("utf-8"), [
        f"{count} admonitions or content tabs read as quoted text"
    ]


def _quote_admonitions(lines: list[str]) -> tuple[list[str], int]:
    out: list[str] = []
    count = 0
    fence = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        opens = _FENCE.match(line)
        if fence:
            if opens and opens.group(1)[0] == fence[0] and len(opens.group(1)) >= len(fence):
                fence = ""
        elif opens:
            fence = opens.group(1)
        elif _ADMONITION.fullmatch(line.rstrip("\r")):
            body, end = _indented_block(lines, i + 1)
            if body:
                inner, nested = _quote_admonitions(body)
                count += 1 + nested
                out += [line, ""]
                out += [f"> {part}" if part.strip() else ">" for part in inner]
                i = end
                continue
        out.append(line)
        i += 1
    return out, count


def _indented_block(lines: list[str], start: int) -> tuple[list[str], int]:
    """The lines from `start` that are blank or indented, dedented once, leading and trailing
    blank lines left out; and the index after the last one kept."""
    end = start
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(_INDENT)):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    body = [line[4:] if line.startswith("    ") else line[1:] for line in lines[start:end]]
    while body and not body[0].strip():
        body.pop(0)
    return body, end


def prepare_markdown(data: bytes) -> tuple[bytes, list[str]]:
    """Markdown as a Markdown reader should see it: without front matter, admonitions quoted."""
    data, front = strip_front_matter(data)
    data, admonitions = quote_admonitions(data)
    return data, [*front, *admonitions]
