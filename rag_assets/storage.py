"""Read stored asset partitions back outside Dagster (the CLI), from the same UPath root."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from rag_assets.contracts.chunk import ChunkRow
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.contracts.tabular import from_arrow
from rag_assets.settings import Settings
from rag_assets.sources.inbox import InboxFile, scan_inbox
from rag_assets.sources.keys import (
    earlier_partition_keys_for,
    is_valid_partition_key,
    partition_key_for,
)
from rag_assets.tables.models import TableMarkdown
from rag_assets.tables.structure import with_table_markdown


def read_parquet(path: UPath) -> pa.Table:
    """A Parquet file, read here and parsed from memory Arrow owns. Given a Python file object
    (or an fsspec file system such as s3fs), Arrow's reader may still close it on a pool thread
    after returning; if that thread needs the interpreter while it shuts down, the process
    aborts after its output (rc 134, "terminate called without an active exception";
    apache/arrow#34314, #50482)."""
    sink = pa.BufferOutputStream()
    sink.write(path.read_bytes())  # copied into Arrow's memory: nothing of Python's is left to free
    return pq.read_table(pa.BufferReader(sink.getvalue()))


def asset_dir(settings: Settings, asset: str) -> UPath:
    return UPath(settings.asset_storage_root) / asset


def _has_chunks(settings: Settings, key: str) -> bool:
    return (asset_dir(settings, "document_chunks") / f"{key}.parquet").exists()


def stored_key(settings: Settings, relative_path: str) -> str:
    """The key an inbox file's document is stored under: its key, or one its path had under
    an earlier scheme while the document is stored only under that (until it is ingested
    again, `rag_assets.defs.lifecycle.retire_superseded`)."""
    key = partition_key_for(relative_path)
    if _has_chunks(settings, key):
        return key
    earlier = earlier_partition_keys_for(relative_path)
    return next((k for k in earlier if _has_chunks(settings, k)), key)


def resolve_doc_id(settings: Settings, document: str) -> str:
    """A doc id as given, or the id of an inbox file named by path, relative path or file name."""
    return resolve_doc_ids(settings, [document])[0]


def resolve_doc_ids(settings: Settings, documents: list[str]) -> list[str]:
    """`resolve_doc_id` for each of `documents`, the inbox listed once for all of them (a
    removal of 1,000 documents from 10,000 listed it a thousand times)."""
    inbox = settings.inbox_dir.resolve()
    listed: list[InboxFile] | None = None
    resolved = []
    for document in documents:
        # Only a key rag_assets minted is joined to a path: "../x" must not read outside.
        if is_valid_partition_key(document) and _has_chunks(settings, document):
            resolved.append(document)
            continue
        candidate = Path(document).resolve()
        if candidate.is_relative_to(inbox):
            resolved.append(stored_key(settings, candidate.relative_to(inbox).as_posix()))
            continue
        if listed is None:
            listed = scan_inbox(settings.inbox_dir)
        resolved.append(_named_file(settings, listed, document))
    return resolved


def _named_file(settings: Settings, listed: list[InboxFile], document: str) -> str:
    matches = [
        stored_key(settings, f.relative_path)
        for f in listed
        if f.relative_path == document or f.path.name == Path(document).name
    ]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LookupError(f"{document!r} names {len(matches)} documents; pass a doc id: {matches}")
    raise LookupError(f"no ingested document matches {document!r}")


def read_chunks(settings: Settings, document: str | None = None) -> list[ChunkRow]:
    folder = asset_dir(settings, "document_chunks")
    if document is None:
        paths = sorted(folder.glob("*.parquet")) if folder.exists() else []
    else:
        path = folder / f"{resolve_doc_id(settings, document)}.parquet"
        if not path.exists():
            raise LookupError(f"{document!r} has no stored chunks yet; run `rag-assets ingest`")
        paths = [path]
    chunks: list[ChunkRow] = []
    for path in paths:
        chunks.extend(from_arrow(read_parquet(path), ChunkRow))
    return chunks


def read_documents(
    storage_root: str, doc_ids: Iterable[str]
) -> tuple[list[StandardizedDocument], list[str]]:
    """Each document's stored IR with its tables' chosen markdown, as document_chunks reads it;
    and the ids with no stored IR (not normalized yet, or failed)."""
    root = UPath(storage_root)
    documents: list[StandardizedDocument] = []
    missing: list[str] = []
    for doc_id in doc_ids:
        path = root / "normalized_documents" / f"{doc_id}.json"
        if not path.exists():
            missing.append(doc_id)
            continue
        doc = StandardizedDocument.model_validate_json(path.read_text(encoding="utf-8"))
        tables = root / "table_markdown" / f"{doc_id}.parquet"
        if tables.exists():
            doc = with_table_markdown(doc, from_arrow(read_parquet(tables), TableMarkdown))
        documents.append(doc)
    return documents, missing
