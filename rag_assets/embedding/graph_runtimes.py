"""The engines an exported embedding graph runs on, each as one callable (a feed of padded
word pieces in, the last hidden state out) that as many threads may call at once as batches run
side by side.

- ONNX Runtime, fp32 or int8 weights: a session shared by the threads, one intra-op thread each.
- OpenVINO, fp32 or bf16: one compiled model with a stream a thread, an inference request each.
  bf16 is asked for only where the CPU computes it natively (AVX-512 BF16 or AMX); elsewhere
  OpenVINO would emulate it, slower than fp32.

The native libraries load with the first graph, not with this module.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Literal

import numpy as np

OpenVinoPrecision = Literal["f32", "bf16"]
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU computes bf16 natively, by the flags the kernel lists for it."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False  # no cpuinfo (not Linux): assume none
    for line in text.splitlines():
        if line.startswith("flags"):
            return bool(NATIVE_BF16_FLAGS & set(line.split(":", 1)[-1].split()))
    return False


class OnnxRuntimeGraph:
    """An ONNX Runtime session with `threads` intra-op threads and no spinning between batches,
    shared by the threads that call it.

    With one thread a batch no operator waits for a thread a parse worker took from it. On idle
    cores it is also the faster way: 5,963 and 5,732 word pieces/s against 5,041 and 5,457 for
    two threads on one batch, in two runs of bench/embedding_ceiling.py.
    """

    def __init__(self, model_file: Path, threads: int = 1) -> None:
        # ONNX Runtime's native library loads with the first graph, not with this module.
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: initializer notes are not ours to act on
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1  # one graph, run operator by operator
        # Spinning threads wait for work by burning a core: on busy cores (load ~10 on 2) 39
        # against 31 ms of CPU a chunk, same vectors; no difference on idle ones.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(None, feed)[0]


class OpenVinoGraph:
    """An OpenVINO compiled model with `side_by_side` streams of `threads` threads each; each
    calling thread keeps its own inference request (a request runs one batch at a time).

    Threads are not pinned to cores: the parse workers run on the same cores.
    """

    def __init__(
        self, model_file: Path, precision: OpenVinoPrecision, side_by_side: int, threads: int = 1
    ) -> None:
        # OpenVINO's native library loads with the first graph, not with this module.
        import openvino

        self.compiled = openvino.Core().compile_model(
            str(model_file),
            "CPU",
            {
                "INFERENCE_PRECISION_HINT": precision,
                "NUM_STREAMS": side_by_side,
                "INFERENCE_NUM_THREADS": side_by_side * threads,
                "ENABLE_CPU_PINNING": False,
            },
        )
        self.precision = self.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        if self.precision != precision:
            raise RuntimeError(f"OpenVINO compiled the graph at {self.precision}, not {precision}")
        self._requests = threading.local()

    def __call__(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self.compiled.create_infer_request()
        return request.infer(feed)[0]  # copied out of the request, which the next call reuses
