"""Pydantic rows <-> Arrow tables, so Parquet assets keep their contract's types.

`dict` fields travel as JSON strings (Parquet has no free-form map of mixed
values); everything else maps to its natural Arrow type.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar

import pyarrow as pa
from pydantic import BaseModel

Row = TypeVar("Row", bound=BaseModel)

_SCALARS: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
}


def _strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _arrow_type(annotation: Any) -> pa.DataType:
    annotation = _strip_optional(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return pa.string()
    if annotation is dict or origin is dict:
        return pa.string()
    if origin in (list, tuple):
        (item,) = set(typing.get_args(annotation)) - {Ellipsis}
        return pa.list_(pa.float32() if item is float else _arrow_type(item))
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    raise TypeError(f"no Arrow type for field annotation {annotation!r}")


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    return pa.schema(
        [pa.field(name, _arrow_type(f.annotation)) for name, f in model.model_fields.items()]
    )


def _json_fields(model: type[BaseModel]) -> list[str]:
    return [
        name
        for name, f in model.model_fields.items()
        if (a := _strip_optional(f.annotation)) is dict or typing.get_origin(a) is dict
    ]


def to_arrow(rows: Sequence[BaseModel], model: type[BaseModel]) -> pa.Table:
    json_fields = _json_fields(model)
    records = []
    for row in rows:
        record = row.model_dump(mode="json")
        for name in json_fields:
            record[name] = json.dumps(record[name], ensure_ascii=False, sort_keys=True)
        records.append(record)
    return pa.Table.from_pylist(records, schema=arrow_schema(model))


def to_records(table: pa.Table, model: type[BaseModel]) -> list[dict]:
    """Plain dicts with JSON fields decoded, not validated: what checks inspect."""
    json_fields = _json_fields(model)
    records = table.to_pylist()
    for record in records:
        for name in json_fields:
            if isinstance(record.get(name), str):
                record[name] = json.loads(record[name])
    return records


def from_arrow(table: pa.Table, model: type[Row]) -> list[Row]:
    return [model.model_validate(record) for record in to_records(table, model)]
