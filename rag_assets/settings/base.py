"""The base of every settings model: `RAG_ASSETS_*` variables read through pydantic-settings.

Constructing a model reads nothing from the environment, so code and tests get exactly the
values they pass; `from_env` reads it. A variable counts only when it holds something once
its surrounding blanks are dropped, and only under its documented (capitalised) name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

ENV_PREFIX = "RAG_ASSETS_"


class _SetVariables(EnvSettingsSource):
    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {
            name.lower(): value.strip()
            for name, value in os.environ.items()
            if name.isupper() and value.strip()
        }


class EnvSettings(BaseSettings):
    # Unknown keys are ignored, as a plain pydantic model does (pydantic-settings forbids them).
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, populate_by_name=True, extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only what the caller passes: the environment is read by `from_env` alone.
        return (init_settings,)

    @classmethod
    def env_fields(cls) -> list[str]:
        """The fields a variable sets (all but those marked `NOT_FROM_ENV`)."""
        return [
            name
            for name, field in cls.model_fields.items()
            if not (
                isinstance(field.json_schema_extra, dict)
                and field.json_schema_extra.get("not_from_env")
            )
        ]

    @classmethod
    def env_values(cls) -> dict[str, Any]:
        """The fields the environment sets, by field name, as the variables spell them."""
        by_alias = {
            field.validation_alias: name
            for name, field in cls.model_fields.items()
            if isinstance(field.validation_alias, str)
        }
        values = _SetVariables(cls)()
        values = {by_alias.get(key, key): value for key, value in values.items()}
        return {name: values[name] for name in cls.env_fields() if name in values}

    @classmethod
    def from_env(cls) -> Self:
        """The model with the environment's values, defaults for the rest."""
        return cls(**cls.env_values())

    @classmethod
    def env_name(cls, field: str) -> str:
        alias = cls.model_fields[field].validation_alias
        prefix = cls.model_config.get("env_prefix", "")
        return alias if isinstance(alias, str) else f"{prefix}{field}".upper()

    @classmethod
    def documented_default(cls, field: str) -> str:
        """The default as the configuration reference shows it."""
        info: FieldInfo = cls.model_fields[field]
        extra = info.json_schema_extra
        if isinstance(extra, dict) and "shown_default" in extra:
            return str(extra["shown_default"])
        return _shown(info.get_default(call_default_factory=True))


def _shown(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, list | tuple):
        return f"`{','.join(map(str, value))}`" if value else "unset"
    return f"`{value}`"


# `json_schema_extra` of a field no variable sets.
NOT_FROM_ENV = {"not_from_env": True}


def shown(default: str) -> dict[str, str]:
    """`json_schema_extra` for a default that is computed or depends on the data folder."""
    return {"shown_default": default}
