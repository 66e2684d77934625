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
from rag_assets.sources.template_picks import TemplatePick, picked_for


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
    # Why `template` replaced `auto`: the collection's pick by evaluation (template_picks.py).
    picked: str | None = None


# A collections file is a few rules: these bound what a hostile or broken one can cost (an alias
# bomb expands exponentially when validated, a deep nesting exhausts the recursion).
MAX_FILE_BYTES = 1_048_576
MAX_ALIASES = 100
MAX_DEPTH = 32
MAX_EXPANDED_NODES = 100_000


def load_collections(path: Path | None) -> CollectionsConfig:
    """The file's rules, or ConfigurationError in one line naming the file, line and key."""
    if path is None or not path.is_file():
        return CollectionsConfig()
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ConfigurationError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ConfigurationError(f"{path}: not UTF-8 text ({error.reason})") from None
    try:
        _check_events(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None and _expanded_size(node, {}) > MAX_EXPANDED_NODES:
            raise ValueError(f"its aliases expand to more than {MAX_EXPANDED_NODES:,} values")
        data = yaml.safe_load(text) or {}
    except ValueError as error:
        raise ConfigurationError(f"{path}: {error}") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}: " if mark else ""
        raise ConfigurationError(f"{path}: {where}{error.problem or error}") from None
    except yaml.YAMLError as error:
        raise ConfigurationError(f"{path}: {' '.join(str(error).split())}") from None
    try:
        return CollectionsConfig.model_validate(data)
    except ValidationError as error:
        detail = error.errors()[0]
        line = _line_of(node, detail["loc"])
        key = ".".join(str(part) for part in detail["loc"]) or "(top level)"
        where = f"line {line}, " if line else ""
        raise ConfigurationError(f"{path}: {where}{key}: {detail['msg']}") from None


def _check_events(text: str) -> None:
    """Aliases and nesting counted on the event stream, before anything is built."""
    aliases = depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise ValueError(f"more than {MAX_ALIASES} YAML aliases")
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1
                raise ValueError(f"line {line}: nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values the node stands for once every alias is expanded; an alias is the same
    node object as its anchor, so each is counted once and the walk stays linear."""
    if id(node) not in sizes:
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        sizes[id(node)] = 1 + sum(_expanded_size(child, sizes) for child in children)
    return sizes[id(node)]


def _line_of(node: yaml.Node | None, loc: tuple) -> int | None:
    """The 1-based line of the value at `loc` (keys and list indexes) in the composed file."""
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == part), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


class RuntimeChoices(BaseModel):
    """The settings' part of the decision: defaults under the file, forced choices over it."""

    parser: str = "auto"
    template: str = "semantic"
    options: dict = Field(default_factory=dict)
    force_parser: str | None = None
    force_template: str | None = None


def plan_document(
    config: CollectionsConfig,
    relative_path: str,
    runtime: RuntimeChoices,
    picks: dict[str, TemplatePick] | None = None,
) -> DocumentPlan:
    rule = next((r for r in config.collections if r.matches(relative_path)), None)
    defaults = config.defaults
    collection = rule.name if rule else None
    template = (
        runtime.force_template or (rule and rule.template) or defaults.template or runtime.template
    )
    pick = picked_for(picks or {}, collection) if template == "auto" else None
    return DocumentPlan(
        collection=collection,
        parser=runtime.force_parser or (rule and rule.parser) or defaults.parser or runtime.parser,
        template=pick.template if pick else template,
        options={**runtime.options, **defaults.options, **(rule.options if rule else {})},
        picked=pick.reason() if pick else None,
    )
