"""A data folder ingested under an earlier key scheme (the folder first, `docs--canary.md-<hash>`;
the name then its folder, `canary.md--docs-<hash>`) is read by this code as it is, and ingesting
again (the CLI, or the inbox sensor and its run) stores each document once, under its key now."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rag_assets.cli import main
from rag_assets.defs.build import build_defs
from rag_assets.instance import open_instance
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.sources.keys import earlier_partition_keys_for, partition_key_for
from rag_assets_tests.support.sensors import inbox_sensor_tick, requested_documents

pytestmark = pytest.mark.slow

CANARY = "zebra-finch-canary-7731"
DOCS = {
    "canary.md": f"# Aviary notes\n\n## Birds\n\nThe {CANARY} sings at dawn in the aviary.\n",
    "other.md": "# Pump notes\n\n## Pumps\n\nThe pump station lifts water to the reservoir.\n",
}
NEW = {name: partition_key_for(f"docs/{name}") for name in DOCS}
OLD = {name: earlier_partition_keys_for(f"docs/{name}")[0] for name in DOCS}  # folder first
NAME_THEN_FOLDER = {name: earlier_partition_keys_for(f"docs/{name}")[1] for name in DOCS}


def _ingest_with_keys(root: Path, keys: dict[str, str]) -> Path:
    """Both documents ingested with an earlier key function in every place that mints keys."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    settings = Settings.from_env(root / "data")
    with pytest.MonkeyPatch.context() as patch:
        for module in ("rag_assets.sources.inbox", "rag_assets.runner.ingest"):
            patch.setattr(f"{module}.partition_key_for", lambda path: keys[Path(path).name])
        outcomes = ingest(settings, [docs])
    assert all(o.success for o in outcomes)
    assert sorted(open_instance(settings).get_dynamic_partitions("documents")) == sorted(
        keys.values()
    )
    return settings.data_dir


@pytest.fixture(scope="module")
def earlier(tmp_path_factory) -> Path:
    return _ingest_with_keys(tmp_path_factory.mktemp("earlier"), OLD)


def _copy(earlier: Path, tmp_path: Path) -> Settings:
    shutil.copytree(earlier, tmp_path / "data")
    return Settings.from_env(tmp_path / "data")


def _canary_hits(settings: Settings, capsys) -> list[str]:
    capsys.readouterr()
    main(["query", "--data-dir", str(settings.data_dir), "--json", "--top-k", "20", CANARY])
    hits = json.loads(capsys.readouterr().out)["hits"]
    return [h["doc_id"] for h in hits if CANARY in h["text"]]


def _stored_keys(settings: Settings) -> set[str]:
    stored = {p.name for p in settings.raw_dir.iterdir()}
    for asset in Path(settings.asset_storage_root).iterdir():
        stored |= {p.name.split(".json")[0].split(".parquet")[0] for p in asset.iterdir()}
    return stored


def test_earlier_keys_are_read_then_ingest_stores_each_document_once(earlier, tmp_path, capsys):
    settings = _copy(earlier, tmp_path)
    _read_then_ingest_stores_each_document_once(settings, OLD, capsys)


def test_keys_of_the_name_then_its_folder_are_read_then_retired(tmp_path, capsys):
    data = _ingest_with_keys(tmp_path / "earlier", NAME_THEN_FOLDER)
    _read_then_ingest_stores_each_document_once(Settings.from_env(data), NAME_THEN_FOLDER, capsys)


def _read_then_ingest_stores_each_document_once(
    settings: Settings, old: dict[str, str], capsys
) -> None:
    # Read as it is: by path, by section, by query, before anything runs again.
    assert main(["chunks", "--data-dir", str(settings.data_dir), "docs/canary.md"]) == 0
    assert CANARY in capsys.readouterr().out
    assert main(["section", "--data-dir", str(settings.data_dir), "Birds"]) == 0
    assert CANARY in capsys.readouterr().out
    assert set(_canary_hits(settings, capsys)) == {old["canary.md"]}

    outcomes = ingest(settings, [settings.inbox_dir / "docs"])

    assert all(o.success for o in outcomes)
    assert sorted(o.doc_id for o in outcomes) == sorted(NEW.values())
    instance = open_instance(settings)
    assert sorted(instance.get_dynamic_partitions("documents")) == sorted(NEW.values())
    hits = _canary_hits(settings, capsys)
    assert hits and set(hits) == {NEW["canary.md"]}
    # The earlier key's index rows, stored files and fixed copy are gone; the files stay.
    assert _stored_keys(settings) == set(NEW.values())
    assert sorted(p.name for p in (settings.inbox_dir / "docs").iterdir()) == sorted(DOCS)
    assert main(["section", "--data-dir", str(settings.data_dir), "Birds"]) == 0
    assert CANARY in capsys.readouterr().out
    # Again: nothing runs, nothing doubles.
    assert all(not o.ran for o in ingest(settings, [settings.inbox_dir / "docs"]))
    assert sorted(instance.get_dynamic_partitions("documents")) == sorted(NEW.values())


def test_the_sensor_keeps_an_earlier_key_until_its_document_is_indexed_again(
    earlier, tmp_path, capsys
):
    settings = _copy(earlier, tmp_path)
    defs = build_defs(settings)
    instance = open_instance(settings)

    first = inbox_sensor_tick(defs, instance, None)
    requested = [k for r in first.run_requests for k in requested_documents(instance, r)]
    assert sorted(requested) == sorted(NEW.values())
    # Still searchable under the earlier key while the runs under the key now are pending.
    assert set(instance.get_dynamic_partitions("documents")) == {*OLD.values(), *NEW.values()}
    assert set(_canary_hits(settings, capsys)) == {OLD["canary.md"]}

    job = defs.resolve_job_def("ingest_documents")
    for key in requested:
        result = job.execute_in_process(instance=instance, partition_key=key)
        assert result.success

    second = inbox_sensor_tick(defs, instance, first.cursor)
    assert second.run_requests == []
    assert sorted(instance.get_dynamic_partitions("documents")) == sorted(NEW.values())
    assert set(_canary_hits(settings, capsys)) == {NEW["canary.md"]}
    assert _stored_keys(settings) == set(NEW.values())
    assert sorted(p.name for p in (settings.inbox_dir / "docs").iterdir()) == sorted(DOCS)


def test_a_document_under_an_earlier_key_is_removed_with_its_file(earlier, tmp_path, capsys):
    settings = _copy(earlier, tmp_path)
    assert main(["remove", "--data-dir", str(settings.data_dir), "docs/canary.md"]) == 0
    assert open_instance(settings).get_dynamic_partitions("documents") == [OLD["other.md"]]
    assert sorted(p.name for p in (settings.inbox_dir / "docs").iterdir()) == ["other.md"]
    assert _canary_hits(settings, capsys) == []
