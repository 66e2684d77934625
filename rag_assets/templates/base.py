"""The template contract (IR in, chunk rows out) and the helpers every template shares."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rag_assets.contracts.chunk import ChunkRow, ChunkType, chunk_id_for
from rag_assets.contracts.ir import FURNITURE_TYPES, DocumentElement, StandardizedDocument
from rag_assets.errors import ConfigurationError
from rag_assets.optional import StepFailures
from rag_assets.profile.model import DocumentProfile
from rag_assets.settings.groups import ChunkingSettings
from rag_assets.templates.references import article_openings, cited_articles, cited_context
from rag_assets.templates.sections import section_titles
from rag_assets.templates.tokens import TokenCounter
from rag_assets.text.numbering import SECTION_NUMBER_END, section_number_pattern
from rag_assets.vocabulary import Vocabulary, chosen_packs, packs_for

T = TypeVar("T")

# Running headers/footers repeat on every page and carry no content.
SKIPPED_TYPES = FURNITURE_TYPES
HEADING_TYPES = frozenset({"title", "heading"})
# Adapters may or may not keep the markdown marker in a heading's text.
_ATX_MARKER = re.compile(r"^\s*#{1,6}(?=\s|$)")
_WORD_CHAR = re.compile(r"\w")
# The sizes a template cuts to unless a collection says otherwise (RAG_ASSETS_CHUNK_*).
_CHUNKING = ChunkingSettings.model_fields


class TemplateOptions(BaseModel):
    """Size limits shared by all templates; counts are in the embedding model's tokens."""

    # Forbid unknown keys so a typo in a collection's config fails loudly.
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int = Field(default=_CHUNKING["chunk_max_tokens"].default, ge=1)
    overlap_tokens: int = Field(default=_CHUNKING["chunk_overlap_tokens"].default, ge=0)
    # A section whose chunk would hold fewer tokens is merged with a neighbour (where the
    # template has sections to merge; see its docstring); 0 keeps every section apart.
    min_tokens: int = Field(default=32, ge=0)
    # Adds metadata prev_chunk_id / next_chunk_id, for retrievers that widen a hit's context.
    neighbour_ids: bool = False
    # Between the titles of header_path ("/A/B/" by default, "::A::B::" with "::").
    header_path_separator: str = Field(default="/", pattern=r"^[^\w\s]{1,3}$")
    # Vocabulary packs (rag_assets/vocabulary): names or YAML paths; None is `auto`, the
    # shipped packs made for the document's profile kind; () is none.
    vocabularies: tuple[str, ...] | None = None
    # Whether a question naming one of the document's section titles searches that section
    # (retrieval/titles.py); None leaves it to the search's `section_titles` setting.
    section_titles: bool | None = None

    @field_validator("vocabularies", mode="before")
    @classmethod
    def _known_vocabularies(cls, value: object) -> tuple[str, ...] | None:
        try:
            return chosen_packs(value)  # type: ignore[arg-type]
        except ConfigurationError as error:
            raise ValueError(str(error)) from None

    @model_validator(mode="after")
    def _overlap_below_max(self) -> TemplateOptions:
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(
                f"overlap_tokens ({self.overlap_tokens}) must be below "
                f"max_tokens ({self.max_tokens})"
            )
        return self


class ElementSpan(NamedTuple):
    """The part [start, end) of one element's text that a chunk covers."""

    element: DocumentElement
    start: int
    end: int


def context_root(doc: StandardizedDocument) -> str | None:
    """What every chunk's breadcrumb starts with: the document's identity from its profile
    (`Netflix, Inc. · annual report (Form 10-K) · fiscal year 2017`) when the profile names
    its issuer, so that among look-alike documents a chunk deep in one still says whose it is
    and which period it covers; else the title."""
    profile = doc.metadata.get("profile")
    if profile:
        identity = DocumentProfile.model_validate(profile)
        if identity.names_its_issuer():
            return identity.identity()
    return doc.title


def link_neighbours(rows: list[ChunkRow]) -> list[ChunkRow]:
    """Each row's metadata names the chunks before and after it (None at the ends)."""
    return [
        row.model_copy(
            update={
                "metadata": {
                    **row.metadata,
                    "prev_chunk_id": rows[i - 1].chunk_id if i else None,
                    "next_chunk_id": rows[i + 1].chunk_id if i + 1 < len(rows) else None,
                }
            }
        )
        for i, row in enumerate(rows)
    ]


class ChunkTemplate(ABC):
    """Formats a StandardizedDocument into chunk rows; never looks at which parser ran."""

    name: ClassVar[str]
    # Bump whenever the same IR would give different rows, so downstream assets go stale.
    version: ClassVar[str]
    # False: `headings` are titles of the IR's heading elements. True: the template reads
    # its structure from the text (clause or Q&A markers), so its headings are lines of text.
    headings_from_text: ClassVar[bool] = False
    # Templates with options of their own subclass TemplateOptions and name it here.
    options_class: ClassVar[type[TemplateOptions]] = TemplateOptions
    uses_llm: ClassVar[bool] = False  # True: the constructor takes `llm`, an LLMClient or None
    # True: a chunk citing articles of its own document (`本法第八条`) has their openings in its
    # context_text (`references`); the `fixed` baseline knows no structure and leaves them out.
    cites_articles: ClassVar[bool] = True

    def __init__(self, options: TemplateOptions | None = None) -> None:
        self.options = options or TemplateOptions()
        self._openings: tuple[str, dict[int, str]] | None = None  # (doc key, article openings)
        self._context_root: tuple[str, str | None] | None = None  # (doc key, breadcrumb root)
        self._packs: tuple[str, list[Vocabulary]] | None = None  # (doc key, its vocabularies)
        # Optional steps that failed while chunking (article openings, figures, cross-references):
        # the chunks are made without them and the document lands degraded.
        self.failures = StepFailures()

    def optional(
        self, doc: StandardizedDocument, step: str, call: Callable[[], T], fallback: T
    ) -> T:
        """`call()`, or `fallback` when it raises: the step is recorded in `failures`."""
        self.failures.subject = doc.source_path or doc.doc_id
        return self.failures.run(step, call, fallback)

    @abstractmethod
    def chunk(self, doc: StandardizedDocument, counter: TokenCounter) -> list[ChunkRow]: ...

    def document_structure(self, doc: StandardizedDocument) -> BaseModel | None:
        """What a template learns about the whole document (e.g. a TOC), kept beside its chunks."""
        return None

    def make_row(
        self,
        doc: StandardizedDocument,
        chunk_index: int,
        text: str,
        counter: TokenCounter,
        spans: Sequence[ElementSpan],
        *,
        header_path: str = "/",
        headings: Sequence[str] = (),
        chunk_type: ChunkType = "text",
        logical_unit: str | None = None,
        metadata: dict | None = None,
        context_headings: Sequence[str] | None = None,
    ) -> ChunkRow:
        """A row with provenance: pages and markdown offsets come from the spans covered.

        `context_headings` are the breadcrumb's headings when they are not the row's own
        (`fixed` has none, yet knows the headings open where its window starts).
        """
        paged = doc.page_count is not None
        pages = [s.element.pages_of(s.start, s.end) for s in spans]
        crumbs = headings if context_headings is None else context_headings
        packs = self.vocabularies(doc)
        context = contextualize(self._root(doc), crumbs, text, packs)
        metadata = {
            **(metadata or {}),
            **section_titles(crumbs, text),
            **section_metadata(packs, crumbs, text),
        }
        tokens = counter.count(text)
        # A short chunk may name what it is about only by the articles it cites; a longer one
        # has words enough of its own, and the openings would mostly repeat other chunks.
        if self.cites_articles and tokens <= self.options.max_tokens // 2 and cited_articles(text):
            cited = self.optional(
                doc,
                "article openings",
                lambda: cited_context(text, self._article_openings(doc, counter)),
                [],
            )
            context = "\n\n".join([context, *cited])
        return ChunkRow(
            chunk_id=chunk_id_for(doc.doc_id, self.name, chunk_index, text),
            doc_id=doc.doc_id,
            source_path=doc.source_path,
            source_sha256=doc.source_sha256,
            template=self.name,
            chunk_index=chunk_index,
            text=text,
            context_text=context,
            header_path=with_separator(header_path, self.options.header_path_separator),
            headings=list(headings),
            chunk_type=chunk_type,
            # Formats without pages (Markdown, HTML, DOCX) cite no page at all.
            page_start=min((p[0] for p in pages), default=None) if paged else None,
            page_end=max((p[1] for p in pages), default=None) if paged else None,
            start_char=min((s.element.start_char + s.start for s in spans), default=None),
            end_char=max((s.element.start_char + s.end for s in spans), default=None),
            logical_unit=logical_unit,
            token_count=tokens,
            metadata=metadata,
        )

    def _root(self, doc: StandardizedDocument) -> str | None:
        """`context_root(doc)`, read once per document rather than once per row."""
        key = f"{doc.doc_id}:{doc.source_sha256}"
        if self._context_root is None or self._context_root[0] != key:
            self._context_root = (key, context_root(doc))
        return self._context_root[1]

    def vocabularies(self, doc: StandardizedDocument) -> list[Vocabulary]:
        """The vocabulary packs `doc` uses, chosen once per document."""
        key = f"{doc.doc_id}:{doc.source_sha256}"
        if self._packs is None or self._packs[0] != key:
            kind = (doc.metadata.get("profile") or {}).get("kind")
            chosen = packs_for(self.options.vocabularies, kind["value"] if kind else None)
            self._packs = (key, chosen)
        return self._packs[1]

    def _article_openings(self, doc: StandardizedDocument, counter: TokenCounter) -> dict[int, str]:
        key = f"{doc.doc_id}:{doc.source_sha256}"
        if self._openings is None or self._openings[0] != key:
            texts = (element.text for element in body_elements(doc))
            self._openings = (key, article_openings(texts, counter))
        return self._openings[1]


BREADCRUMB_SEPARATOR = " › "
# What may stand before a heading's words on its line: `#` markers, a list bullet, the
# bracket of a spec row's `[Table name]`.
_LINE_LEAD = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\[)?")


def contextualize(
    title: str | None,
    headings: Sequence[str],
    text: str,
    vocabularies: Sequence[Vocabulary] = (),
) -> str:
    """What is embedded and matched: `Title › A › B`, a blank line, then the chunk's text.

    As docling-core's `contextualize()` puts a chunk's headings before its text, so a
    question naming a section or the document finds the chunks under it. The innermost
    crumb is left out when the text already opens with it (the chunk's own heading line),
    and a crumb equal to the one before it (a title heading that is the document title)
    is given once.
    """
    crumbs = breadcrumb(title, headings, text, vocabularies)
    return f"{crumbs}\n\n{text}" if crumbs else text


def breadcrumb(
    title: str | None,
    headings: Sequence[str],
    text: str,
    vocabularies: Sequence[Vocabulary] = (),
) -> str:
    """`Title › A › B`; under the title of a section a vocabulary pack knows (a heading, else
    the first cell of the text's table), the section's usual names last (`› balance sheet,
    statement of financial position`), even when the text opens with it."""
    crumbs: list[str] = []
    for part in [title or "", *headings]:
        part = " ".join(part.split())
        if part and (not crumbs or crumbs[-1] != part):
            crumbs.append(part)
    if crumbs and opens_with(text, crumbs[-1]):
        crumbs.pop()
    for pack in vocabularies:
        if kind := pack.section_of(headings, text):
            crumbs.append(pack.names[kind])
    return BREADCRUMB_SEPARATOR.join(crumbs)


def section_metadata(
    vocabularies: Sequence[Vocabulary], headings: Sequence[str], text: str
) -> dict[str, str]:
    """The kind of section each pack finds the chunk part of, under the pack's metadata key."""
    found = {}
    for pack in vocabularies:
        if kind := pack.section_of(headings, text):
            found[pack.metadata_key] = kind
    return found


def opens_with(text: str, heading: str) -> bool:
    """True when `text` starts with `heading` as whole words, whitespace and a leading
    markdown marker aside (a heading's title may wrap over lines in the text)."""
    words = " ".join(heading.split())
    start = _LINE_LEAD.match(text)
    lead = " ".join(text[start.end() if start else 0 :][: 2 * len(heading) + 16].split())
    after = lead[len(words) : len(words) + 1]
    # CJK text runs on without a space; a Latin word must end where the heading does.
    return lead.startswith(words) and not (after.isascii() and after.isalnum())


def body_elements(doc: StandardizedDocument) -> list[DocumentElement]:
    """The elements every template reads: reading order, page headers/footers dropped."""
    return [e for e in doc.elements if e.type not in SKIPPED_TYPES]


def content_elements(doc: StandardizedDocument) -> list[DocumentElement]:
    """The body elements that are headings or hold a word: an empty table's grid
    (`|  |\n|---|`) or a rule (`***`) alone would make a chunk with nothing to find."""
    return [e for e in body_elements(doc) if e.type in HEADING_TYPES or has_words(e.text)]


def has_words(text: str) -> bool:
    return bool(_WORD_CHAR.search(text))


def heading_title(element: DocumentElement) -> str:
    """A heading's text without markdown `#` markers and with whitespace collapsed."""
    return " ".join(_ATX_MARKER.sub("", element.text, count=1).split())


def heading_level(element: DocumentElement) -> int:
    """A title ranks as level 1, whatever level the adapter gave it."""
    if element.type == "title" or element.level is None:
        return 1
    return element.level


def heading_line(element: DocumentElement) -> str:
    """The heading as a markdown line, e.g. `## 1.1 Scope`."""
    return "#" * heading_level(element) + " " + heading_title(element)


def with_separator(header_path: str, separator: str) -> str:
    """A "/" path in another separator: unambiguous, since titles carry no "/" (see below)."""
    return header_path if separator == "/" else header_path.replace("/", separator)


def header_path_for(ancestors: Sequence[str]) -> str:
    """LlamaIndex-style path of ancestor heading titles: "/", "/A/", "/A/B/".

    A "/" inside a title becomes U+2215 (division slash) so the path stays splittable;
    checks comparing paths with `headings` must apply the same mapping.
    """
    return "/" + "".join(title.replace("/", "\u2215") + "/" for title in ancestors)


# A decimal section number opening a heading title: `2`, `2.1`, `3.6.6`; bounded, since it
# decides nesting and `2024 Annual report` must not nest as chapter 2024.
_DECIMAL_NUMBER = re.compile(rf"^({section_number_pattern()}){SECTION_NUMBER_END}")


def decimal_number(title: str) -> tuple[int, ...] | None:
    match = _DECIMAL_NUMBER.match(title.strip())
    return tuple(int(part) for part in match[1].split(".")) if match else None


def open_ancestors(open_titles: Sequence[str], title: str) -> int:
    """How many of the open headings (outermost first, already closed by level) stay open above
    `title`. A dotted section number nests only under its own prefixes: `2.1.6` closes an open
    `1` or `1.2` and everything below it, whatever their levels say, so a section whose parent
    heading the parser missed is not filed under the previous chapter."""
    number = decimal_number(title)
    if number is None or len(number) < 2:
        return len(open_titles)
    for position, open_title in enumerate(open_titles):
        ancestor = decimal_number(open_title)
        if ancestor is not None and number[: len(ancestor)] != ancestor:
            return position
    return len(open_titles)


class HeadingStack:
    """Open headings by level: a new heading closes every open one at its level or deeper, and
    every numbered one that is not a prefix of its number (`open_ancestors`)."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str]] = []

    def push(self, level: int, title: str) -> None:
        # Levels on the stack strictly increase, so popping from the top suffices.
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        del self._open[open_ancestors(self.titles, title) :]
        self._open.append((level, title))

    @property
    def titles(self) -> list[str]:
        """The full stack, innermost heading last."""
        return [title for _, title in self._open]

    @property
    def header_path(self) -> str:
        """Ancestors of the innermost heading."""
        return header_path_for(self.titles[:-1])
