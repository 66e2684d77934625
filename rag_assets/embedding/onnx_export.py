"""A model folder exported to ONNX once, into a cache that processes share; its int8 weights
are made from that export the first time the opt-in `onnx-int8` runtime asks for them.

The export runs torch, so it happens once per model folder and export version; the folder's
content hash names the cache entry, so a changed folder is exported again. A file lock per model
name lets one process export while the others wait, and the entry appears by one atomic rename of
a finished folder: a reader never sees half an export, and a killed exporter leaves only a
temporary folder, which the next exporter removes. Once a new entry is in place, the same folder's
older entries (another content hash or export version) are removed under the same lock. The int8
file is added to a finished entry under the same lock, by one atomic rename of a finished file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel

from rag_assets.settings.processes import ModelCacheSettings

# Part of the vectors' version: change it when the export or the quantization changes them.
EXPORT_VERSION = "1"
FP32_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
INFO_FILE = "export.json"
LOCK_TIMEOUT_S = 900  # an export takes tens of seconds on a loaded 2-core machine

log = logging.getLogger(__name__)


class ExportInfo(BaseModel):
    """What the runtime needs besides the graph, written beside it."""

    model_dir: str
    digest: str
    input_names: list[str]  # the tokenizer's model inputs, in the graph's order
    pad_token_id: int
    pad_token_type_id: int
    hidden_size: int
    torch_version: str
    onnxruntime_version: str


def default_cache_dir() -> Path:
    """`$RAG_ASSETS_MODEL_CACHE`, else the user's cache: exports outlive any one data folder."""
    configured = ModelCacheSettings.from_env().model_cache
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache"
    return Path(base).expanduser() / "rag_assets" / "onnx"


def folder_digest(folder: Path) -> str:
    """sha256 over every file's relative path and bytes: any change to the model re-exports."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def export_dir(name: str, digest: str, cache_dir: Path) -> Path:
    """Where a model folder's export lives (exists once complete)."""
    return cache_dir / f"{_slug(name)}-{digest[:16]}-v{EXPORT_VERSION}"


def lock_path(name: str, cache_dir: Path) -> Path:
    """One lock per model name, not per entry: pruning a name's entries happens under it."""
    return cache_dir / f"{_slug(name)}.lock"


def _entries(name: str, cache_dir: Path, temporary: bool) -> list[Path]:
    """The name's finished exports, or its exporters' temporary folders, of any hash and version."""
    suffix = r"\.tmp-.+" if temporary else ""
    pattern = re.compile(rf"{re.escape(_slug(name))}-[0-9a-f]{{16}}-v[^.]+{suffix}")
    return [p for p in cache_dir.iterdir() if pattern.fullmatch(p.name) and p.is_dir()]


def ensure_exported(model_dir: Path, name: str, cache_dir: Path) -> Path:
    """The export folder of `model_dir`, exporting it first when no process has yet."""

    digest = folder_digest(model_dir)
    target = export_dir(name, digest, cache_dir)
    if target.is_dir():  # only ever made by the rename of a finished export
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(lock_path(name, cache_dir), timeout=LOCK_TIMEOUT_S):
        if target.is_dir():  # another process finished while this one waited
            return target
        for stale in _entries(name, cache_dir, temporary=True):
            shutil.rmtree(stale, ignore_errors=True)  # a killed exporter's: the lock is ours
        log.info("exporting %s to ONNX in %s", model_dir, target)
        work = Path(tempfile.mkdtemp(prefix=f"{target.name}.tmp-", dir=cache_dir))
        try:
            info = _export(model_dir, digest, work)
            (work / INFO_FILE).write_text(info.model_dump_json(indent=2))
            work.chmod(0o755)  # mkdtemp's 0700 would hide a shared cache from other users
            os.rename(work, target)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        _prune(model_dir, name, cache_dir, keep=target)
    return target


def ensure_quantized(folder: Path, name: str, cache_dir: Path) -> Path:
    """The int8 graph of a finished export `folder`, quantizing its fp32 graph first when no
    process has yet: only the opt-in `onnx-int8` runtime reads it, so no export makes it."""

    int8 = folder / INT8_FILE
    if int8.is_file():  # only ever made by the rename of a finished file
        return int8
    with FileLock(lock_path(name, cache_dir), timeout=LOCK_TIMEOUT_S):
        if int8.is_file():
            return int8
        log.info("quantizing %s to int8", folder / FP32_FILE)
        partial = folder / f"{INT8_FILE}.tmp-{os.getpid()}"
        try:
            _quantize(folder / FP32_FILE, partial)
            os.rename(partial, int8)
        finally:
            partial.unlink(missing_ok=True)
    return int8


def _prune(model_dir: Path, name: str, cache_dir: Path, keep: Path) -> None:
    """Remove the exports of `model_dir` other than `keep`: its older contents or export versions.

    Only entries that name the same folder go: another folder of the same name keeps its own.
    Processes already running on a removed entry are unaffected (their sessions hold the graph).
    """
    for entry in _entries(name, cache_dir, temporary=False):
        if entry != keep and _exported_from(entry) == str(model_dir):
            log.info("removing %s, an older export of %s", entry, model_dir)
            shutil.rmtree(entry, ignore_errors=True)
            Path(f"{entry}.lock").unlink(missing_ok=True)  # the per-entry lock exports once took


def _exported_from(entry: Path) -> str | None:
    """The model folder an entry of any export version was made from (its info's model_dir)."""
    try:
        return str(json.loads((entry / INFO_FILE).read_text())["model_dir"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_info(folder: Path) -> ExportInfo:
    return ExportInfo.model_validate(json.loads((folder / INFO_FILE).read_text()))


def _export(model_dir: Path, digest: str, work: Path) -> ExportInfo:
    # torch and transformers take seconds to load: only when a model is exported, once.
    import onnxruntime
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    if not tokenizer.is_fast:
        raise ValueError(f"{model_dir} has no fast tokenizer to run beside ONNX")
    # The fast tokenizer's own definition, so the runtime tokenizes exactly as transformers does.
    tokenizer.backend_tokenizer.save(str(work / TOKENIZER_FILE))
    # Eager attention traces to plain MatMul/Softmax that every ONNX Runtime build runs.
    model = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    ).eval()
    names = list(tokenizer.model_input_names)
    sample = tokenizer(["an export probe", "a second, longer export probe"], padding=True)
    args = tuple(torch.tensor(sample[n], dtype=torch.int64) for n in names)

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state

    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad(), warnings.catch_warnings():
        # The tracer's notes on Python-side shape checks and on how opset 17 spells advanced
        # indexing: the graph is checked against FlagEmbedding's vectors, nothing to act on.
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx\.")
        # The TorchScript exporter: the dynamo one needs onnxscript, which is not installed.
        torch.onnx.export(
            LastHiddenState(),
            args,
            str(work / FP32_FILE),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: axes for n in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )
    return ExportInfo(
        model_dir=str(model_dir),
        digest=digest,
        input_names=names,
        pad_token_id=int(tokenizer.pad_token_id or 0),
        pad_token_type_id=int(tokenizer.pad_token_type_id),
        hidden_size=int(model.config.hidden_size),
        torch_version=torch.__version__,
        onnxruntime_version=onnxruntime.__version__,
    )


def _quantize(fp32: Path, int8: Path) -> None:
    # Only the opt-in int8 runtime quantizes, once a model.
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Weights of the MatMuls per output channel: measured closer to fp32 than per tensor
    # (bench/README.md), activations quantized per batch at run time.
    with _quantizer_notes_dropped():
        quantize_dynamic(
            str(fp32),
            str(int8),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )


class _FromQuantizer(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return f"onnxruntime{os.sep}quantization" not in record.pathname


@contextmanager
def _quantizer_notes_dropped() -> Iterator[None]:
    """The quantizer logs a line per tensor it leaves as is, on the root logger: dropped. A
    NullHandler meanwhile keeps its root `logging.warning` from configuring a stderr handler."""
    root, notes, keeps_quiet = logging.getLogger(), _FromQuantizer(), logging.NullHandler()
    root.addFilter(notes)
    root.addHandler(keeps_quiet)
    try:
        yield
    finally:
        root.removeHandler(keeps_quiet)
        root.removeFilter(notes)
