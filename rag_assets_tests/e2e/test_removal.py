"""Removing a document leaves no trace of it: a canary string is in no file of the data folder
and no read command shows it, whichever way it was removed (its file taken out of the inbox, the
CLI, its partition deleted in the UI); the other document still answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from rag_assets.cli import main
from rag_assets.contracts.tabular import to_arrow
from rag_assets.defs.build import build_defs
from rag_assets.instance import open_instance
from rag_assets.profile.llm import CachedProfile, ProfileAnswer, ProfileCache
from rag_assets.removal import DataFolder, remove_documents
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.sources.keys import partition_key_for
from rag_assets.tables.cache import CachedAnswer, VisionCache
from rag_assets.tables.models import TableMarkdown
from rag_assets.templates.choice_cache import CachedGuess, ChoiceCache
from rag_assets_tests.support.sensors import inbox_sensor_tick

CANARY = "zebra-finch-canary-7731"
CANARY_DOC = f"""# Aviary notes

## Birds

The {CANARY} sings at dawn in the aviary beside the river, louder than any other finch.

## Cages

Each cage is cleaned weekly by the keeper, who logs the {CANARY} weight every Monday.
"""
OTHER_DOC = """# Pump notes

## Pumps

The pump station lifts water forty metres to the reservoir on the ridge, day and night.
"""
CANARY_KEY = partition_key_for("docs/canary.md")
OTHER_KEY = partition_key_for("docs/other.md")


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    """A data folder holding both documents, plus what other paths write for the canary: a
    template choice cache entry, a profile cache entry and a cropped figure."""
    root = tmp_path_factory.mktemp("canary")
    docs = root / "docs"
    docs.mkdir()
    (docs / "canary.md").write_text(CANARY_DOC)
    (docs / "other.md").write_text(OTHER_DOC)
    settings = Settings.from_env(root / "data")
    assert all(o.success for o in ingest(settings, [docs]))
    folder = DataFolder.of(settings)
    ChoiceCache(folder.cache / "templates").put(
        CachedGuess(
            document_sha256="0" * 64,
            model="m",
            selector_version="1",
            templates=["semantic"],
            template="semantic",
            confidence=0.9,
            reason=f"notes on the {CANARY}",
            doc_id=CANARY_KEY,
        )
    )
    ProfileCache(folder.cache / "profiles").put(
        CachedProfile(
            text_sha256="0" * 64,
            model="m",
            prompt_version="1",
            answer=ProfileAnswer(title=f"Notes on the {CANARY}"),
            doc_id=CANARY_KEY,
        )
    )
    (folder.figures / CANARY_KEY).mkdir(parents=True)
    (folder.figures / CANARY_KEY / "fig-1.png").write_bytes(CANARY.encode())
    return settings.data_dir


def _files_with_canary(data_dir: Path) -> list[str]:
    return sorted(
        str(p.relative_to(data_dir))
        for p in data_dir.rglob("*")
        if p.is_file() and CANARY.encode() in p.read_bytes()
    )


def _tick(settings: Settings, instance, cursor):
    return inbox_sensor_tick(build_defs(settings), instance, cursor)


def _remove_by_inbox(settings: Settings) -> None:
    instance = open_instance(settings)
    cursor = _tick(settings, instance, None).cursor  # the sensor knows both files
    (settings.inbox_dir / "docs" / "canary.md").unlink()
    assert _tick(settings, instance, cursor).run_requests == []


def _remove_by_cli(settings: Settings) -> None:
    assert main(["remove", "--data-dir", str(settings.data_dir), "docs/canary.md"]) == 0


def _remove_by_partition_delete(settings: Settings) -> None:
    # As the UI's "delete partition" does; the sensor has never seen the file (CLI ingest).
    instance = open_instance(settings)
    instance.delete_dynamic_partition("documents", CANARY_KEY)
    result = _tick(settings, instance, None)
    assert result.run_requests == []  # its inbox file went too: it is not added again
    assert set(instance.get_dynamic_partitions("documents")) == {OTHER_KEY}


@pytest.mark.slow
@pytest.mark.parametrize(
    "remove",
    [_remove_by_inbox, _remove_by_cli, _remove_by_partition_delete],
    ids=["inbox", "cli", "partition"],
)
def test_a_removed_document_leaves_no_trace(ingested, tmp_path, capsys, remove):
    data_dir = tmp_path / "data"
    shutil.copytree(ingested, data_dir)
    assert {"milvus.db", "inbox/docs/canary.md"} <= set(_files_with_canary(data_dir))
    settings = Settings.from_env(data_dir)

    remove(settings)

    assert _files_with_canary(data_dir) == []
    assert open_instance(settings).get_dynamic_partitions("documents") == [OTHER_KEY]
    capsys.readouterr()
    for command in [
        ["chunks"],
        ["query", CANARY],
        ["query", "--json", "finch sings at dawn in the aviary"],
        ["section", "Birds"],
        ["text", "finch aviary keeper"],
        ["figures", "finch"],
        ["glossary", "finch"],
        ["table-rows", "finch"],
        ["answer", f"What does the {CANARY} do at dawn?"],
    ]:
        main([command[0], "--data-dir", str(data_dir), *command[1:]])
        shown = capsys.readouterr()
        assert CANARY not in shown.out + shown.err, command
        assert CANARY_KEY not in shown.out + shown.err, command
    assert main(["chunks", "--data-dir", str(data_dir), CANARY_KEY]) == 1
    # The other document still answers.
    assert main(["query", "--data-dir", str(data_dir), "pump station reservoir"]) == 0
    assert "docs/other.md" in capsys.readouterr().out
    assert main(["chunks", "--data-dir", str(data_dir), "docs/other.md"]) == 0
    assert "forty metres" in capsys.readouterr().out


def _tables(doc_id: str, keys: list[str]) -> pa.Table:
    rows = [
        TableMarkdown(
            doc_id=doc_id,
            element_index=i,
            page_start=1,
            page_end=1,
            markdown="| a |\n|---|\n| 1 |",
            method="vision",
            cache_key=key,
        )
        for i, key in enumerate(keys)
    ]
    return to_arrow(rows, TableMarkdown)


def test_vision_answers_another_live_document_uses_are_kept(tmp_path):
    import pyarrow.parquet as pq

    folder = DataFolder.of(Settings(data_dir=tmp_path))
    mine, ours, theirs = "a.pdf-1a2b3c4d", "b.pdf-5e6f7a8b", "a.pdf-1a2b3c4d.pdf-0badcafe"
    tables = Path(folder.storage_root) / "table_markdown"
    tables.mkdir(parents=True)
    pq.write_table(_tables(mine, ["k-own", "k-shared"]), tables / f"{mine}.parquet")
    pq.write_table(_tables(ours, ["k-shared"]), tables / f"{ours}.parquet")
    # A key that starts like the removed one is another document's: its files stay.
    pq.write_table(_tables(theirs, []), tables / f"{theirs}.parquet")
    (tables / f"{mine}.parquet.{'0' * 32}.tmp").write_bytes(b"half")
    cache = VisionCache(folder.cache / "vision")
    for key in ["k-own", "k-shared"]:
        cache.path(key).parent.mkdir(parents=True, exist_ok=True)
        cache.path(key).write_text(
            CachedAnswer(
                image_sha256=key, model="m", prompt_version="v", answer="|a|"
            ).model_dump_json()
        )

    (removed,) = remove_documents(folder, [mine], {ours, theirs}, None)
    assert (removed.cache_entries, removed.shared_cache_entries, removed.files) == (1, 1, 2)
    assert not cache.path("k-own").exists() and cache.path("k-shared").exists()
    assert sorted(p.name for p in tables.iterdir()) == [f"{theirs}.parquet", f"{ours}.parquet"]

    (removed,) = remove_documents(folder, [ours], {theirs}, None)
    assert (removed.cache_entries, removed.shared_cache_entries) == (1, 0)
    assert not cache.path("k-shared").exists()
