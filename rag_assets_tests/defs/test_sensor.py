"""The inbox sensor on a real instance: adds, re-runs and removes partitions and their rows."""

import json

import pytest
from dagster import DagsterInstance

from rag_assets.defs.assets import CHECKED, PIPELINE
from rag_assets.defs.build import build_defs
from rag_assets.defs.dagster_private import AssetCheckExecutionRecordStatus, PartitionKeyFilter
from rag_assets.defs.landing import CHECKED_PART, LANDING_PART, PART_TAG
from rag_assets.index.store import MilvusIndex
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.sources.inbox import scan_inbox, sha256_file
from rag_assets.sources.keys import partition_key_for
from rag_assets.sources.watch import TrackedFile
from rag_assets_tests.support.sensors import (
    batch_split_tick,
    checked_part_tick,
    inbox_sensor_tick,
    requested_documents,
    run_as_the_daemon,
)

pytestmark = pytest.mark.slow


def _project(tmp_path):
    """Settings over `tmp_path`, their definitions, an ephemeral instance and an empty inbox."""
    settings = Settings(data_dir=tmp_path)
    settings.inbox_dir.mkdir(parents=True)
    return settings, build_defs(settings), DagsterInstance.ephemeral(), settings.inbox_dir


def test_sensor_adds_reruns_and_removes(tmp_path):
    settings, defs, instance, inbox = _project(tmp_path)
    (inbox / "a.md").write_text("# Alpha\n\nThe alpha document.\n")
    (inbox / "b.md").write_text("# Beta\n\nThe beta document.\n")
    key_a, key_b = partition_key_for("a.md"), partition_key_for("b.md")

    result = inbox_sensor_tick(defs, instance, None)
    cursor = result.cursor
    # Neighbours needing the same runs: one batch's run carries both.
    (batch,) = result.run_requests
    assert requested_documents(instance, batch) == [key_a, key_b]
    assert set(instance.get_dynamic_partitions("documents")) == {key_a, key_b}

    result = inbox_sensor_tick(defs, instance, cursor)
    cursor = result.cursor
    assert result.run_requests == []

    (inbox / "a.md").write_text("# Alpha\n\nThe alpha document, edited.\n")
    result = inbox_sensor_tick(defs, instance, cursor)
    cursor = result.cursor
    assert [r.partition_key for r in result.run_requests] == [key_a]
    assert result.run_requests[0].run_key.startswith(f"{key_a}:")

    # b is indexed, then its file disappears: its rows and its partition go with it.
    (outcome,) = ingest(settings, [inbox / "b.md"], instance=instance)
    assert outcome.success and outcome.doc_id == key_b
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        (collection,) = index.list_collections()
        assert index.count_document(collection, key_b) == outcome.chunks > 0
    (inbox / "b.md").unlink()
    result = inbox_sensor_tick(defs, instance, cursor)
    cursor = result.cursor
    assert result.run_requests == []
    assert set(instance.get_dynamic_partitions("documents")) == {key_a}
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        assert index.count_document(collection, key_b) == 0
    assert not (settings.raw_dir / key_b).exists()


def test_sensor_does_not_rerun_what_the_cli_already_ingested(tmp_path):
    settings = Settings(data_dir=tmp_path)
    defs = build_defs(settings)
    instance = DagsterInstance.ephemeral()
    source = tmp_path / "guide.md"
    source.write_text("# Guide\n\nAlready ingested by the CLI.\n")
    (outcome,) = ingest(settings, [source], instance=instance)
    assert outcome.success
    result = inbox_sensor_tick(defs, instance, None)
    assert result.run_requests == []


def test_the_sensor_cursor_is_short_and_one_of_the_earlier_form_reruns_nothing(tmp_path):
    settings, defs, instance, inbox = _project(tmp_path)
    for name in ("a.md", "b.md"):
        (inbox / name).write_text(f"# {name}\n\nThe document {name}.\n")
    first = inbox_sensor_tick(defs, instance, None)
    assert len(first.cursor) < 80 and json.loads(first.cursor)["files"] == 2
    assert inbox_sensor_tick(defs, instance, first.cursor).run_requests == []

    # A cursor holding every file itself, as the sensor kept it before: read once, no re-run.
    earlier = {
        f.relative_path: TrackedFile(
            key=f.partition_key, size=f.size, mtime_ns=f.mtime_ns, sha256=sha256_file(f.path)
        ).model_dump()
        for f in scan_inbox(inbox)
    }
    migrated = inbox_sensor_tick(defs, instance, json.dumps(earlier))
    assert migrated.run_requests == []
    assert json.loads(migrated.cursor)["manifest"] == json.loads(first.cursor)["manifest"]


def test_sensor_refuses_hand_added_keys_and_deletes_nothing_outside(tmp_path):
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    defs = build_defs(settings)
    instance = DagsterInstance.ephemeral()
    victims = [tmp_path / "victim", tmp_path / "abs"]
    for victim in victims:
        victim.mkdir()
        (victim / "keep.txt").write_text("keep")
    settings.inbox_dir.mkdir(parents=True)
    (settings.inbox_dir / "a.md").write_text("# Alpha\n\nThe alpha document.\n")
    (settings.inbox_dir / ".draft.md").write_text("# hidden")
    hostile = [
        "../../victim",
        "../../victim-1a2b3c4d",
        str(tmp_path / "abs"),
        "..%2F..%2Fvictim",
        "\uff0e\uff0e\uff0fvictim",
    ]
    instance.add_dynamic_partitions("documents", hostile)

    result = inbox_sensor_tick(defs, instance, None)
    assert [r.partition_key for r in result.run_requests] == [partition_key_for("a.md")]
    assert set(instance.get_dynamic_partitions("documents")) == {partition_key_for("a.md")}
    for victim in victims:
        assert (victim / "keep.txt").read_text() == "keep"


def test_a_file_raw_documents_refuses_gets_a_run_of_raw_documents_alone(tmp_path):
    settings, defs, instance, inbox = _project(tmp_path)
    (inbox / "good.md").write_text("# Good\n\nA document that lands.\n")
    (inbox / "broken.pdf").write_text("plain text under a .pdf name\n")

    result = inbox_sensor_tick(defs, instance, None)
    selections = {
        r.partition_key: [k.to_user_string() for k in r.asset_selection]
        for r in result.run_requests
    }
    # Its run fails in raw_documents; no step below, nor its checks, is planned in it. The
    # other's run is its landing part: the checked steps follow once it succeeded.
    assert selections == {
        partition_key_for("good.md"): PIPELINE[: PIPELINE.index(CHECKED[0])],
        partition_key_for("broken.pdf"): ["raw_documents"],
    }
    assert {r.tags[PART_TAG] for r in result.run_requests} == {LANDING_PART}


def test_a_document_failing_before_its_checks_has_them_not_run_in_the_daemon(tmp_path):
    settings, defs, instance, inbox = _project(tmp_path)
    (inbox / "good.md").write_text("# Good\n\n" + "A document that lands and is checked. " * 20)
    # A PDF by its header that no parser can open: it fails in parsed_documents.
    (inbox / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + b"damaged in transit\n" * 40)
    good, corrupt = partition_key_for("good.md"), partition_key_for("corrupt.pdf")

    cursor = checked_part_tick(defs, instance, None).cursor  # the sensors start
    split_cursor = batch_split_tick(defs, instance, None).cursor
    (batch,) = inbox_sensor_tick(defs, instance, None).run_requests
    assert sorted(requested_documents(instance, batch)) == sorted([good, corrupt])
    # The batch's landing run fails naming the corrupt file: each runs alone.
    assert not run_as_the_daemon(defs, instance, batch).success
    split = batch_split_tick(defs, instance, split_cursor)
    assert sorted(r.partition_key for r in split.run_requests) == sorted([good, corrupt])
    landing = {r.partition_key: run_as_the_daemon(defs, instance, r) for r in split.run_requests}
    assert landing[good].success and not landing[corrupt].success
    assert batch_split_tick(defs, instance, split.cursor).run_requests == []
    # Only the landing run that succeeded is followed, by one run of the checked steps.
    followed = checked_part_tick(defs, instance, cursor)
    (request,) = followed.run_requests
    assert request.partition_key == good
    assert [k.to_user_string() for k in request.asset_selection] == CHECKED
    assert request.tags[PART_TAG] == CHECKED_PART

    assert run_as_the_daemon(defs, instance, request).success
    assert checked_part_tick(defs, instance, followed.cursor).run_requests == []

    check_keys = [
        k
        for k in defs.resolve_asset_graph().asset_check_keys
        if k.asset_key.to_user_string() in CHECKED
    ]
    storage = instance.event_log_storage
    # The failed document's checks were never planned: nothing reads them failed.
    assert (
        storage.get_latest_asset_check_execution_by_key(
            check_keys, partition_filter=PartitionKeyFilter(key=corrupt)
        )
        == {}
    )
    passed = storage.get_latest_asset_check_execution_by_key(
        check_keys, partition_filter=PartitionKeyFilter(key=good)
    )
    assert set(passed) == set(check_keys)
    assert {r.status for r in passed.values()} == {AssetCheckExecutionRecordStatus.SUCCEEDED}
