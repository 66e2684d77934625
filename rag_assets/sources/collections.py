"""`rag_collections.yaml`: which parser, template and options each document gets, by glob.

    defaults:
      template: auto
    collections:
      - name: specs
        match: ["specs/**/*.pdf"]
        parser: pymupdf
        template: spec
        options: {glossary_pages: "40-45", max_tokens: 384}
      - name: briefings
        match: ["legco/**"]
        template: qa_pairs
        options: {internal_notes: drop}

The first collection whose glob matches a document's path under the inbox
wins; `defaults` (then the runtime settings) fill what it leaves out. An `llm:`
section holds the LLM settings (`base_url`, `model`, `vision_model`,
`max_calls`, ...), under the `RAG_ASSETS_LLM_*` environment variables.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, ValidationError

from rag_assets.errors import ConfigurationError


class CollectionRule(BaseModel, extra="forbid"):
    name: str
    match: list[str]
    parser: str | None = None
    template: str | None = None
    options: dict = Field(default_factory=dict)

    def matches(self, relative_path: str) -> bool:
        # `**/` also matches no folder at all, as in most glob dialects.
        return any(
            fnmatchcase(relative_path, pattern)
            or fnmatchcase(relative_path, pattern.replace("**/", ""))
            for pattern in self.match
        )


class CollectionDefaults(BaseModel, extra="forbid"):
    parser: str | None = None
    template: str | None = None
    options: dict = Field(default_factory=dict)


class CollectionsConfig(BaseModel, extra="forbid"):
    defaults: CollectionDefaults = Field(default_factory=CollectionDefaults)
    collections: list[CollectionRule] = Field(default_factory=list)
    # LLM settings (base_url, model, vision_model, max_calls, ...); the environment overrides them.
    llm: dict = Field(default_factory=dict)


class DocumentPlan(BaseModel):
    """What one document gets, and where each choice came from."""

    collection: str | None  # the matching rule's name, None when only defaults applied
    parser: str
    template: str
    options: dict


def load_collections(path: Path | None) -> CollectionsConfig:
    if path is None or not path.is_file():
        return CollectionsConfig()
    try:
        return CollectionsConfig.model_validate(
            yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        )
    except (yaml.YAMLError, ValidationError) as error:
        raise ConfigurationError(f"{path}: not a valid collections file: {error}") from error


class RuntimeChoices(BaseModel):
    """The settings' part of the decision: defaults under the file, forced choices over it."""

    parser: str = "auto"
    template: str = "semantic"
    options: dict = Field(default_factory=dict)
    force_parser: str | None = None
    force_template: str | None = None


def plan_document(
    config: CollectionsConfig, relative_path: str, runtime: RuntimeChoices
) -> DocumentPlan:
    rule = next((r for r in config.collections if r.matches(relative_path)), None)
    defaults = config.defaults
    return DocumentPlan(
        collection=rule.name if rule else None,
        parser=runtime.force_parser or (rule and rule.parser) or defaults.parser or runtime.parser,
        template=runtime.force_template
        or (rule and rule.template)
        or defaults.template
        or runtime.template,
        options={**runtime.options, **defaults.options, **(rule.options if rule else {})},
    )
