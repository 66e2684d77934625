"""Dagster resources: thin, configurable handles on the plain-Python services.

A resource that reads a settings group takes it whole, as a config class made from the group
(`group_config`): the group is the one source of each field's default and description."""

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import Config, ConfigurableResource, EnvVar
from pydantic import Field, PrivateAttr, create_model

from rag_assets.llm.settings import LLMSettings
from rag_assets.parsers.routing import ParserRouter
from rag_assets.settings import Settings
from rag_assets.settings.base import EnvSettings
from rag_assets.settings.groups import (
    BATCH_DOCUMENTS,
    BATCH_PAGES,
    DEFAULT_EMBEDDED_PART,
    DEFAULT_RUNTIME,
    ChunkingSettings,
    EmbeddedPart,
    IndexSettings,
    ParsingSettings,
)
from rag_assets.settings.limits import DocumentLimits
from rag_assets.sources.collections import (
    DocumentPlan,
    RuntimeChoices,
    load_collections,
    plan_document,
)
from rag_assets.sources.template_picks import load_picks


def group_config(group: type[EnvSettings]) -> type[Config]:
    """A Dagster config class with the group's fields, defaults and descriptions (the group's
    own model validates the values when a resource builds it)."""
    fields = {
        name: (
            field.annotation,
            Field(default_factory=field.default_factory, description=field.description)
            if field.default_factory
            else Field(field.default, description=field.description),
        )
        for name, field in group.model_fields.items()
    }
    name = group.__name__.removesuffix("Settings") + "Config"
    return create_model(name, __base__=Config, **fields)  # type: ignore[call-overload]


ChunkingConfig = group_config(ChunkingSettings)
IndexConfig = group_config(IndexSettings)
LLMConfig = group_config(LLMSettings)


class InboxResource(ConfigurableResource):
    """The watched folder of documents, where their fixed copies are kept, and how many of them
    a run carries."""

    inbox_dir: str
    raw_dir: str
    follow_symlinks: bool = False  # symbolic links leading out of the inbox
    max_file_mb: float  # larger files fail before they are copied or parsed
    # What one document may expand to or cost (RAG_ASSETS_MAX_*, settings/limits.py)
    max_pages: int = DocumentLimits.model_fields["max_pages"].default
    max_archive_mb: float = DocumentLimits.model_fields["max_archive_mb"].default
    max_archive_entries: int = DocumentLimits.model_fields["max_archive_entries"].default
    max_compression_ratio: float = DocumentLimits.model_fields["max_compression_ratio"].default
    max_elements: int = DocumentLimits.model_fields["max_elements"].default
    # How many documents (RAG_ASSETS_BATCH_DOCUMENTS) and pages (RAG_ASSETS_BATCH_PAGES) a run
    # carries: defs/batches.py
    batch_documents: int = BATCH_DOCUMENTS
    batch_pages: int = BATCH_PAGES

    @property
    def limits(self) -> DocumentLimits:
        return DocumentLimits(
            max_pages=self.max_pages,
            max_archive_mb=self.max_archive_mb,
            max_archive_entries=self.max_archive_entries,
            max_compression_ratio=self.max_compression_ratio,
            max_elements=self.max_elements,
        )

    @property
    def inbox(self) -> Path:
        return Path(self.inbox_dir)

    @property
    def raw(self) -> Path:
        return Path(self.raw_dir)


class ParserResource(ConfigurableResource):
    """Runs parsers; Docling reads PDF only with local layout models under `docling_artifacts_path`."""

    docling_artifacts_path: str | None = None
    parse_workers: int = 1  # processes for the page ranges of a long PDF; 1 = in the run's process
    repairs_off: list[str] = []  # IR repairs normalized_documents leaves out

    def router(self, parser: str) -> ParserRouter:
        return _router(parser, self.docling_artifacts_path, self.parse_workers)


@functools.cache
def _router(parser: str, docling_artifacts_path: str | None, parse_workers: int) -> ParserRouter:
    # One router per process keeps each parser's loaded models across partitions.
    return ParserRouter(parser, docling_artifacts_path, parse_workers)


class CollectionsResource(ConfigurableResource):
    """Which parser, template and options each document gets (rag_collections.yaml + settings)."""

    config_path: str
    parser: str = ParsingSettings.model_fields["parser"].default
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)  # type: ignore[valid-type]
    force_parser: str | None = None
    force_template: str | None = None
    picks_path: str | None = None  # templates picked per collection by evaluation

    def plan(self, relative_path: str) -> DocumentPlan:
        chunking = self.chunking
        runtime = RuntimeChoices(
            parser=self.parser,
            template=chunking.template,
            options={
                "max_tokens": chunking.chunk_max_tokens,
                "overlap_tokens": chunking.chunk_overlap_tokens,
                # Named only when chosen, so the default leaves the documents' settings as they were.
                **(
                    {"vocabularies": chunking.vocabularies}
                    if chunking.vocabularies != "auto"
                    else {}
                ),
            },
            force_parser=self.force_parser,
            force_template=self.force_template,
        )
        picks = load_picks(Path(self.picks_path)) if self.picks_path else {}
        return plan_document(
            load_collections(Path(self.config_path)), relative_path, runtime, picks
        )


class EmbeddingResource(ConfigurableResource):
    """A FlagEmbedding model: the bundled MiniLM by default, a local folder or cached name otherwise."""

    model: str
    kind: str = "auto"
    batch_size: int = 8  # see EmbeddingSpec.batch_size
    runtime: str = DEFAULT_RUNTIME  # onnx, onnx-int8 or flag (see rag_assets.embedding.models)
    vector_store: str | None = None  # folder of vectors by text (embedding/reuse.py); None: off
    embedded_text: str = DEFAULT_EMBEDDED_PART  # text or context (see embedding/rows.py)

    def spec(self):
        from rag_assets.embedding.models import EmbeddingSpec

        return EmbeddingSpec(
            model=self.model, kind=self.kind, batch_size=self.batch_size, runtime=self.runtime
        )

    def vectors_version(self) -> str | None:
        """The runtime's part of the vectors' version (None on FlagEmbedding); loads no model."""
        from rag_assets.embedding.models import resolve_model, vectors_version
        from rag_assets.embedding.selection import effective_spec

        chosen, _ = effective_spec(self.spec())
        return vectors_version(chosen, resolve_model(chosen))

    def load(self):
        """(embedder, fallback reason or None): the bundled model stands in for a missing one."""
        from rag_assets.embedding.selection import select_embedder

        return select_embedder(self.spec())

    def embedded_part(self):
        """What of a chunk is embedded, checked against the settings' choices."""
        from pydantic import TypeAdapter

        return TypeAdapter(EmbeddedPart).validate_python(self.embedded_text)

    def store(self, embedder):
        """The stored vectors of `embedder`'s model, or None when none are kept."""
        from rag_assets.embedding.reuse import VectorStore

        if self.vector_store is None:
            return None
        return VectorStore(Path(self.vector_store), embedder.vectors_identity)

    def token_counter(self):
        from rag_assets.embedding.selection import select_model

        resolved, _ = select_model(self.spec())
        return _token_counter(str(resolved.path))


@functools.cache
def _token_counter(model_dir: str):
    from rag_assets.templates.tokens import TokenizerCounter

    return TokenizerCounter.from_model_dir(Path(model_dir))


class LLMResource(ConfigurableResource):
    """Any OpenAI-compatible endpoint. The key is read from the variable named `api_key_env`,
    so it is in no config, metadata or log. Off (structure path only) without `base_url`."""

    endpoint: LLMConfig = Field(default_factory=LLMConfig)  # type: ignore[valid-type]
    vision_dpi: int = 144
    include_picture_tables: bool = False
    cache_dir: str
    _client: object = PrivateAttr(default=None)

    def settings(self) -> LLMSettings:
        return LLMSettings(**self.endpoint.model_dump())

    def client(self):
        """One client per run (the resource lives for a run): the budget counts per run."""
        if self._client is None and self.settings().enabled:
            from rag_assets.llm.client import LLMClient

            self._client = LLMClient(self.settings())
        return self._client

    def vision_client(self):
        return self.client() if self.settings().vision_enabled else None


class MilvusResource(ConfigurableResource):
    """Milvus by URI: a Milvus Lite file (one process at a time) or a server `http://...`."""

    uri: str
    token: str | None = None
    index: IndexConfig = Field(default_factory=IndexConfig)  # type: ignore[valid-type]

    @classmethod
    def of(
        cls,
        settings: Settings,
        secret: Callable[[str | None, str], str | EnvVar | None] = lambda value, _: value,
    ) -> "MilvusResource":
        """The index the settings name; `secret` may hand the URI and token, which can hold
        credentials, to Dagster by their variables' names."""
        options = settings.milvus
        return cls(
            uri=secret(options.pop("uri"), "RAG_ASSETS_MILVUS_URI"),
            token=secret(options.pop("token"), "RAG_ASSETS_MILVUS_TOKEN"),
            index=IndexConfig(**options),
        )

    @contextmanager
    def open(self, collection_prefix: str | None = None) -> Iterator:
        """The index; `collection_prefix` keeps its collections apart from the product's (the
        evaluation's `eval_<template>`)."""
        from rag_assets.index.store import MilvusIndex

        index = MilvusIndex(
            self.uri,
            token=self.token,
            **({"collection_prefix": collection_prefix} if collection_prefix else {}),
            **self.index.model_dump(),
        )
        try:
            yield index
        finally:
            index.close()
