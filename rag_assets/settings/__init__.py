"""Runtime settings shared by the CLI and the Dagster definitions, read from the environment.

Each group of `Settings` is its own model (groups.py); docs/configuration.md is rendered from
them (`python -m rag_assets.settings_doc`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import Field

from rag_assets.settings.base import EnvSettings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.settings.groups import (
    ChunkingSettings,
    EmbeddingSettings,
    IndexSettings,
    ParsingSettings,
    RerankSettings,
    ScheduleSettings,
    StorageSettings,
)
from rag_assets.settings.limits import DocumentLimits

Group = TypeVar("Group", bound=EnvSettings)

GROUPS = (
    StorageSettings,
    ParsingSettings,
    ChunkingSettings,
    EmbeddingSettings,
    IndexSettings,
    RerankSettings,
    ScheduleSettings,
)


class Settings(
    ScheduleSettings,
    RerankSettings,
    IndexSettings,
    EmbeddingSettings,
    ChunkingSettings,
    ParsingSettings,
    StorageSettings,
):
    """One place for every path and default; `from_env` is what `dagster dev` and the CLI use."""

    # Set by CLI flags: win over rag_collections.yaml, where `parser`/`template` only fill gaps.
    force_parser: str | None = None
    force_template: str | None = None
    fusion: FusionSettings = Field(default_factory=FusionSettings)
    # What one document may expand to or cost once read: pages, archive size, elements.
    limits: DocumentLimits = Field(default_factory=DocumentLimits)

    @classmethod
    def from_env(cls, data_dir: str | Path | None = None) -> Settings:
        values = {name: value for group in GROUPS for name, value in group.env_values().items()}
        from_environment = values.pop("data_dir", None)  # the argument wins over the variable
        root = data_dir or from_environment or "data"
        return cls(
            **values,
            data_dir=Path(root).expanduser().resolve(),
            fusion=FusionSettings.from_env(),
            limits=DocumentLimits.from_env(),
        )

    def group(self, group: type[Group]) -> Group:
        """One of the groups these settings are made of, with their values."""
        return group.model_validate(self.model_dump(include=set(group.model_fields)))

    @property
    def milvus(self) -> dict[str, object]:
        """Where the index is and how its BM25 is built: what `MilvusIndex` takes."""
        return {
            "uri": self.resolved_milvus_uri,
            "token": self.milvus_token,
            **self.group(IndexSettings).model_dump(),
        }

    @property
    def inbox_dir(self) -> Path:
        return self.data_dir / "inbox"

    @property
    def raw_dir(self) -> Path:
        return self.data_dir / "raw"

    @property
    def collections_path(self) -> Path:
        return self.collections_file or self.data_dir / "rag_collections.yaml"

    @property
    def dagster_home(self) -> Path:
        return self.data_dir / "dagster"

    @property
    def receipt_path(self) -> Path:
        """The last ingest's receipt (runner/receipt.py): what it saw, read without Dagster."""
        return self.dagster_home / "ingest-receipt.json"

    @property
    def evaluation_dir(self) -> Path:
        return self.eval_dir or self.data_dir / "eval"

    @property
    def asset_storage_root(self) -> str:
        return self.storage_root or str(self.data_dir / "assets")

    @property
    def resolved_milvus_uri(self) -> str:
        return self.milvus_uri or str(self.data_dir / "milvus.db")
