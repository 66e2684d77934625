"""The embedding wrapper on the real bundled model (all-MiniLM-L6-v2, 384-d), offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from rag_assets.embedding.models import (
    FALLBACK_SETTING,
    Embedder,
    EmbeddingSpec,
    load_embedder,
    model_languages,
    resolve_model,
)
from rag_assets.errors import ConfigurationError

TEXTS = [
    "The Host Control Register enables interrupts.",
    "Tenants must give thirty days written notice before ending the lease.",
    "Cats are small domesticated mammals often kept as pets.",
]


def test_bundled_model_resolves_to_the_wheel_folder() -> None:
    resolved = resolve_model(EmbeddingSpec())
    assert resolved.source == "bundled"
    assert resolved.name == "all-MiniLM-L6-v2"
    assert (resolved.path / "config.json").is_file()
    assert resolved.kind == "flag"
    assert resolved.pooling == "mean"  # read from the folder's 1_Pooling/config.json


def test_local_folder_and_bge_m3_auto_detection(tmp_path: Path) -> None:
    bundled = resolve_model(EmbeddingSpec()).path
    assert resolve_model(EmbeddingSpec(model=str(bundled))).source == "local"

    folder = tmp_path / "my-bge-m3"
    folder.symlink_to(bundled, target_is_directory=True)
    resolved = resolve_model(EmbeddingSpec(model=str(folder)))
    assert (resolved.source, resolved.kind, resolved.name) == ("local", "bge-m3", "my-bge-m3")
    assert "bge-m3" in resolved.kind_reason
    assert resolve_model(EmbeddingSpec(model=str(folder), pooling="cls")).pooling == "cls"


def test_hub_name_resolves_from_the_local_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Hugging Face cache laid out as a download leaves it, holding the bundled files.
    import huggingface_hub.constants

    repo = tmp_path / "models--BAAI--bge-m3"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    (repo / "snapshots").mkdir()
    (repo / "snapshots" / "0123abcd").symlink_to(resolve_model(EmbeddingSpec()).path)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))

    resolved = resolve_model(EmbeddingSpec(model="BAAI/bge-m3"))
    assert (resolved.source, resolved.name, resolved.kind) == ("hub-cache", "BAAI/bge-m3", "bge-m3")
    assert (resolved.path / "config.json").is_file()


def test_missing_hub_model_names_the_fallback() -> None:
    with pytest.raises(ConfigurationError) as err:
        resolve_model(EmbeddingSpec(model="rag-assets-tests/no-such-model"))
    message = str(err.value)
    assert "rag-assets-tests/no-such-model" in message
    assert "missing" in message
    assert FALLBACK_SETTING in message


@pytest.mark.parametrize(
    ("name", "kind", "languages"),
    [
        ("all-MiniLM-L6-v2", "flag", ("en",)),
        ("BAAI/bge-small-en-v1.5", "flag", ("en",)),
        ("BAAI/bge-m3", "bge-m3", ("*",)),
        ("my-model", "bge-m3", ("*",)),  # the BGE-M3 code path is for a multilingual model
        ("intfloat/multilingual-e5-small", "flag", ("*",)),
        ("BAAI/bge-small-zh-v1.5", "flag", ("zh", "en")),
    ],
)
def test_model_languages_by_name(name: str, kind: str, languages: tuple[str, ...]) -> None:
    assert model_languages(name, kind)[0] == languages


def test_model_languages_of_a_folder_by_name_or_setting(tmp_path: Path) -> None:
    assert resolve_model(EmbeddingSpec()).languages == ("en",)
    folder = tmp_path / "paraphrase-multilingual-MiniLM"
    folder.symlink_to(resolve_model(EmbeddingSpec()).path, target_is_directory=True)
    assert resolve_model(EmbeddingSpec(model=str(folder))).languages == ("*",)
    declared = resolve_model(EmbeddingSpec(languages=("en", "zh")))
    assert declared.languages == ("en", "zh") and "set explicitly" in declared.notes[-1]


def test_unknown_bundled_model_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=FALLBACK_SETTING):
        resolve_model(EmbeddingSpec(model="bundled:bge-small"))


def test_vectors_are_384_d_finite_and_normalized(embedder: Embedder) -> None:
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.dimension == 384
    assert not embedder.has_sparse
    assert embedder.languages == ("en",)
    batch = embedder.encode_documents(TEXTS)
    assert batch.dense.shape == (3, 384)
    assert batch.dense.dtype == np.float32
    assert batch.sparse is None
    assert np.isfinite(batch.dense).all()
    np.testing.assert_allclose(np.linalg.norm(batch.dense, axis=1), 1.0, atol=1e-5)


def test_same_text_gives_the_same_vector_alone_or_in_a_batch(embedder: Embedder) -> None:
    alone = embedder.encode_documents([TEXTS[1]]).dense[0]
    again = embedder.encode_documents([TEXTS[1]]).dense[0]
    in_batch = embedder.encode_documents(TEXTS).dense[1]  # padded next to other lengths
    np.testing.assert_array_equal(alone, again)
    np.testing.assert_allclose(alone, in_batch, atol=1e-5)


def test_a_paraphrase_is_closer_than_an_unrelated_text(embedder: Embedder) -> None:
    docs = embedder.encode_documents(TEXTS).dense
    query = embedder.encode_queries(["felines people keep at home"]).dense[0]
    assert int(np.argmax(docs @ query)) == 2


def test_empty_input_gives_an_empty_batch(embedder: Embedder) -> None:
    assert embedder.encode_documents([]).dense.shape == (0, 384)


def test_the_model_loads_once_per_process(embedder: Embedder) -> None:
    loads = load_embedder.cache_info().misses
    assert load_embedder(EmbeddingSpec()) is embedder
    assert load_embedder(EmbeddingSpec(model=FALLBACK_SETTING, kind="auto")) is embedder
    assert load_embedder.cache_info().misses == loads


def test_bge_m3_code_path_on_the_bundled_folder() -> None:
    # The bundled model has no trained sparse head: its weights are random (seeded here so
    # every text keeps some positive weight), the code path is real.
    torch.manual_seed(2)
    spec = EmbeddingSpec(kind="bge-m3")
    m3 = Embedder(spec, resolve_model(spec))
    assert m3.has_sparse and m3.dimension == 384
    batch = m3.encode_documents(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(batch.dense, axis=1), 1.0, atol=1e-5)
    assert batch.sparse is not None and len(batch.sparse) == 3
    weights = batch.sparse[0]
    assert weights and all(type(k) is int and type(v) is float for k, v in weights.items())
    assert m3.encode_queries(["interrupts"]).sparse is not None
    assert m3.encode_documents([]).sparse == []
