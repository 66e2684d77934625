"""Per-partition storage on UPath (a local folder by default, `s3://...` works the same).

Each asset picks its format by IO manager key: pydantic records as JSON,
row sets as Parquet. Files live at `<root>/<asset>/<partition>.<ext>`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from dagster import (
    ConfigurableIOManagerFactory,
    InputContext,
    OutputContext,
    UPathIOManager,
)
from pydantic import BaseModel
from upath import UPath

from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.defs.recovery import tag_run_with_process
from rag_assets.index.rows import IndexReport
from rag_assets.parsers.base import ParsedDocument
from rag_assets.sources.keys import check_partition_key
from rag_assets.sources.raw import RawDocument
from rag_assets.storage import read_parquet

# The record each JSON-stored asset holds.
RECORDS: dict[str, type[BaseModel]] = {
    "raw_documents": RawDocument,
    "parsed_documents": ParsedDocument,
    "normalized_documents": StandardizedDocument,
    "vector_index": IndexReport,
}


class _PartitionSafe(UPathIOManager):
    def make_safe_partition_path(self, base_path: UPath, partition: str) -> UPath:
        # Refuses keys not minted by rag_assets (the UI can add any), so no path escapes the root.
        return base_path / check_partition_key(partition)

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        # A backfill range's step returns {partition key: value}; each lands at its own path.
        if context.has_asset_partitions and isinstance(obj, dict):
            for key, path in self._get_paths_for_partitions(context).items():
                path.parent.mkdir(parents=True, exist_ok=True)
                self.dump_to_path(context, obj[key], path)
            return
        super().handle_output(context, obj)


def _temporary(path: UPath) -> UPath:
    # One name per writer: two runs writing one partition at once never share a temporary file.
    return path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")


class PydanticJsonIOManager(_PartitionSafe):
    extension = ".json"

    def dump_to_path(self, context: OutputContext, obj: BaseModel, path: UPath) -> None:
        tmp = _temporary(path)
        tmp.write_text(obj.model_dump_json(indent=1), encoding="utf-8")
        tmp.rename(path)  # readers never see half a file

    def load_from_path(self, context: InputContext, path: UPath) -> Any:
        data = json.loads(path.read_text(encoding="utf-8"))
        # By the asset it was stored for: a batch's inputs are untyped {partition key: record}.
        model = RECORDS.get(context.asset_key.to_user_string(), context.dagster_type.typing_type)
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model.model_validate(data)
        return data


class ParquetIOManager(_PartitionSafe):
    extension = ".parquet"

    def dump_to_path(self, context: OutputContext, obj: pa.Table, path: UPath) -> None:
        tmp = _temporary(path)
        with tmp.open("wb") as handle:
            pq.write_table(obj, handle)
        tmp.rename(path)

    def load_from_path(self, context: InputContext, path: UPath) -> pa.Table:
        return read_parquet(path)


class JsonIOManagerFactory(ConfigurableIOManagerFactory):
    base_path: str

    def create_io_manager(self, context) -> PydanticJsonIOManager:
        # Every asset stores through this or the Parquet manager: set up in each run's worker.
        tag_run_with_process(context)
        return PydanticJsonIOManager(base_path=UPath(self.base_path))


class ParquetIOManagerFactory(ConfigurableIOManagerFactory):
    base_path: str

    def create_io_manager(self, context) -> ParquetIOManager:
        tag_run_with_process(context)
        return ParquetIOManager(base_path=UPath(self.base_path))
