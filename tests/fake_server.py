"""A local OpenAI-compatible HTTP server for tests: its answers come from a function of (method, path, JSON body),
and it records every request. Shared by the server backend's tests and the written-state mode's."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[str, str, Any], tuple[int, Any]]


class Received(list):  # type: ignore[type-arg]
    """The (method, path, JSON body) of each request, in order; ``headers`` beside them."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[dict[str, str]] = []


@contextmanager
def fake_server(respond: Responder) -> Iterator[tuple[str, Received]]:
    """A local HTTP server whose answers come from ``respond(method, path, json body)``; yields (its URL, the
    requests it received)."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            received.append((method, self.path, body))
            received.headers.append(dict(self.headers))
            status, payload = respond(method, self.path, body)
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._answer("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._answer("POST")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
