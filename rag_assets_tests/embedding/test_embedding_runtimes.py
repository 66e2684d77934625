"""The ONNX runtimes of the bundled model against FlagEmbedding, the reference, on real models.

Tolerance: every text's ONNX fp32 vector has cosine >= 0.999 with FlagEmbedding's (measured:
>= 0.99999); int8 weights are looser, >= 0.95 per text and >= 0.98 on average (measured: 0.964
and 0.990 on these texts), which is why int8 is not the default.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rag_assets.cores import available_cores
from rag_assets.defs.data_versions import digest
from rag_assets.defs.observed_sources import SHARED
from rag_assets.defs.resources import EmbeddingConfig, EmbeddingResource
from rag_assets.embedding.graph_runtimes import native_bf16
from rag_assets.embedding.models import (
    Embedder,
    EmbeddingSpec,
    load_embedder,
    planned_runtime,
    resolve_model,
)
from rag_assets.embedding.onnx_encoder import length_batches
from rag_assets.embedding.onnx_export import (
    EXPORT_VERSION,
    FP32_FILE,
    INFO_FILE,
    INT8_FILE,
    TOKENIZER_FILE,
    default_cache_dir,
    ensure_exported,
    export_dir,
    folder_digest,
    lock_path,
    read_info,
)
from rag_assets.settings.groups import DEFAULT_RUNTIME, RUNTIMES

# (minimum per text, minimum mean) cosine against FlagEmbedding
TOLERANCE = {
    "openvino-bf16": (0.999, 0.9999),
    "openvino": (0.999, 0.9999),
    "onnx": (0.999, 0.9999),
    "onnx-int8": (0.95, 0.98),
}
INSTRUCTION = "Represent this sentence for searching relevant passages: "


def fixture_texts() -> list[str]:
    """What the templates emit: spec rows, tables, prose, Q&A, Chinese clauses, long and tiny."""
    texts = [
        f"Table {n}: Host Control Register - Offset: 0x{4 * n:02X} - Bits: {n + 7}:{n} - "
        f"Field: IRQ_EN{n} - Description: enables interrupt line {n} when set."
        for n in range(1, 9)
    ]
    texts += [
        "| Field | Bits | Reset |\n|---|---|---|\n| SPEED | 3:0 | 0h |\n| LINK | 7:4 | Fh |",
        "Operator Guide / Maintenance\n\nService the pump every 500 hours and log the pressure.",
        "Q3: May staff claim taxis after 22:00? A: Yes, with the receipt and the trip's purpose.",
        "第十条 建立劳动关系，应当订立书面劳动合同。已建立劳动关系，未同时订立书面劳动合同的，"
        "应当自用工之日起一个月内订立书面劳动合同。",
        "問 A1：遙距工作的申請程序是甚麼？答 A1：員工須於兩星期前以書面向主管提出申請。",
        "远程办公政策 / 设备\n\n公司为远程办公员工提供笔记本电脑和显示器。",
        "OK",
        "",
    ]
    texts.append(" ".join(f"Clause {n} limits liability to direct damages." for n in range(120)))
    texts.append("数据处理者应当采取必要措施保障个人信息安全。" * 60)  # far past 512 tokens
    return texts


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


@pytest.fixture(scope="module")
def reference() -> Embedder:
    return load_embedder(EmbeddingSpec(runtime="flag"))


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["openvino-bf16", "openvino", "onnx", "onnx-int8"])
def test_exported_vectors_agree_with_flagembedding_within_the_tolerance(reference, runtime):
    if runtime == "openvino-bf16" and not native_bf16():
        pytest.skip("this CPU computes no bf16: the runtime runs as `openvino`")
    embedder = load_embedder(EmbeddingSpec(runtime=runtime))
    assert embedder.runtime == runtime and embedder.runtime_fallback is None
    texts = fixture_texts()
    found = cosines(embedder.encode_documents(texts).dense, reference.encode_documents(texts).dense)
    least, mean = TOLERANCE[runtime]
    assert found.min() >= least, dict(zip(texts, found.round(4), strict=True))
    assert found.mean() >= mean


@pytest.mark.slow
def test_queries_take_the_instruction_as_flagembedding_does():
    flag = load_embedder(EmbeddingSpec(runtime="flag", query_instruction=INSTRUCTION))
    onnx = load_embedder(EmbeddingSpec(runtime="onnx", query_instruction=INSTRUCTION))
    queries = ["what do bits 15:8 hold?", "遙距工作怎樣申請？"]
    with_instruction = onnx.encode_queries(queries).dense
    assert cosines(with_instruction, flag.encode_queries(queries).dense).min() >= 0.99
    # The instruction is really there: without it the query vectors move.
    assert cosines(with_instruction, onnx.encode_documents(queries).dense).max() < 0.99


@pytest.mark.slow
def test_the_exported_tokenizer_gives_flagembeddings_tokens(reference):
    from tokenizers import Tokenizer

    folder = ensure_exported(reference.model_dir, reference.name, default_cache_dir())
    exported = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    exported.enable_truncation(512)
    exported.no_padding()  # the bundled tokenizer.json pads to 128; OnnxEncoder pads per batch
    texts = fixture_texts()
    # What FlagModel.encode_single_device tokenizes with.
    expected = reference._model.tokenizer(texts, truncation=True, max_length=512)["input_ids"]
    assert [e.ids for e in exported.encode_batch(texts)] == expected


@pytest.mark.slow
def test_order_of_the_texts_changes_no_vector():
    embedder = load_embedder(EmbeddingSpec(runtime="onnx"))
    texts = [t for t in fixture_texts() if t]
    shuffled = list(np.random.default_rng(0).permutation(len(texts)))
    forward = embedder.encode_documents(texts).dense
    mixed = embedder.encode_documents([texts[i] for i in shuffled]).dense
    np.testing.assert_allclose(mixed, forward[shuffled], atol=1e-5)


def test_batches_by_length_cut_the_padding():
    lengths = [5, 300, 7, 280, 6, 310, 8, 290]
    batches = length_batches(lengths, batch_size=2)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))

    def padded(groups) -> int:
        return sum(len(g) * max(lengths[i] for i in g) for g in groups)

    in_order = [list(range(i, i + 2)) for i in range(0, len(lengths), 2)]
    assert padded(batches) < padded(in_order)
    assert padded(batches) == 2 * (310 + 290 + 8 + 6)  # longest first, neighbours together


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["onnx", "openvino"])
def test_batches_run_side_by_side_one_thread_each(monkeypatch, runtime):
    """As many batches at once as the cores this process may use, each on one thread (ONNX
    Runtime: one intra-op thread, no spinning; OpenVINO: a stream a core, not pinned): the
    vectors are those of one batch after another."""
    embedder = load_embedder(EmbeddingSpec(runtime=runtime, batch_size=4))
    encoder = embedder._onnx
    graph = encoder._graph
    assert encoder._side_by_side == available_cores()
    if runtime == "onnx":
        options = graph.session.get_session_options()
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        assert options.intra_op_num_threads == 1
    else:
        properties = {
            name: graph.compiled.get_property(name)
            for name in ("NUM_STREAMS", "INFERENCE_NUM_THREADS", "ENABLE_CPU_PINNING")
        }
        assert properties == {
            "NUM_STREAMS": available_cores(),
            "INFERENCE_NUM_THREADS": available_cores(),
            "ENABLE_CPU_PINNING": False,
        }

    texts = [f"Valve {i} closes after {'the pressure test ' * (i % 7)}step {i}." for i in range(30)]
    callers: set[str] = set()
    monkeypatch.setattr(
        encoder, "_graph", lambda feed: callers.add(threading.current_thread().name) or graph(feed)
    )
    side_by_side = encoder.encode(texts)
    monkeypatch.setattr(encoder, "_side_by_side", 1)
    one_after_another = encoder.encode(texts)
    assert np.array_equal(side_by_side, one_after_another)
    if available_cores() > 1:
        assert any(name.startswith("embed") for name in callers), callers


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["openvino-bf16", "openvino"])
def test_on_openvino_a_texts_vector_depends_on_the_text_alone(runtime):
    """OpenVINO's results move with a batch's width (bf16 by ~1e-4), so it runs one text a
    call: a text's vector is the same bits alone, among longer texts and in any order."""
    embedder = load_embedder(EmbeddingSpec(runtime=runtime, batch_size=8))
    texts = [t for t in fixture_texts() if t]
    alone = np.stack([embedder.encode_documents([t]).dense[0] for t in texts])
    assert np.array_equal(embedder.encode_documents(texts).dense, alone)
    backwards = embedder.encode_documents(texts[::-1]).dense
    assert np.array_equal(backwards[::-1], alone)


def test_bf16_is_planned_only_where_the_cpu_computes_it(monkeypatch, tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n")
    assert not native_bf16(cpuinfo)
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 avx512_vnni\n")
    assert native_bf16(cpuinfo)
    assert not native_bf16(tmp_path / "none")

    spec = EmbeddingSpec(runtime="openvino-bf16")
    monkeypatch.setattr("rag_assets.embedding.models.native_bf16", lambda: False)
    runtime, why = planned_runtime(spec, resolve_model(spec))
    assert runtime == "openvino"
    assert why == (
        "this CPU computes no bf16 (no avx512_bf16 or amx_bf16); fell back to OpenVINO fp32"
    )
    assert (
        EmbeddingResource(
            embedding=EmbeddingConfig(embedding_runtime="openvino-bf16")
        ).vectors_version()
        == f"openvino/export-{EXPORT_VERSION}"
    )


def test_each_missing_engine_hands_over_to_the_next_runtime(monkeypatch):
    import importlib.util

    present = importlib.util.find_spec
    missing: set[str] = set()
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in missing else present(name, *a)
    )
    monkeypatch.setattr("rag_assets.embedding.models.native_bf16", lambda: True)
    spec = EmbeddingSpec(runtime="openvino-bf16")
    assert planned_runtime(spec, resolve_model(spec)) == ("openvino-bf16", None)
    missing.add("openvino")
    assert planned_runtime(spec, resolve_model(spec)) == (
        "onnx",
        "runtime 'openvino-bf16' needs openvino, which is not installed; "
        "fell back to ONNX Runtime fp32",
    )
    missing.add("onnxruntime")
    runtime, why = planned_runtime(spec, resolve_model(spec))
    assert runtime == "flag" and why.endswith(
        "runtime 'onnx' needs onnxruntime, which is not installed; fell back to FlagEmbedding"
    )


@pytest.mark.slow
def test_an_openvino_that_fails_hands_over_to_onnx_runtime_and_says_so(monkeypatch, caplog):
    def refuse(*args, **kwargs):
        raise RuntimeError("no CPU plugin")

    monkeypatch.setattr("rag_assets.embedding.onnx_encoder.OpenVinoGraph", refuse)
    with caplog.at_level(logging.WARNING, logger="rag_assets.embedding.models"):
        spec = EmbeddingSpec(runtime="openvino")
        embedder = Embedder(spec, resolve_model(spec))
    assert embedder.runtime == "onnx"
    assert embedder.runtime_fallback == (
        "runtime 'openvino' failed: no CPU plugin; fell back to ONNX Runtime fp32"
    )
    assert embedder.runtime_fallback in caplog.text
    texts = fixture_texts()[:4]
    np.testing.assert_allclose(
        embedder.encode_documents(texts).dense,
        load_embedder(EmbeddingSpec(runtime="onnx")).encode_documents(texts).dense,
        atol=1e-6,
    )


def test_a_new_export_version_gets_its_own_entry_and_re_embeds(monkeypatch, tmp_path):
    model = resolve_model(EmbeddingSpec())
    resource = EmbeddingResource(embedding=EmbeddingConfig(embedding_runtime="onnx"))
    entry, vectors = (
        export_dir(model.name, folder_digest(model.path), tmp_path),
        resource.vectors_version(),
    )
    # A bumped version, wherever the code reads it: the export's folder and the vectors' tag.
    for module in ("onnx_export", "models"):
        monkeypatch.setattr(f"rag_assets.embedding.{module}.EXPORT_VERSION", "next")
    assert export_dir(model.name, folder_digest(model.path), tmp_path) != entry
    assert resource.vectors_version() != vectors  # part of chunk_embeddings' data version


@pytest.mark.slow
def test_a_new_export_removes_the_folders_older_exports_only(tmp_path):
    cache = tmp_path / "cache"
    model = resolve_model(EmbeddingSpec())
    digest = folder_digest(model.path)
    target = export_dir(model.name, digest, cache)
    prefix = target.name.removesuffix(f"-v{EXPORT_VERSION}")
    older = {  # entries an earlier export version or earlier folder content left
        cache / f"{prefix}-v0": str(model.path),
        cache / f"{target.name.replace(digest[:16], '0' * 16)}": str(model.path),
    }
    elsewhere = cache / f"{target.name.replace(digest[:16], 'f' * 16)}"  # same name, other folder
    killed = cache / f"{prefix}-v0.tmp-killed"
    for entry, model_dir in [*older.items(), (elsewhere, str(tmp_path / "other"))]:
        entry.mkdir(parents=True)
        (entry / INFO_FILE).write_text(json.dumps({"model_dir": model_dir}))
        (entry / FP32_FILE).write_bytes(b"an older graph")
    Path(f"{cache / prefix}-v0.lock").touch()  # exports once took a lock per entry
    killed.mkdir()

    assert ensure_exported(model.path, model.name, cache) == target
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [target.name, elsewhere.name, lock_path(model.name, cache).name]
    )
    assert read_info(target).digest == digest


@pytest.mark.slow
def test_an_export_makes_the_default_runtime_only_and_int8_is_made_when_first_asked(
    tmp_path, caplog
):
    cache = tmp_path / "cache"
    model = resolve_model(EmbeddingSpec())
    folder = ensure_exported(model.path, model.name, cache)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [FP32_FILE, TOKENIZER_FILE, INFO_FILE]
    )
    spec = EmbeddingSpec(runtime="onnx-int8", cache_dir=cache)
    with caplog.at_level(logging.INFO):
        embedder = Embedder(spec, resolve_model(spec))
    assert embedder.runtime == "onnx-int8" and embedder.runtime_fallback is None
    assert embedder._onnx.model_file == folder / INT8_FILE
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [FP32_FILE, INT8_FILE, TOKENIZER_FILE, INFO_FILE]
    )
    # The quantizer's line per tensor stays out of the log; ours says what happened.
    assert not [r for r in caplog.records if "onnxruntime" in r.pathname]
    assert any("quantizing" in r.getMessage() for r in caplog.records)


def test_a_changed_model_folder_gets_its_own_export(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(resolve_model(EmbeddingSpec()).path, folder)
    before = export_dir("m", folder_digest(folder), tmp_path / "cache")
    (folder / "config.json").write_text((folder / "config.json").read_text() + "\n")
    after = export_dir("m", folder_digest(folder), tmp_path / "cache")
    assert before != after
    assert after.name.endswith(f"-v{EXPORT_VERSION}")


@pytest.mark.slow
def test_two_processes_export_once_and_never_see_half_an_export(tmp_path):
    cache = tmp_path / "cache"
    model = resolve_model(EmbeddingSpec())
    target = export_dir(model.name, folder_digest(model.path), cache)
    stale = cache / f"{target.name}.tmp-killed"  # what an exporter killed midway leaves
    stale.mkdir(parents=True)
    (stale / "model.onnx").write_bytes(b"half")
    # What scripts/setup.sh runs, twice at once.
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "RAG_ASSETS_MODEL_CACHE": str(cache)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "rag_assets.embedding.prepare"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    results = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in results]
    assert {out.strip().splitlines()[-1] for out, _ in results} == {str(target)}
    assert sum(err.count("exporting ") for _, err in results) == 1
    assert sorted(p.name for p in cache.iterdir()) == [
        target.name,
        lock_path(model.name, cache).name,
    ]
    info = read_info(target)
    assert info.digest == folder_digest(model.path) and (target / INFO_FILE).is_file()


@pytest.mark.slow
def test_an_unusable_runtime_falls_back_to_flagembedding_and_says_so(tmp_path, reference, caplog):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the export cache should be")
    with caplog.at_level(logging.WARNING, logger="rag_assets.embedding.models"):
        spec = EmbeddingSpec(runtime="onnx", cache_dir=blocked)
        embedder = Embedder(spec, resolve_model(spec))
    assert embedder.runtime == "flag"
    assert "runtime 'onnx' failed" in embedder.runtime_fallback
    assert "fell back to FlagEmbedding" in embedder.runtime_fallback
    assert embedder.runtime_fallback in caplog.text
    texts = fixture_texts()[:4]
    np.testing.assert_allclose(
        embedder.encode_documents(texts).dense, reference.encode_documents(texts).dense, atol=1e-6
    )


def test_bge_m3_stays_on_flagembedding_without_a_warning():
    resource = EmbeddingResource(embedding=EmbeddingConfig(embedding_runtime="onnx"), kind="bge-m3")
    assert resource.vectors_version() is None


def test_the_runtime_is_part_of_the_embedding_settings_version(monkeypatch):
    monkeypatch.setattr("rag_assets.embedding.models.native_bf16", lambda: True)

    def version(runtime: str) -> str:
        resource = EmbeddingResource(
            embedding=EmbeddingConfig(embedding_runtime=runtime, embedded_text="context")
        )
        return SHARED["embedding_settings"](SimpleNamespace(embedding=resource)).version

    assert DEFAULT_RUNTIME == "openvino-bf16"
    assert len({version(runtime) for runtime in RUNTIMES}) == len(RUNTIMES)
    # FlagEmbedding keeps the version its vectors had before runtimes existed: no re-embedding.
    assert version("flag") == digest({"model": "bundled:all-MiniLM-L6-v2", "kind": "auto"})
    assert (
        EmbeddingResource(embedding=EmbeddingConfig(embedding_runtime="onnx")).vectors_version()
        == f"onnx/export-{EXPORT_VERSION}"
    )


def test_default_cache_dir_follows_the_setting(monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(tmp_path / "models"))
    assert default_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("RAG_ASSETS_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "rag_assets" / "onnx"


@pytest.mark.slow
def test_chunk_embeddings_records_the_runtime_and_a_new_runtime_re_embeds(tmp_path, monkeypatch):
    from dagster import AssetKey, DagsterInstance

    from rag_assets.runner.ingest import ingest
    from rag_assets.settings import Settings

    doc = tmp_path / "pumps.md"
    doc.write_text("# Pumps\n\n## Service\n\nService the pump every 500 hours.\n")
    instance = DagsterInstance.ephemeral()

    def run(runtime: str):
        settings = Settings(data_dir=tmp_path / "data", embedding_runtime=runtime)
        (outcome,) = ingest(settings, [doc], instance=instance)
        assert outcome.success, outcome.summary()
        (record,) = instance.fetch_materializations(AssetKey("chunk_embeddings"), limit=1).records
        metadata = record.asset_materialization.metadata
        return outcome.ran, metadata["runtime"].value, metadata["runtime_fallback"].value, metadata

    ran, runtime, fallback, metadata = run("onnx")
    assert "chunk_embeddings" in ran and (runtime, fallback) == ("onnx", "none")
    # one chunk, a model batch of its own: its word pieces, no padding
    assert metadata["vectors"].value == 1
    assert metadata["embedded_tokens"].value > 3 and metadata["padding_tokens"].value == 0
    assert run("onnx")[0] == ()  # nothing changed, nothing ran
    ran, runtime, fallback, metadata = run("flag")
    assert ran[0] == "chunk_embeddings" and (runtime, fallback) == ("flag", "none")
    assert "embedded_tokens" not in metadata  # FlagEmbedding counts none
    # An export that cannot be written: the run still lands, on FlagEmbedding, and says why.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the export cache should be")
    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(blocked))
    load_embedder.cache_clear()  # an int8 model loaded by an earlier test would be reused
    ran, runtime, fallback, _ = run("onnx-int8")
    assert ran[0] == "chunk_embeddings" and runtime == "flag"
    assert "runtime 'onnx-int8' failed" in fallback
