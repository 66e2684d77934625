"""BM25's k1 and b: settings that reach Milvus Lite's engine and are recorded with the collection."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from rag_assets.defs.data_versions import digest
from rag_assets.defs.observed_sources import SHARED
from rag_assets.defs.resources import EmbeddingResource, IndexConfig, MilvusResource
from rag_assets.errors import ConfigurationError
from rag_assets.index.rows import IndexRow
from rag_assets.index.schema import ANALYZERS, SCHEMA_PROPERTY, SCHEMA_VERSION, create_collection
from rag_assets.index.store import MilvusIndex
from rag_assets.settings import Settings

MODEL = "bm25-params-model"
# A short entry naming the term once, and a long passage naming it three times.
TEXTS = {
    "glossary": "Debounce: a filter.",
    "features": "Debounce inputs: the controller applies a debounce filter to card detect and a "
    "second debounce filter to write protect, with timing set by the clock divider register "
    "and the status register reporting every change after the filter has settled for the "
    "configured interval of the host controller.",
    "other": "Solar panels convert sunlight into electricity.",
}


def rows() -> list[IndexRow]:
    # BM25 alone is under test: every row gets the same dense vector.
    return [
        IndexRow(chunk_id=name, doc_id="doc", text=text, dense=[1.0, 0.0])
        for name, text in TEXTS.items()
    ]


def ranking(index: MilvusIndex) -> list[str]:
    collection = index.ensure_collection(MODEL, 2, False)
    index.replace_document(collection, "doc", rows())
    return [hit.chunk_id for hit in index.bm25_search(collection, "debounce", top_k=3)]


def test_b_reaches_the_engine(tmp_path: Path) -> None:
    uri = str(tmp_path / "milvus.db")
    with MilvusIndex(uri, collection_prefix="full", bm25_b=1.0) as full:
        assert ranking(full) == ["glossary", "features"]  # length normalisation favours brevity
    with MilvusIndex(uri, collection_prefix="none", bm25_b=0.0) as none:
        assert ranking(none) == ["features", "glossary"]  # term frequency alone
    with MilvusIndex(uri, collection_prefix="none", bm25_b=0.0) as reopened:
        collection = reopened.collection_name(MODEL, 2)
        hits = reopened.bm25_search(collection, "debounce", top_k=3)
        assert [h.chunk_id for h in hits] == ["features", "glossary"]  # kept with the index


def test_k1_reaches_the_engine(tmp_path: Path) -> None:
    # With k1 = 0 a term counts once however often it occurs; b = 0 leaves length aside.
    uri = str(tmp_path / "milvus.db")
    with MilvusIndex(uri, collection_prefix="flat", bm25_k1=0.0, bm25_b=0.0) as flat:
        collection = flat.ensure_collection(MODEL, 2, False)
        flat.replace_document(collection, "doc", rows())
        hits = flat.bm25_search(collection, "debounce", top_k=3)
        assert len(hits) == 2
        assert hits[0].score == pytest.approx(hits[1].score)


def test_a_collection_made_with_other_parameters_is_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "milvus.db")
    with MilvusIndex(uri) as index:
        index.ensure_collection(MODEL, 2, False)
    for changed, message in [
        ({"bm25_b": 0.4}, "rag.bm25_b: has '0.75', wanted '0.4'"),
        ({"bm25_k1": 0.9}, "rag.bm25_k1: has '1.2', wanted '0.9'"),
    ]:
        with MilvusIndex(uri, **changed) as other, pytest.raises(ConfigurationError, match=message):
            other.ensure_collection(MODEL, 2, False)


@pytest.mark.parametrize(("k1", "b"), [(3.5, 0.5), (-0.1, 0.5), (1.2, 1.1), (1.2, -0.5)])
def test_values_outside_the_engine_ranges_are_refused(tmp_path: Path, k1: float, b: float) -> None:
    with pytest.raises(ConfigurationError, match="outside"):
        MilvusIndex(str(tmp_path / "milvus.db"), bm25_k1=k1, bm25_b=b)
    with pytest.raises(ValidationError):
        Settings(data_dir=tmp_path, bm25_k1=k1, bm25_b=b)


def test_settings_read_the_parameters_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAG_ASSETS_BM25_K1", "0.9")
    monkeypatch.setenv("RAG_ASSETS_BM25_B", "0.4")
    settings = Settings.from_env(tmp_path)
    assert (settings.bm25_k1, settings.bm25_b) == (0.9, 0.4)
    monkeypatch.setenv("RAG_ASSETS_BM25_B", "2")
    with pytest.raises(ValidationError, match="bm25_b"):
        Settings.from_env(tmp_path)


def test_the_parameters_are_part_of_the_index_settings_version() -> None:
    def version(k1: float, b: float) -> str:
        resources = SimpleNamespace(
            milvus=MilvusResource(uri="milvus.db", index=IndexConfig(bm25_k1=k1, bm25_b=b)),
            embedding=EmbeddingResource(),
        )
        return SHARED["index_settings"](resources).version

    assert len({version(1.2, 0.75), version(1.2, 0.4), version(0.9, 0.75)}) == 3
    # The engine's own defaults keep the version collections had before these were settings.
    assert version(1.2, 0.75) == digest(
        {"uri": "milvus.db", "analyzer": "jieba", "model": "bundled:all-MiniLM-L6-v2"}
    )


def test_a_collection_made_before_the_parameters_were_recorded_has_the_engines_own(
    tmp_path: Path,
) -> None:
    uri = str(tmp_path / "milvus.db")
    with MilvusIndex(uri) as index:
        name = index.collection_name(MODEL, 2)
        # What earlier code recorded: everything but k1 and b.
        create_collection(
            index._client,
            name,
            2,
            False,
            {
                SCHEMA_PROPERTY: SCHEMA_VERSION,
                "rag.model_name": MODEL,
                "rag.dim": "2",
                "rag.has_sparse": "false",
                "rag.text_analyzer": json.dumps(ANALYZERS["jieba"], sort_keys=True),
            },
            index.text_analyzer,
            index.bm25_k1,
            index.bm25_b,
        )
        assert index.ensure_collection(MODEL, 2, False) == name
    with (
        MilvusIndex(uri, bm25_b=0.4) as other,
        pytest.raises(ConfigurationError, match="rag.bm25_b: has '0.75', wanted '0.4'"),
    ):
        other.ensure_collection(MODEL, 2, False)
