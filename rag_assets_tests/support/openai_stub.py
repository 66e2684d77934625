"""A small OpenAI-compatible server on 127.0.0.1 that the real openai client talks to.

Each test scripts it: a queue of behaviours (answer text, tool calls, HTTP status, delay,
raw body) taken one per request, a default for when the queue is empty, and a log of every
request (headers and JSON body) to assert call counts and payloads on.

Use the `openai_stub` fixture (import it into a test module, or list this module in
`pytest_plugins`), or `serve_stub()` as a context manager.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from rag_assets_tests.support.loopback_server import JsonHandler, serve_on_loopback


@dataclass(frozen=True)
class Behaviour:
    text: str | None = "| a | b |\n|---|---|\n| 1 | 2 |"  # the assistant's content
    status: int = 200
    delay_s: float = 0.0  # before answering: past the client's timeout makes it time out
    raw_body: bytes | None = None  # sent as is instead of a chat completion (broken JSON, ...)
    finish_reason: str = "stop"
    # Function calling: (tool name, arguments) pairs answered as `tool_calls`.
    tool_calls: tuple[tuple[str, dict], ...] = ()


@dataclass(frozen=True)
class StubRequest:
    path: str
    headers: dict[str, str]
    body: dict

    @property
    def model(self) -> str | None:
        return self.body.get("model")

    @property
    def tool_names(self) -> list[str]:
        """The functions the request offered (empty when it offered none)."""
        return [tool["function"]["name"] for tool in self.body.get("tools", [])]

    @property
    def text(self) -> str:
        """Every text part of every message, joined: what a scripted answer can look at."""
        parts = []
        for message in self.body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(p.get("text", "") for p in content if p.get("type") == "text")
        return "\n".join(parts)

    def image_urls(self) -> list[str]:
        return [
            part["image_url"]["url"]
            for message in self.body.get("messages", [])
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]


@dataclass
class OpenAIStub:
    base_url: str
    default: Behaviour = field(default_factory=Behaviour)
    # When set, decides every answer from the request (e.g. by its image), queue or not.
    respond: Callable[[StubRequest], Behaviour] | None = None
    requests: list[StubRequest] = field(default_factory=list)
    max_in_flight: int = 0  # the most requests seen at once: what a concurrency cap limits
    _queue: deque[Behaviour] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _in_flight: int = 0

    def enqueue(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def _next(self, request: StubRequest) -> Behaviour:
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self.respond is None:
                return self._queue.popleft() if self._queue else self.default
        return self.respond(request)

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)


def _completion(behaviour: Behaviour, model: str, number: int) -> dict:
    text = behaviour.text or ""
    message: dict = {"role": "assistant", "content": behaviour.text}
    finish_reason = behaviour.finish_reason
    if behaviour.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call-{number}-{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(behaviour.tool_calls)
        ]
        finish_reason = "tool_calls"
    return {
        "id": f"chatcmpl-stub-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": len(text.split()),
            "total_tokens": 100 + len(text.split()),
        },
    }


def _handler(stub: OpenAIStub) -> type[JsonHandler]:
    class Handler(JsonHandler):
        # The SDK honours this over its own backoff (0.5 s, 1 s, ...): keeps retries fast.
        extra_headers = {"retry-after-ms": "10"}

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {}
            behaviour = stub._next(StubRequest(self.path, dict(self.headers.items()), body))
            # In flight until its answer is due, not until this handler returns: the client,
            # released by the answer, may send its next request before then.
            try:
                stopping = bool(behaviour.delay_s) and stub._stopping.wait(behaviour.delay_s)
            finally:
                stub._done()
            if not stopping:
                self._answer(behaviour, body)

        def _answer(self, behaviour: Behaviour, body: dict) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            elif behaviour.raw_body is not None:
                self.send_json(behaviour.status, behaviour.raw_body)
            elif behaviour.status != 200:
                error = {"error": {"message": f"stub status {behaviour.status}", "type": "stub"}}
                self.send_json(behaviour.status, error)
            else:
                self.send_json(200, _completion(behaviour, body.get("model", ""), stub.calls))

    return Handler


@contextmanager
def serve_stub() -> Iterator[OpenAIStub]:
    """A stub on a free port of 127.0.0.1, serving from a daemon thread until the block ends."""
    with serve_on_loopback(
        lambda port: OpenAIStub(base_url=f"http://127.0.0.1:{port}/v1"), _handler
    ) as stub:
        yield stub


@pytest.fixture
def openai_stub() -> Iterator[OpenAIStub]:
    with serve_stub() as stub:
        yield stub
