"""Templates by name: the built-ins plus any a package registers under an entry point.

A third-party package declares, in its pyproject.toml:

    [project.entry-points."rag_assets.templates"]
    my_template = "my_package.templates:MyTemplate"

Entry points are loaded on the first lookup, not at import, so a slow or broken
plugin costs nothing until templates are actually needed, and a broken one only
fails lookups of its own name.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from pydantic import ValidationError

from rag_assets.errors import ConfigurationError
from rag_assets.llm import LLMClient
from rag_assets.templates.base import ChunkTemplate, TemplateOptions
from rag_assets.templates.clauses import ClausesTemplate
from rag_assets.templates.fixed import FixedTemplate
from rag_assets.templates.qa_pairs import QAPairsTemplate
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.spec import SpecTemplate

ENTRY_POINT_GROUP = "rag_assets.templates"

_templates: dict[str, type[ChunkTemplate]] = {}
_broken: dict[str, str] = {}  # entry point name -> why it could not be loaded
_entry_points_loaded = False


def register_template(name: str, cls: type[ChunkTemplate]) -> None:
    """Make `cls` available as `name`; re-registering the same class is a no-op."""
    if not (isinstance(cls, type) and issubclass(cls, ChunkTemplate)):
        raise ConfigurationError(f"template {name!r}: {cls!r} is not a ChunkTemplate subclass")
    if cls.name != name:
        # Rows record cls.name; a different registry name would make them untraceable.
        raise ConfigurationError(f"template {name!r}: class {cls.__name__} is named {cls.name!r}")
    existing = _templates.get(name)
    if existing is not None and existing is not cls:
        raise ConfigurationError(
            f"template {name!r} is already registered by {existing.__module__}."
            f"{existing.__qualname__}"
        )
    _templates[name] = cls


def available_templates() -> list[str]:
    _load_entry_points()
    return sorted(_templates)


def template_class(name: str) -> type[ChunkTemplate]:
    _load_entry_points()
    cls = _templates.get(name)
    if cls is not None:
        return cls
    if name in _broken:
        raise ConfigurationError(f"template {name!r} failed to load: {_broken[name]}")
    raise ConfigurationError(
        f"unknown template {name!r}; available: {', '.join(available_templates())}"
    )


def get_template(name: str, options: TemplateOptions | None = None) -> ChunkTemplate:
    return template_class(name)(options)


def build_template(
    name: str, options: Mapping[str, Any] | None = None, llm: LLMClient | None = None
) -> ChunkTemplate:
    """A template with options given as plain values (from settings or rag_collections.yaml),
    and the LLM client when the template uses one."""
    cls = template_class(name)
    try:
        validated = cls.options_class.model_validate(dict(options or {}))
        return cls(validated, llm=llm) if cls.uses_llm else cls(validated)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, d['loc'])) or 'options'}: {d['msg'].removeprefix('Value error, ')}"
            for d in error.errors()
        )
        raise ConfigurationError(f"template {name!r}: invalid options: {problems}") from None


def templates_version() -> str:
    """Every registered template's version: document_chunks' code version."""
    _load_entry_points()
    return ",".join(f"{name}:{cls.version}" for name, cls in sorted(_templates.items()))


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            register_template(entry_point.name, entry_point.load())
        except Exception as error:  # a plugin's import can fail in any way
            _broken[entry_point.name] = f"{entry_point.value}: {type(error).__name__}: {error}"


for _builtin in (SemanticTemplate, FixedTemplate, QAPairsTemplate, ClausesTemplate, SpecTemplate):
    register_template(_builtin.name, _builtin)
