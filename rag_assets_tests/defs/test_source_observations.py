"""The observed sources on a real instance: each observation shows what it read (a file's path,
size and sha256; a document's settings), and the steps that read a source record its real
version in their provenance, which moves when the file or the setting does."""

import hashlib
from types import SimpleNamespace

import pytest
import yaml
from dagster import AssetKey, AssetObservation, AssetRecordsFilter
from dagster._core.instance_for_test import instance_for_test

from rag_assets.defs import change_reports
from rag_assets.defs.build import build_defs
from rag_assets.defs.observed_sources import (
    OBSERVED_PER_DOCUMENT,
    PER_DOCUMENT,
    SHARED,
    Reading,
    latest_versions,
)
from rag_assets.defs.resources import MilvusResource
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.sources.inbox import sha256_file
from rag_assets_tests.support.workspace import code_location, graphql

pytestmark = pytest.mark.slow

EMPTY = hashlib.sha256(b"").hexdigest()  # what Dagster 1.13 alone records for observed parents


def _latest(instance, asset: str, key: str, observed: bool):
    records_filter = AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[key])
    fetch = instance.fetch_observations if observed else instance.fetch_materializations
    (record,) = fetch(records_filter, limit=1).records
    return record.event_log_entry


def _input_version(instance, asset: str, source: str, key: str) -> str:
    tags = _latest(instance, asset, key, observed=False).tags
    return tags[f"dagster/input_data_version/{source}"]


@pytest.fixture
def ingested(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pumps.md").write_text("# Pumps\n\n## Priming\n\nPrime the pump before starting.\n")
    # On storage a code location can read too, as the UI's GraphQL does.
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        (outcome,) = ingest(settings, [docs], instance=instance)
        assert outcome.success, outcome.summary()
        yield settings, docs, instance, outcome.doc_id


def _metadata(entry) -> dict:
    return {name: value.value for name, value in entry.asset_observation.metadata.items()}


def test_observations_carry_their_values_and_steps_record_real_versions(ingested):
    settings, docs, instance, key = ingested
    inbox_file = settings.inbox_dir / "docs" / "pumps.md"

    shown = _metadata(_latest(instance, "inbox_files", key, observed=True))
    assert shown == {
        "path": "docs/pumps.md",
        "size_bytes": inbox_file.stat().st_size,
        "sha256": sha256_file(inbox_file),
    }
    template = _metadata(_latest(instance, "template_settings", key, observed=True))
    assert template["template"] == settings.template and "tokenizer" in template
    assert "parser" in _metadata(_latest(instance, "parser_settings", key, observed=True))

    file_version = _input_version(instance, "raw_documents", "inbox_files", key)
    template_version = _input_version(instance, "document_chunks", "template_settings", key)
    parser_version = _input_version(instance, "parsed_documents", "parser_settings", key)
    assert EMPTY not in {file_version, template_version, parser_version}

    # A new template for the document: its chunks record the new settings' version.
    settings.collections_path.write_text(
        yaml.safe_dump(
            {"collections": [{"name": "p", "match": ["**/pumps.md"], "template": "fixed"}]}
        )
    )
    (again,) = ingest(settings, [docs], instance=instance)
    assert again.success and "document_chunks" in again.ran
    assert _metadata(_latest(instance, "template_settings", key, observed=True))["template"] == (
        "fixed"
    )
    assert _input_version(instance, "document_chunks", "template_settings", key) not in {
        template_version,
        EMPTY,
    }
    # An edited file: its fixed copy records the new file's version.
    (docs / "pumps.md").write_text("# Pumps\n\n## Priming\n\nPrime the pump twice.\n")
    (edited,) = ingest(settings, [docs], instance=instance)
    assert edited.success and edited.ran[0] == "raw_documents"
    assert _metadata(_latest(instance, "inbox_files", key, observed=True))["sha256"] == (
        sha256_file(inbox_file)
    )
    assert _input_version(instance, "raw_documents", "inbox_files", key) not in {
        file_version,
        EMPTY,
    }


def test_observing_in_the_ui_records_the_same_values(ingested):
    """`Observe` on the sources, a run of the asset job as the UI launches it: the same values
    and versions, on new observations."""
    settings, _, instance, key = ingested
    before = _latest(instance, "inbox_files", key, observed=True)
    job = build_defs(settings).resolve_implicit_global_asset_job_def()
    for source in ("inbox_files", "index_settings"):
        result = job.execute_in_process(instance=instance, asset_selection=[AssetKey(source)])
        assert result.success
    after = _latest(instance, "inbox_files", key, observed=True)
    assert after.timestamp > before.timestamp
    assert _metadata(after) == _metadata(before)
    assert after.tags["dagster/data_version"] == before.tags["dagster/data_version"]
    # Recorded after the observation, with the same values, as a report records it.
    recorded = _latest(instance, "inbox_files", key, observed=False)
    assert recorded.timestamp >= after.timestamp and recorded.run_id == after.run_id
    assert recorded.asset_materialization.metadata == after.asset_observation.metadata
    index = instance.fetch_observations(AssetKey("index_settings"), limit=1).records[0]
    assert {"uri", "analyzer", "english_analyzer", "model"} <= set(_metadata(index.event_log_entry))


def test_the_english_analyzer_is_shown_but_does_not_version_the_index_settings():
    """A collection keeps the English analyzer it was made with: another setting re-indexes
    nothing, so it leaves the index settings' version (and every index partition) as it was."""

    def read(**index) -> Reading:
        settings = Settings(**index)
        resources = SimpleNamespace(
            milvus=MilvusResource.of(settings),
            embedding=SimpleNamespace(model=settings.embedding_model),
        )
        return SHARED["index_settings"](resources)

    made, without = read(english_analyzer="jieba-english"), read(english_analyzer="none")
    assert (made.values["english_analyzer"], without.values["english_analyzer"]) == (
        "jieba-english",
        "none",
    )
    assert made.version == without.version
    assert read(text_analyzer="standard").version != made.version


# What the UI asks of an asset's node (the graph's status and partitions rows, the Partitions
# tab) and of a partition (its page's events: dagster-webapp's AssetPartitionDetailQuery).
SOURCE_NODE = """
query ($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) { ... on AssetNode {
    isObservable isMaterializable description
    metadataEntries { label ... on TextMetadataEntry { text } }
    assetObservations(limit: 1) { partition }
    partitionStats { numMaterialized numPartitions }
    assetPartitionStatuses { ... on DefaultPartitionStatuses { materializedPartitions } }
  } }
}
"""
PARTITION_EVENTS = """
query ($key: AssetKeyInput!, $partition: String!) {
  assetOrError(assetKey: $key) { ... on Asset {
    assetEventHistory(partitions: [$partition], limit: 1000,
                      eventTypeSelectors: [MATERIALIZATION, OBSERVATION, FAILED_TO_MATERIALIZE]) {
      results { __typename
        ... on ObservationEvent { partition tags { key value } metadataEntries { ...Shown } }
        ... on MaterializationEvent { partition tags { key value } metadataEntries { ...Shown } }
      }
    }
  } }
}
fragment Shown on MetadataEntry {
  label ... on TextMetadataEntry { text } ... on IntMetadataEntry { intValue }
}
"""


def test_the_ui_shows_per_document_sources_observed_with_their_values(ingested, monkeypatch):
    """Dagster's UI reads a source "Observed" from its latest observation, while its partition
    status counts materializations: each document's new version of a source is recorded as its
    materialization too, so the graph and the Partitions tab show every document there, and its
    partition's events show the values and data version read."""
    settings, _, instance, key = ingested
    with code_location(instance, settings.data_dir, monkeypatch) as context:
        for source in PER_DOCUMENT:
            asset = {"path": [source]}
            node = graphql(context, SOURCE_NODE, {"key": asset})["assetNodeOrError"]
            assert (node["isObservable"], node["isMaterializable"]) == (True, False)
            assert node["assetObservations"] == [{"partition": key}]  # the graph's "Observed"
            assert node["partitionStats"] == {"numMaterialized": 1, "numPartitions": 1}
            assert node["assetPartitionStatuses"] == {"materializedPartitions": [key]}
            assert "Missing" not in node["description"]
            assert node["metadataEntries"] == [{"label": "status", "text": OBSERVED_PER_DOCUMENT}]

            history = graphql(context, PARTITION_EVENTS, {"key": asset, "partition": key})
            events = history["assetOrError"]["assetEventHistory"]["results"]
            kinds = [e["__typename"] for e in events]
            assert sorted(kinds) == ["MaterializationEvent", "ObservationEvent"], kinds
            [version] = latest_versions(instance, source, [key]).values()
            for latest in events:
                tags = {t["key"]: t["value"] for t in latest["tags"]}
                assert latest["partition"] == key and tags["dagster/data_version"] == version
                assert latest["metadataEntries"] == events[0]["metadataEntries"] != [], source
            if source == "inbox_files":
                shown = {
                    e["label"]: e.get("text", e.get("intValue")) for e in latest["metadataEntries"]
                }
                assert shown == {
                    "path": "docs/pumps.md",
                    "size_bytes": (settings.inbox_dir / "docs" / "pumps.md").stat().st_size,
                    "sha256": version,
                }


def test_a_folder_observed_before_sources_were_recorded_gets_them_and_runs_nothing(
    tmp_path, monkeypatch
):
    """A data folder whose documents' sources were observed only (an earlier release): the next
    ingest records each document's sources as materialized with their values, and, nothing
    having changed, runs no step."""
    settings = Settings(data_dir=tmp_path / "data")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pumps.md").write_text("# Pumps\n\n## Priming\n\nPrime the pump before starting.\n")
    observed_only = change_reports.source_events
    monkeypatch.setattr(
        change_reports,
        "source_events",
        lambda *args: [e for e in observed_only(*args) if isinstance(e, AssetObservation)],
    )
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        (first,) = ingest(settings, [docs], instance=instance)
        assert first.success and first.ran
        key = first.doc_id
        for source in PER_DOCUMENT:
            assert not instance.fetch_materializations(AssetKey(source), limit=1).records

        monkeypatch.undo()
        (again,) = ingest(settings, [docs], instance=instance)
        assert again.success and not again.ran, again.summary()
        for source in PER_DOCUMENT:
            entry = _latest(instance, source, key, observed=False)
            observed = _latest(instance, source, key, observed=True)
            assert entry.tags["dagster/data_version"] == observed.tags["dagster/data_version"]
            assert entry.asset_materialization.metadata == observed.asset_observation.metadata
        (third,) = ingest(settings, [docs], instance=instance)
        assert not third.ran
        assert len(instance.fetch_materializations(AssetKey("inbox_files"), limit=5).records) == 1
