"""Removing a document: every file and cache entry it left under the data folder, its index rows.

The inbox sensor (file removed, partition deleted in the UI) and `rag-assets remove` call this;
the Dagster side (runs, partition) is `rag_assets.defs.lifecycle`. What a document leaves:

- its file in the inbox and its fixed copy (`raw/<doc id>/`);
- each asset's partition file (`<storage root>/<asset>/<doc id>.json|.parquet`, and temporary
  files a killed write left beside it);
- its cropped figures (`figures/<doc id>/`);
- its template-choice cache entries (`cache/templates`: keyed by the document's content, which
  holds its doc id, so no other document shares them);
- the vision answers for its table images (`cache/vision`, keyed by image, model and prompt),
  except those another live document's tables use too: the same image in two documents is one
  entry, and removing one must not make the other call the model again;
- the last ingest's receipt, when it names the document;
- its rows in every collection of the index; a Milvus Lite file is then rewritten so the rows'
  text leaves the disk (`purge_deleted_rows`).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from upath import UPath

from rag_assets.contracts.tabular import from_arrow
from rag_assets.index.store import MilvusIndex
from rag_assets.profile.llm import ProfileCache
from rag_assets.settings import Settings
from rag_assets.sources.inbox import scan_folder
from rag_assets.sources.keys import check_partition_key, earlier_partition_keys_for
from rag_assets.sources.paths import inside
from rag_assets.storage import read_documents, read_parquet
from rag_assets.tables.cache import VisionCache
from rag_assets.tables.models import TableMarkdown
from rag_assets.templates.choice_cache import ChoiceCache
from rag_assets.templates.select import document_sha256

FIGURES = "figures"
CACHE = "cache"
# The inbox sensor's manifests of the files it tracks (`sources.watch`), beside the instance
# whose sensor cursor names them.
INBOX_MANIFESTS = "inbox-manifests"


@dataclass(frozen=True)
class DataFolder:
    """Where a data folder keeps what documents leave behind."""

    inbox: Path
    raw: Path
    figures: Path
    cache: Path
    storage_root: str
    receipt: Path  # the last ingest's receipt, which lists the documents it saw
    inbox_manifests: Path
    follow_symlinks: bool = False

    @classmethod
    def of(cls, settings: Settings) -> DataFolder:
        return cls(
            inbox=settings.inbox_dir,
            raw=settings.raw_dir,
            figures=settings.data_dir / FIGURES,
            cache=settings.data_dir / CACHE,
            storage_root=settings.asset_storage_root,
            receipt=settings.receipt_path,
            inbox_manifests=settings.dagster_home / INBOX_MANIFESTS,
            follow_symlinks=settings.inbox_follow_symlinks,
        )

    def keys_with_copies(self) -> set[str]:
        """The documents with a fixed copy: every one whose `raw_documents` ever ran."""
        return {p.name for p in self.raw.iterdir() if p.is_dir()} if self.raw.is_dir() else set()


@dataclass
class Removed:
    doc_id: str
    source_paths: list[str] = field(default_factory=list)  # its inbox files, when it had any
    files: int = 0  # files and folders deleted
    index_rows: int = 0
    cache_entries: int = 0
    shared_cache_entries: int = 0  # vision answers kept for another live document

    def summary(self) -> str:
        name = ", ".join(self.source_paths) or self.doc_id
        kept = (
            f", {self.shared_cache_entries} shared cache entries kept"
            if self.shared_cache_entries
            else ""
        )
        return (
            f"removed {name} ({self.doc_id}): {self.index_rows} index rows, {self.files} files, "
            f"{self.cache_entries} cache entries{kept}"
        )


def remove_documents(
    folder: DataFolder,
    doc_ids: Sequence[str],
    live: Iterable[str],
    index: MilvusIndex | None,
    keep_inbox_files: bool = False,
) -> list[Removed]:
    """Delete everything these documents left; `live` are the documents that stay (for shared
    caches). `keep_inbox_files`: the files stay, stored again under their current keys. Each
    listing (the inbox, the stored files, the caches) is read once and the index written once
    a collection, whatever the count."""
    for doc_id in doc_ids:
        check_partition_key(doc_id)
    removed = {doc_id: Removed(doc_id) for doc_id in doc_ids}
    others = set(live) - set(doc_ids)
    # Caches first: which entries are a document's is read from its stored files.
    _remove_cache_entries(folder, removed, others)
    if not keep_inbox_files:
        _remove_inbox_files(folder, removed)
    _remove_stored_files(folder, removed)
    if index is not None:
        for name in index.list_collections():
            for doc_id, rows in index.delete_documents(name, list(removed)).items():
                removed[doc_id].index_rows += rows
    return list(removed.values())


def _remove_inbox_files(folder: DataFolder, removed: dict[str, Removed]) -> None:
    for file in scan_folder(folder.inbox, folder.follow_symlinks).files:
        # A document still stored under a key its path had before is its file's too.
        for key in {file.partition_key, *earlier_partition_keys_for(file.relative_path)}:
            if key in removed:
                file.path.unlink(missing_ok=True)
                _prune_empty_parents(file.path.parent, folder.inbox)
                removed[key].source_paths.append(file.relative_path)
                removed[key].files += 1
                break


def _remove_stored_files(folder: DataFolder, removed: dict[str, Removed]) -> None:
    """The fixed copies, figures and partition files, and the receipt when it names one."""
    for doc_id, found in removed.items():
        for place in (folder.raw, folder.figures):
            target = inside(place, doc_id)
            if target.exists():
                shutil.rmtree(target)
                found.files += 1
    for doc_id, count in _remove_partition_files(UPath(folder.storage_root), set(removed)).items():
        removed[doc_id].files += count
    if folder.receipt.is_file():
        receipt = folder.receipt.read_text(encoding="utf-8")
        named = [doc_id for doc_id in removed if doc_id in receipt]
        if named:
            folder.receipt.unlink()
            removed[named[0]].files += 1


# The IO managers' files and their temporaries (`<file>.<32 hex>.tmp`), by the key they hold.
_PARTITION_FILE = re.compile(r"(?P<key>.+)\.(?:json|parquet)(?:\.[0-9a-f]{32}\.tmp)?")


def _remove_partition_files(root: UPath, doc_ids: set[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    if not root.exists():
        return counts
    for asset in root.iterdir():
        if not asset.is_dir():
            continue
        for path in asset.iterdir():
            match = _PARTITION_FILE.fullmatch(path.name)
            if match and match.group("key") in doc_ids:
                path.unlink()
                counts[match.group("key")] = counts.get(match.group("key"), 0) + 1
    return counts


def _prune_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and folder.is_relative_to(root) and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _vision_keys(storage_root: str, doc_id: str) -> set[str]:
    path = UPath(storage_root) / "table_markdown" / f"{doc_id}.parquet"
    if not path.exists():
        return set()
    return {row.cache_key for row in from_arrow(read_parquet(path), TableMarkdown)}


def _remove_cache_entries(
    folder: DataFolder, removed: dict[str, Removed], others: set[str]
) -> None:
    vision = VisionCache(folder.cache / "vision")
    mine = {
        doc_id: {k for k in _vision_keys(folder.storage_root, doc_id) if vision.path(k).exists()}
        for doc_id in removed
    }
    if any(mine.values()):
        shared = {k for other in others for k in _vision_keys(folder.storage_root, other)}
        for doc_id, keys in mine.items():
            removed[doc_id].shared_cache_entries += len(keys & shared)
            for key in keys - shared:
                if vision.path(key).exists():
                    vision.path(key).unlink()
                    removed[doc_id].cache_entries += 1
    documents, _ = read_documents(folder.storage_root, list(removed))
    by_content = {document_sha256(doc): doc.doc_id for doc in documents}
    for path, entry in ChoiceCache(folder.cache / "templates").entries():
        owner = entry.doc_id if entry.doc_id in removed else by_content.get(entry.document_sha256)
        if owner is not None:
            path.unlink(missing_ok=True)
            removed[owner].cache_entries += 1
    for path, profile in ProfileCache(folder.cache / "profiles").entries():
        if profile.doc_id in removed:
            path.unlink(missing_ok=True)
            removed[profile.doc_id].cache_entries += 1
