"""Dagster resources: thin, configurable handles on the plain-Python services.

A resource that reads a settings group takes it whole, as a config class made from the group
(`group_config`): the group is the one source of each field's default and description."""

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dagster import Config, ConfigurableResource, EnvVar
from pydantic import Field, PrivateAttr, create_model

from rag_assets.embedding.models import Embedder, EmbeddingSpec, resolve_model, vectors_version
from rag_assets.embedding.reuse import VectorStore
from rag_assets.embedding.selection import effective_spec, select_embedder, select_model
from rag_assets.index.store import MilvusIndex
from rag_assets.llm.client import LLMClient
from rag_assets.llm.settings import LLMSettings, VisionSettings
from rag_assets.parsers.routing import ParserRouter
from rag_assets.settings import Settings
from rag_assets.settings.base import EnvSettings
from rag_assets.settings.groups import (
    BATCH_DOCUMENTS,
    BATCH_PAGES,
    ChunkingSettings,
    EmbeddedPart,
    EmbeddingSettings,
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
from rag_assets.templates.tokens import TokenizerCounter


def group_field(group: type[EnvSettings], name: str) -> Any:
    """A config field with the default and description of the group's field `name`."""
    field = group.model_fields[name]
    if field.default_factory:
        return Field(default_factory=field.default_factory, description=field.description)
    return Field(field.default, description=field.description)


def group_config(group: type[EnvSettings]) -> type[Config]:
    """A Dagster config class with the group's fields, defaults and descriptions (the group's
    own model validates the values when a resource builds it)."""
    fields = {
        name: (field.annotation, group_field(group, name))
        for name, field in group.model_fields.items()
    }
    name = group.__name__.removesuffix("Settings") + "Config"
    return create_model(name, __base__=Config, **fields)  # type: ignore[call-overload]


ChunkingConfig = group_config(ChunkingSettings)
EmbeddingConfig = group_config(EmbeddingSettings)
IndexConfig = group_config(IndexSettings)
LLMConfig = group_config(LLMSettings)
ParsingConfig = group_config(ParsingSettings)


class InboxResource(ConfigurableResource):
    """The watched folder of documents, where their fixed copies are kept, and how many of them
    a run carries."""

    inbox_dir: str
    raw_dir: str
    follow_symlinks: bool = group_field(ParsingSettings, "inbox_follow_symlinks")
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
    """Runs parsers; Docling reads PDF only with local layout models under
    `parsing.docling_artifacts_path`."""

    parsing: ParsingConfig = Field(default_factory=ParsingConfig)  # type: ignore[valid-type]

    @property
    def repairs_off(self) -> list[str]:
        """The IR repairs normalized_documents leaves out."""
        return self.parsing.repairs_off

    def router(self, parser: str) -> ParserRouter:
        return _router(parser, self.parsing.docling_artifacts_path, self.parsing.parse_workers)


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
    """An embedding model: the bundled MiniLM by default, a local folder or cached name otherwise."""

    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)  # type: ignore[valid-type]
    kind: str = EmbeddingSpec.model_fields["kind"].default
    batch_size: int = EmbeddingSpec.model_fields["batch_size"].default
    vector_store: str | None = None  # folder of vectors by text (embedding/reuse.py); None: off

    @property
    def model(self) -> str:
        """The model as the settings name it."""
        return self.embedding.embedding_model

    def spec(self) -> EmbeddingSpec:
        return EmbeddingSpec(
            model=self.model,
            kind=self.kind,
            batch_size=self.batch_size,
            runtime=self.embedding.embedding_runtime,
        )

    def vectors_version(self) -> str | None:
        """The runtime's part of the vectors' version (None on FlagEmbedding); loads no model."""
        chosen, _ = effective_spec(self.spec())
        return vectors_version(chosen, resolve_model(chosen))

    def load(self) -> tuple[Embedder, str | None]:
        """(embedder, fallback reason or None): the bundled model stands in for a missing one."""
        return select_embedder(self.spec())

    def embedded_part(self) -> EmbeddedPart:
        """What of a chunk is embedded."""
        return self.embedding.embedded_text

    def store(self, embedder: Embedder) -> VectorStore | None:
        """The stored vectors of `embedder`'s model, or None when none are kept."""
        if self.vector_store is None:
            return None
        return VectorStore(Path(self.vector_store), embedder.vectors_identity)

    def token_counter(self) -> TokenizerCounter:
        resolved, _ = select_model(self.spec())
        return _token_counter(str(resolved.path))


@functools.cache
def _token_counter(model_dir: str) -> TokenizerCounter:
    return TokenizerCounter.from_model_dir(Path(model_dir))


class LLMResource(ConfigurableResource):
    """Any OpenAI-compatible endpoint. The key is read from the variable named `api_key_env`,
    so it is in no config, metadata or log. Off (structure path only) without `base_url`."""

    endpoint: LLMConfig = Field(default_factory=LLMConfig)  # type: ignore[valid-type]
    # Keys of the resource's own config, where run configs set them; defaults from the group.
    vision_dpi: int = group_field(VisionSettings, "vision_dpi")
    include_picture_tables: bool = group_field(VisionSettings, "include_picture_tables")
    cache_dir: str
    _client: object = PrivateAttr(default=None)

    def settings(self) -> LLMSettings:
        return LLMSettings(**self.endpoint.model_dump())

    def client(self):
        """One client per run (the resource lives for a run): the budget counts per run."""
        if self._client is None and self.settings().enabled:
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
