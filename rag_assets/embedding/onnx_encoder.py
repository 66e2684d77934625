"""Dense vectors from an exported model (on ONNX Runtime or OpenVINO, graph_runtimes.py),
computed as FlagEmbedding's FlagModel does.

FlagModel.encode_single_device tokenizes with truncation at max_length, sorts the texts by token
count (longest first) so each batch pads little, pools the last hidden state (cls or
attention-masked mean) and L2-normalizes. This does the same with the same tokenizer definition,
without importing torch or transformers.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import numpy as np
from tokenizers import Tokenizer

from rag_assets.cores import available_cores
from rag_assets.embedding.graph_runtimes import OnnxRuntimeGraph, OpenVinoGraph
from rag_assets.embedding.onnx_export import (
    FP32_FILE,
    INT8_FILE,
    TOKENIZER_FILE,
    ExportInfo,
    read_info,
)
from rag_assets.embedding.token_counts import record_tokens
from rag_assets.settings.groups import OPENVINO_RUNTIMES, ExportRuntime


class OnnxEncoder:
    def __init__(
        self,
        folder: Path,
        runtime: ExportRuntime,
        pooling: Literal["cls", "mean"],
        batch_size: int,
        max_length: int,
    ) -> None:
        self.info: ExportInfo = read_info(folder)
        self.model_file = folder / (INT8_FILE if runtime == "onnx-int8" else FP32_FILE)
        self._side_by_side = available_cores()
        self._graph = open_graph(self.model_file, runtime, self._side_by_side)
        self._tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self._tokenizer.no_padding()  # padded per batch, after sorting by length
        self._tokenizer.enable_truncation(max_length)  # in tokens, [CLS] and [SEP] included
        self._pooling = pooling
        self._batch_size = texts_a_batch(runtime, batch_size)

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), hidden) float32, rows L2-normalized, in the order of `texts`; each
        text's word pieces and the width its batch ran at go to the open token ledger."""
        encodings = self._tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(texts), self.info.hidden_size), dtype=np.float32)
        widths = np.empty(len(texts), dtype=np.int64)  # the width each text's batch ran at

        def run(rows: np.ndarray) -> None:
            feed, mask = self._pad([encodings[i] for i in rows])
            hidden = self._graph(feed)
            out[rows] = _pool(hidden, mask, self._pooling)
            widths[rows] = mask.shape[1]

        batches = length_batches(lengths, self._batch_size)
        if self._side_by_side > 1 and len(batches) > 1:
            # The graph runs outside the GIL; each caller writes its own rows.
            with ThreadPoolExecutor(self._side_by_side, thread_name_prefix="embed") as pool:
                list(pool.map(run, batches))
        else:
            for rows in batches:
                run(rows)
        record_tokens(lengths, widths.tolist())
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def _pad(self, encodings: list) -> tuple[dict[str, np.ndarray], np.ndarray]:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.info.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.full((len(encodings), width), self.info.pad_token_type_id, dtype=np.int64)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = e.attention_mask
            types[row, : len(e.ids)] = e.type_ids
        columns = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: columns[name] for name in self.info.input_names}, mask


def texts_a_batch(runtime: ExportRuntime, batch_size: int) -> int:
    """How many texts a call runs: `batch_size`, but one on OpenVINO.

    OpenVINO's results move with the batch's width (by up to 6e-4 in bf16, 2e-7 in fp32), so
    one text a call makes a text's vector depend on the text alone: the same in any run, batch
    or store. Unpadded, it costs 2% of bf16's word pieces/s on texts of 5 to 180 words.
    """
    return 1 if runtime in OPENVINO_RUNTIMES else batch_size


def open_graph(
    model_file: Path, runtime: ExportRuntime, side_by_side: int, threads: int = 1
) -> OnnxRuntimeGraph | OpenVinoGraph:
    """The exported graph on the runtime's engine, for `side_by_side` callers of `threads`
    threads each."""
    if runtime in OPENVINO_RUNTIMES:
        precision = "bf16" if runtime == "openvino-bf16" else "f32"
        return OpenVinoGraph(model_file, precision, side_by_side, threads)
    return OnnxRuntimeGraph(model_file, threads)


def length_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Indices in batches of similar token counts, longest first, as FlagModel groups them:
    each batch pads only to its own longest text."""
    order = np.argsort([-n for n in lengths], kind="stable")
    return [order[first : first + batch_size] for first in range(0, len(order), batch_size)]


def _pool(hidden: np.ndarray, mask: np.ndarray, pooling: str) -> np.ndarray:
    if pooling == "cls":
        return hidden[:, 0]
    weights = mask[..., None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / weights.sum(axis=1)
