"""Layer 2: a DoclingDocument export (Layer 1 native output) -> StandardizedDocument.

Heading levels follow Docling's own markdown, whatever the format: a `title` label is level 1
and `section_header` level L is level L + 1. Docling 2.143 gives `#` / <h1> / DOCX "Title" as
`title` and `##` / <h2> / DOCX "Heading 1" as section_header level 1, so `#` depth == IR level.
Outside PDF those levels are the source's own (`LEVEL_STATED`): Markdown `#`, HTML `h1`-`h6`,
DOCX heading styles. A PDF's levels are the layout model's guess from the page, which the
numbering repair may set from the headings' real numbers.

docling_core is imported inside `docling_to_ir` (its import pulls in pandas, ~1.4 s); the helpers
work on item labels (plain strings via `str(label)`) rather than on Docling classes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rag_assets.contracts.ir import (
    BBox,
    DocumentElement,
    ElementType,
    StandardizedDocument,
    TableCell,
    TableData,
)
from rag_assets.normalize.document import adapted_document
from rag_assets.normalize.repairs.heading_levels import LEVEL_STATED
from rag_assets.normalize.table_markdown import table_to_markdown
from rag_assets.parsers.base import ParsedDocument

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument, NodeItem

# Formats whose `title` label is the document's own title (PDF layout label, DOCX and ODT
# "Title" style, AsciiDoc `= Title`, an e-mail's subject); in Markdown, HTML and EPUB it is only
# `#` / <h1> markup, and in PPTX a slide's title: those stay level-1 headings.
_TITLE_FORMATS = frozenset({"pdf", "docx", "odt", "asciidoc", "eml", "msg"})
# Docling's e-mail backend writes these headers, in this order, as the paragraphs right after
# the subject; they are the message's metadata, not its text.
_EMAIL_FORMATS = frozenset({"eml", "msg"})
_EMAIL_FIELDS = ("From", "To", "Cc", "Date")
_EMAIL_HEADER = re.compile(r"(From|To|Cc|Date): (.+)", re.DOTALL)
# A lone cell in a sheet is a label (a title typed above a table), not a table.
_SHEET_FORMATS = frozenset({"xlsx", "csv", "tsv"})
_LIST_GROUPS = frozenset({"list", "ordered_list"})
_TABLE_LABELS = frozenset({"table", "document_index"})
_PICTURE_LABELS = frozenset({"picture", "chart"})
_FURNITURE_KEPT = frozenset({"page_header", "page_footer"})
_TEXT_TYPES: dict[str, ElementType] = {
    "caption": "caption",
    "footnote": "footnote",
    "page_header": "page_header",
    "page_footer": "page_footer",
    "document_index": "toc",
}
_IMAGE_PLACEHOLDER = "<!-- image -->"
_LIST_INDENT = "    "
_NO_SPACE_BEFORE = tuple(".,;:!?)]}%")
_NO_SPACE_AFTER = tuple("([{")


def docling_to_ir(
    parsed: ParsedDocument, *, doc_id: str, source_sha256: str
) -> StandardizedDocument:
    # docling-core's types take a second to load: only for a document Docling parsed.
    from docling_core.types.doc import DoclingDocument

    doc = DoclingDocument.model_validate(parsed.native)
    walker = _Walker(doc, parsed.file_format)
    return adapted_document(
        parsed,
        walker.walk(),
        doc_id=doc_id,
        source_sha256=source_sha256,
        page_count=len(doc.pages) or None,
        title=walker.title,
        metadata={
            "file_format": parsed.file_format,
            "parser_notes": parsed.notes,
            **({"email": walker.email} if walker.email else {}),
        },
    )


class _Walker:
    """Walks the body in reading order and emits IR elements."""

    def __init__(self, doc: DoclingDocument, file_format: str) -> None:
        self.doc = doc
        self.file_format = file_format
        self.title: str | None = None
        self.elements: list[DocumentElement] = []
        self.email: dict[str, str] = {}  # e-mail headers by lower-case name
        self.levels_stated = file_format != "pdf"
        # Items already rendered by an owner: captions and footnotes of tables and pictures,
        # inline runs of headings.
        self.consumed = {
            ref.cref
            for owner in (*doc.tables, *doc.pictures)
            for ref in (*owner.captions, *owner.footnotes)
        }

    def walk(self) -> list[DocumentElement]:
        # docling-core's types take a second to load: only for a document Docling parsed.
        from docling_core.types.doc import ContentLayer

        layers = {ContentLayer.BODY, ContentLayer.FURNITURE}
        consumed_at: int | None = None
        in_table = False
        for item, depth in self.doc.iterate_items(with_groups=True, included_content_layers=layers):
            if consumed_at is not None and depth > consumed_at:
                # Inside a subtree already rendered (list, table, picture, inline); a table set
                # in a table's cell is a table of its own too, as its cell's text is flattened.
                if in_table and str(item.label) in _TABLE_LABELS:
                    self._table(item, str(item.label))
                continue
            consumed_at = depth if self._visit(item) else None
            in_table = consumed_at is not None and str(item.label) in _TABLE_LABELS
        return self.elements

    def _visit(self, item: NodeItem) -> bool:
        """Emit what `item` holds; True when that covered its whole subtree."""
        label = str(item.label)
        if item.self_ref in self.consumed:
            return True
        if item.content_layer.value == "furniture" and label not in _FURNITURE_KEPT:
            return True  # navigation, banners: not document content
        if label in _LIST_GROUPS or label in ("inline", "sheet"):
            return self._group(item, label)
        if not hasattr(item, "prov"):
            return False  # a plain group (section, chapter): its children carry the content
        return self._content(item, label)

    def _group(self, item: Any, label: str) -> bool:
        """A list or an inline run, rendered whole; a sheet, named by a heading."""
        if label in _LIST_GROUPS:
            lines = _list_lines(self.doc, item, 0)
            self._add("list", "\n".join(lines), item, _doc_items(self.doc, item))
            return True
        if label == "inline":
            self._add("paragraph", _inline(self.doc, item), item, _doc_items(self.doc, item))
            return True
        # A workbook's sheet is a section named on its tab.
        name = " ".join(item.name.split())
        items = _doc_items(self.doc, item)
        if name and items:  # an empty sheet names nothing
            self._add("heading", f"# {name}", item, items, level=1, **{LEVEL_STATED: True})
        return False

    def _content(self, item: Any, label: str) -> bool:
        """An item with a place on the page: a table, a picture, a list item, a text."""
        if label in _TABLE_LABELS:
            self._table(item, label)
            return True
        if label in _PICTURE_LABELS:
            self._figure(item)
            return True
        if label == "list_item":  # an item outside any list group
            marker = _marker(item, 1, item.enumerated)
            self._add("list", "\n".join(_item_lines(self.doc, item, marker, 0)), item)
            return True
        if hasattr(item, "text"):
            self._text(item, label)
        return False  # headings in DOCX/HTML hold their section as children

    def _text(self, item: Any, label: str) -> None:
        if label in ("title", "section_header"):
            self._heading(item, label)
        elif label == "code":
            self._add("code", _fence(item.text, item.code_language.value), item)
        elif label == "formula":
            self._add("formula", f"$${item.text.strip()}$$" if item.text.strip() else "", item)
        elif not self._email_header(item.text.strip()):
            self._add(_TEXT_TYPES.get(label, "paragraph"), item.text.strip(), item)

    def _email_header(self, text: str) -> bool:
        """Keep `text` as an e-mail header when it is one: only before the body starts."""
        if self.file_format not in _EMAIL_FORMATS or any(e.type != "title" for e in self.elements):
            return False
        match = _EMAIL_HEADER.fullmatch(text)
        taken = [_EMAIL_FIELDS.index(name.capitalize()) for name in self.email]
        if match is None or _EMAIL_FIELDS.index(match[1]) <= max(taken, default=-1):
            return False
        self.email[match[1].lower()] = match[2]
        return True

    def _heading(self, item: Any, label: str) -> None:
        text = " ".join(self._heading_text(item).split())
        if not text:
            return
        if label == "title":
            level = 1
            is_doc_title = self.file_format in _TITLE_FORMATS and self.title is None
            kind: ElementType = "title" if is_doc_title else "heading"
            self.title = self.title or text
        else:
            level = min(item.level + 1, 6)
            kind = "heading"
        stated = {LEVEL_STATED: True} if self.levels_stated else {}
        self._add(kind, f"{'#' * level} {text}", item, level=level, **stated)

    def _heading_text(self, item: Any) -> str:
        """A heading's own text; Markdown puts a formatted heading's text in a first inline child.

        The other children (in Markdown, DOCX and HTML) are the section's content, walked as usual.
        """
        if item.text.strip() or not item.children:
            return item.text
        first = item.children[0].resolve(self.doc)
        if str(first.label) != "inline":
            return ""
        self.consumed.add(first.self_ref)
        return _inline(self.doc, first)

    def _table(self, item: Any, label: str) -> None:
        data = _table_data(self.doc, item)
        if not data.cells:
            return
        if self.file_format in _SHEET_FORMATS and data.num_rows == data.num_cols == 1:
            self._add("paragraph", data.cells[0].text, item)
            return
        if data.caption:
            captions = [ref.resolve(self.doc) for ref in item.captions]
            self._add("caption", data.caption, captions[0], captions, caption_of="table")
        kind: ElementType = "toc" if label == "document_index" else "table"
        self._add(kind, table_to_markdown(data), item, table=data)
        self._footnotes(item)

    def _figure(self, item: Any) -> None:
        caption = _join(ref.resolve(self.doc).text for ref in item.captions)
        self._add("figure", caption or _IMAGE_PLACEHOLDER, item, caption=caption or None)
        self._footnotes(item)

    def _footnotes(self, owner: Any) -> None:
        for ref in owner.footnotes:
            note = ref.resolve(self.doc)
            self._add("footnote", note.text.strip(), note, footnote_of=str(owner.label))

    def _add(
        self,
        kind: ElementType,
        text: str,
        source: Any,
        items: list[Any] | None = None,
        *,
        level: int | None = None,
        table: TableData | None = None,
        **metadata: Any,
    ) -> None:
        """Append one element for `source`; pages and bbox come from `items` (default: source)."""
        if not text:
            return
        page_start, page_end, bbox = _provenance(self.doc, items or [source])
        self.elements.append(
            DocumentElement(
                type=kind,
                text=text,
                level=level,
                page_start=page_start,
                page_end=page_end,
                bbox=bbox,
                table=table,
                metadata={
                    "ref": source.self_ref,
                    "label": str(source.label),
                    **{k: v for k, v in metadata.items() if v is not None},
                },
            )
        )


def _doc_items(doc: DoclingDocument, root: NodeItem) -> list[Any]:
    """The content items under a group, for provenance."""
    return [item for item, _ in doc.iterate_items(root=root)]


def _provenance(doc: DoclingDocument, items: list[Any]) -> tuple[int, int, BBox | None]:
    """Page span over all items; bbox (top-left origin) around their boxes on the first page."""
    provs = [prov for item in items for prov in getattr(item, "prov", [])]
    if not provs:
        return 1, 1, None  # formats without pages (md, html, docx)
    page_start = min(p.page_no for p in provs)
    page_end = max(p.page_no for p in provs)
    page = doc.pages.get(page_start)
    if page is None:
        return page_start, page_end, None
    boxes = [p.bbox.to_top_left_origin(page.size.height) for p in provs if p.page_no == page_start]
    bbox = (
        round(min(b.l for b in boxes), 2),
        round(min(b.t for b in boxes), 2),
        round(max(b.r for b in boxes), 2),
        round(max(b.b for b in boxes), 2),
    )
    return page_start, page_end, bbox


def _join(parts: Iterable[str]) -> str:
    """Join inline runs with spaces, but not before closing punctuation or after an opener."""
    out = ""
    for part in (p.strip() for p in parts):
        if not part:
            continue
        if out and not part.startswith(_NO_SPACE_BEFORE) and not out.endswith(_NO_SPACE_AFTER):
            out += " "
        out += part
    return out


def _inline(doc: DoclingDocument, node: Any) -> str:
    """A node as one line of text; inline code keeps its backticks, other formatting is dropped."""
    label = str(node.label)
    if label == "code":
        return f"`{node.text.strip()}`"
    if label == "formula":
        return f"${node.text.strip()}$"
    own = [node.text] if hasattr(node, "text") else []
    return _join([*own, *(_inline(doc, c.resolve(doc)) for c in node.children)])


def _list_lines(doc: DoclingDocument, group: Any, depth: int) -> list[str]:
    children = [ref.resolve(doc) for ref in group.children]
    items = [c for c in children if str(c.label) not in (*_LIST_GROUPS, "code")]
    # As in Docling's markdown: a list whose first item is enumerated is numbered throughout.
    ordered = bool(items) and getattr(items[0], "enumerated", False)
    lines: list[str] = []
    number = 0
    content = _LIST_INDENT * depth  # where the last item's content starts
    for child in children:
        if str(child.label) in _LIST_GROUPS:
            lines += _list_lines(doc, child, depth + 1)  # a sublist without a parent item
        elif str(child.label) == "code":
            # Docling's Markdown backend puts an item's code block beside it in the list.
            lines += _indented_fence(child, content)
        else:
            number += 1
            marker = _marker(child, number, ordered)
            lines += _item_lines(doc, child, marker, depth)
            content = " " * (len(_LIST_INDENT * depth) + len(marker) + 1)
    return lines


def _item_lines(doc: DoclingDocument, item: Any, marker: str, depth: int) -> list[str]:
    """One list item's line, then its code blocks and nested lists indented under it."""
    children = [ref.resolve(doc) for ref in item.children]
    own = [item.text] if hasattr(item, "text") else []
    inline = [_inline(doc, c) for c in children if str(c.label) not in (*_LIST_GROUPS, "code")]
    text = " ".join(_join([*own, *inline]).split())  # one line, or the list would break
    lines = [f"{_LIST_INDENT * depth}{marker} {text}"] if text else []
    content = " " * (len(_LIST_INDENT * depth) + len(marker) + 1)
    for child in children:
        if str(child.label) in _LIST_GROUPS:
            lines += _list_lines(doc, child, depth + 1)
        elif str(child.label) == "code":
            lines += _indented_fence(child, content)
    return lines


def _indented_fence(code: Any, indent: str) -> list[str]:
    """A code block inside a list item: fenced, at the item's content column, so it stays code."""
    fence = _fence(code.text, code.code_language.value)
    return [f"{indent}{line}" if line else line for line in fence.split("\n")]


def _marker(item: Any, number: int, ordered: bool) -> str:
    """A markdown list marker; informative source markers ("1.1.", "a)") are kept after a bullet."""
    marker = getattr(item, "marker", "").strip()
    if re.fullmatch(r"\d+[.)]", marker):
        return f"{marker[:-1]}."
    if marker and any(ch.isalnum() for ch in marker):
        return f"- {marker}"
    return f"{number}." if ordered else "-"


def _fence(code: str, language: str) -> str:
    """A fenced block; the fence outgrows any backtick run inside, so `#` lines stay code."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = "" if language == "unknown" else language.lower()
    body = code.strip("\n")
    return f"{fence}{lang}\n{body}\n{fence}"


def _table_data(doc: DoclingDocument, item: Any) -> TableData:
    cells: dict[tuple[int, int], TableCell] = {}
    for cell in item.data.table_cells:
        key = (cell.start_row_offset_idx, cell.start_col_offset_idx)
        # Some exports repeat a spanning cell once per slot it covers; keep the first.
        cells.setdefault(
            key,
            TableCell(
                row=key[0],
                col=key[1],
                text=cell.text.strip(),
                row_span=max(1, cell.end_row_offset_idx - cell.start_row_offset_idx),
                col_span=max(1, cell.end_col_offset_idx - cell.start_col_offset_idx),
                is_header=cell.column_header,
            ),
        )
    ordered = sorted(cells.values(), key=lambda c: (c.row, c.col))
    return TableData(
        num_rows=item.data.num_rows,
        num_cols=item.data.num_cols,
        cells=ordered,
        header_rows=_header_rows(ordered, item.data.num_rows, item.data.num_cols),
        caption=_join(ref.resolve(doc).text for ref in item.captions) or None,
        footnotes=[ref.resolve(doc).text.strip() for ref in item.footnotes],
    )


def _header_rows(cells: list[TableCell], num_rows: int, num_cols: int) -> int:
    """Leading rows filled, in every column, by column-header cells."""
    count = 0
    for row in range(num_rows):
        covering = [c for c in cells if c.row <= row < c.row + c.row_span]
        columns = {col for c in covering for col in range(c.col, c.col + c.col_span)}
        if len(columns) < num_cols or not all(c.is_header for c in covering):
            break
        count += 1
    return count
