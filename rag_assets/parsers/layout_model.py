"""PyMuPDF's layout model with ONNX Runtime sessions sized for the process that runs it.

`import pymupdf` builds the layout model with ONNX Runtime's default sessions: one intra-op
thread per core, spinning between calls. On the generated corpus that costs 0.39 CPU
seconds a page against 0.21 with one thread and no spinning, and a spinning thread takes
the core another worker needs; both cores are kept busy by the page pool instead
(`page_pool.py`). pymupdf.layout has no session options of its own, so its session
factory is swapped for ours while the model is built (the library's files stay untouched)
and the model goes in through `pymupdf._get_layout`, the hook pymupdf.layout itself sets.

The library turns ONNX Runtime's memory arena off for every session, so that a long-lived
process does not keep the peak of its largest page. The image feature and table grid models
are the exception: every page image and table crop is resized to their fixed input, so they
allocate the same activations on every call, and without an arena each call maps and
zero-fills them afresh (~130 MB of page faults a page: a third of a page's CPU went to the
kernel). Their sessions keep an arena without ONNX Runtime's memory pattern, which would hold
one more block of planned activations for a speed-up these models do not show; their
outputs are the same bit for bit. The image model's 26 PRelus, each with a single slope, are
given to ONNX Runtime as the LeakyRelus they are, which it fuses into the convolutions before
them (~10 ms a page less); its outputs move by 1e-5 at most, and the layout of the generated
corpus and the fixtures is unchanged.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

_lock = threading.Lock()
_installed: tuple[int, Any] | None = None  # (threads, model)


def install_layout_model(threads: int) -> Any:
    """Make pymupdf's page layout calls use a model whose sessions run on `threads` threads."""
    global _installed
    with _lock:
        if _installed is not None and _installed[0] == threads:
            return _installed[1]
        # The layout model's libraries load in the parse workers only.
        import pymupdf
        from pymupdf.layout import DocumentLayoutAnalyzer

        with _session_options(threads):
            model = DocumentLayoutAnalyzer.get_model()

        def get_layout(*args: Any, **kwargs: Any) -> Any:
            return model.predict(*args, **kwargs)

        pymupdf._get_layout = get_layout
        _installed = (threads, model)
        return model


@contextlib.contextmanager
def _session_options(threads: int) -> Iterator[None]:
    # The layout model's libraries load in the parse workers only.
    import onnxruntime as ort
    from pymupdf.layout.onnx import (
        BoxRFDGNN,  # noqa: F401  (imports every module that builds sessions)
        common_util,
    )

    library_factory = common_util.make_session

    def make_session(model_path: str, providers: list[str] | None = None) -> Any:
        # The layout model's libraries load in the parse workers only.
        import onnx

        model = onnx.load(model_path)
        options = ort.SessionOptions()
        # As the library does: the arena would keep each document's peak allocation for good,
        # except for a model whose input, hence whose every allocation, is the same each call.
        fixed_input = _has_fixed_input(model)
        options.enable_cpu_mem_arena = fixed_input
        options.enable_mem_pattern = not fixed_input
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(
            _with_leaky_relu(model), sess_options=options, providers=providers
        )

    # Each module bound the factory by name at import (`from .common_util import make_session`).
    modules = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("pymupdf.layout.onnx.")
        and getattr(module, "make_session", None) is library_factory
    ]
    for module in modules:
        module.make_session = make_session
    try:
        yield
    finally:
        for module in modules:
            module.make_session = library_factory


def _has_fixed_input(model: Any) -> bool:
    """Whether each input's shape is fixed but for its first, batch, dimension (pymupdf.layout
    always passes one page or one table): the page image and table crop models, resized to
    their input, unlike the graph network's boxes and edges."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    return bool(inputs) and all(
        all(d.HasField("dim_value") for d in i.type.tensor_type.shape.dim[1:]) for i in inputs
    )


def _with_leaky_relu(model: Any) -> bytes:
    """The model with each single-slope PRelu written as the LeakyRelu it is.

    ONNX Runtime fuses a LeakyRelu into the convolution before it and runs a PRelu as a pass
    of its own over the activations; the image model has one after nearly every
    convolution.
    """
    # The layout model's libraries load in the parse workers only.
    from onnx import helper, numpy_helper

    constants = {t.name: t for t in model.graph.initializer}
    constants.update(
        (node.output[0], node.attribute[0].t)
        for node in model.graph.node
        if node.op_type == "Constant" and node.attribute[0].name == "value"
    )
    nodes = []
    for node in model.graph.node:
        slope = constants.get(node.input[1]) if node.op_type == "PRelu" else None
        if slope is not None and numpy_helper.to_array(slope).size == 1:
            alpha = float(numpy_helper.to_array(slope).reshape(()))
            node = helper.make_node(
                "LeakyRelu", [node.input[0]], list(node.output), name=node.name, alpha=alpha
            )
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    # The slopes are no one's input now (ONNX Runtime would warn about each).
    used = {name for node in nodes for name in node.input}
    kept = [t for t in model.graph.initializer if t.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    return model.SerializeToString()
