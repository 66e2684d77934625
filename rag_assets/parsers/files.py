"""Reading a document's bytes before a parser sees them, with errors a person can act on."""

from __future__ import annotations

import codecs
import io
import re
import zipfile
from pathlib import Path

from lxml import etree

from rag_assets.errors import DocumentError
from rag_assets.sources.encoding import to_utf8

_TEXT_FORMATS = frozenset({"html", "md", "txt"})
# Deeper element nesting is refused: parsers walk the tree recursively, a few Python frames a
# level, and Python stops at 1,000 frames. No real page nests 200 elements deep.
MAX_NESTING_DEPTH = 200
# Elements HTML never closes.
_VOID = frozenset(b"area base br col embed hr img input link meta param source track wbr".split())
# Elements whose end tag pages often leave out: a new one closes the open one of its name,
# unless one of these lies between them (a list in a list item starts a new list).
_LISTS = frozenset(b"ul ol menu dl".split())
_TABLE = frozenset({b"table"})
_CLOSED_BY_SIBLING = {
    b"li": _LISTS,
    b"dt": _LISTS,
    b"dd": _LISTS,
    b"option": frozenset(b"select datalist".split()),
    b"optgroup": frozenset(b"select datalist".split()),
    **{name: _TABLE for name in b"tr td th thead tbody tfoot colgroup".split()},
    b"p": frozenset(b"button table td th caption li dd dt object template".split()),
}
_RAW_TEXT = frozenset(b"script style textarea title xmp".split())  # no tags inside
_TAG_OPEN = re.compile(rb"<(?:!--|(/?)([A-Za-z][A-Za-z0-9:-]*))")


# YAML front matter opening a Markdown file is metadata; a Markdown reader would take it
# for a setext heading over a paragraph, which would then sit in every header path.
_FRONT_MATTER = re.compile(
    rb"\A---\r?\n[A-Za-z_][\w.-]*[ \t]*:.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL
)


def read_document_bytes(path: Path, file_format: str) -> bytes:
    """The file's bytes; text (HTML, Markdown, plain text) marked by a BOM as UTF-16 or UTF-32
    comes as UTF-8, the one encoding every reader takes. HTML keeps a UTF-8 BOM: by HTML's own
    rule it wins over a <meta charset> naming the old encoding."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    if not data:
        raise DocumentError(f"{path} is empty (0 bytes): there is no {file_format.upper()} in it")
    if file_format in _TEXT_FORMATS:
        data, converted = to_utf8(data)
        if converted and file_format == "html":
            data = codecs.BOM_UTF8 + data
        if file_format == "html":
            check_nesting_depth(path, data)
    return data


def check_nesting_depth(path: Path, html: bytes) -> None:
    """Refuse HTML nested deeper than MAX_NESTING_DEPTH elements before a parser recurses into
    it (20,000 nested <div>s exhaust Python's stack; 200,000 took a parser 17 minutes to fail).

    One pass over the tags, each byte read once or twice (linear time): comments and script or
    style bodies are skipped whole, end tags close what they match and anything left open
    inside it, and a <p>, <li> or <td> closes the open one of its name, much as a browser does.
    """
    stack: list[bytes] = []
    open_names: dict[bytes, int] = {}
    position = 0
    while match := _TAG_OPEN.search(html, position):
        closing, raw_name = match.groups()
        if raw_name is None:  # a comment
            end = html.find(b"-->", match.end())
            position = end + 3 if end >= 0 else len(html)
            continue
        end = html.find(b">", match.end())
        if end < 0:
            break
        position = end + 1
        name = raw_name.lower()
        if closing:
            if open_names.get(name):
                _close(stack, open_names, name)
            continue
        if name in _VOID or html[end - 1 : end] == b"/":
            continue
        if name in _RAW_TEXT:
            close = re.compile(rb"</" + re.escape(name), re.IGNORECASE).search(html, position)
            position = close.end() if close else len(html)
            continue
        if name in _CLOSED_BY_SIBLING and open_names.get(name):
            _close_sibling(stack, open_names, name)
        stack.append(name)
        open_names[name] = open_names.get(name, 0) + 1
        if len(stack) > MAX_NESTING_DEPTH:
            raise DocumentError(
                f"{path.name}: elements are nested too deeply (more than {MAX_NESTING_DEPTH} "
                "levels, beyond what the parsers can read); flatten the document"
            )


def _close_sibling(stack: list[bytes], open_names: dict[bytes, int], name: bytes) -> None:
    """Close the open `name` a new one ends, if no boundary of its lies in between (a look
    MAX_NESTING_DEPTH deep at most)."""
    for open_name in reversed(stack):
        if open_name == name:
            _close(stack, open_names, name)
            return
        if open_name in _CLOSED_BY_SIBLING[name]:
            return


def _close(stack: list[bytes], open_names: dict[bytes, int], name: bytes) -> None:
    """Pop the innermost open `name` and everything opened inside it."""
    while stack:
        popped = stack.pop()
        open_names[popped] -= 1
        if popped == name:
            return


def strip_docx_comments(data: bytes) -> bytes:
    """The DOCX with no XML comments or processing instructions inside its Word parts.

    Docling's DOCX reader takes every node of the body for an element and stops at a comment
    ("Invalid input tag"); Word never writes them, but other tools do. The DOCX as given when
    it has none, or is not a readable zip (the parser says what is wrong then).
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as source:
            parts = [(info, source.read(info)) for info in source.infolist()]
    except (zipfile.BadZipFile, OSError, EOFError):
        return data
    cleaned = {
        info.filename: _without_comments(content)
        for info, content in parts
        if info.filename.startswith("word/") and info.filename.endswith(".xml")
        if b"<!--" in content or b"<?" in content[1:]
    }
    if not any(cleaned[name] is not None for name in cleaned):
        return data
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info, content in parts:
            target.writestr(info, cleaned.get(info.filename) or content)
    return out.getvalue()


def _without_comments(xml: bytes) -> bytes | None:
    """The XML part without comments and processing instructions; None if it cannot be read."""

    parser = etree.XMLParser(remove_comments=True, remove_pis=True, resolve_entities=False)
    try:
        root = etree.fromstring(xml, parser)
    except etree.XMLSyntaxError:
        return None
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)


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
