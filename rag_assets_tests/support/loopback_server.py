"""What the tests' local HTTP stubs share: a threaded server on 127.0.0.1 and JSON answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol, TypeVar


class Stoppable(Protocol):
    _stopping: threading.Event  # set when the server stops: wakes handlers sleeping in a delay


StubT = TypeVar("StubT", bound=Stoppable)


class JsonHandler(BaseHTTPRequestHandler):
    extra_headers: dict[str, str] = {}

    def send_json(self, status: int, payload: dict | bytes) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in self.extra_headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the answer

    def log_message(self, format: str, *args: object) -> None:
        pass  # requests go to the stub's record, not stderr


@contextmanager
def serve_on_loopback(
    make_stub: Callable[[int], StubT], make_handler: Callable[[StubT], type[JsonHandler]]
) -> Iterator[StubT]:
    """A stub made for a free port of 127.0.0.1, served from a daemon thread until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.daemon_threads = True
    stub = make_stub(server.server_address[1])
    server.RequestHandlerClass = make_handler(stub)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub._stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
