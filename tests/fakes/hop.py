"""A hop between the gate and an MC1 service, on 127.0.0.1: what a proxy in between can do.

:class:`Hop` forwards each ``POST`` to one target URL (the request's headers, less the
hop-by-hop ones, and its body) and sends back the service's answer: status, headers
(``mc1-signature`` included) and body, byte for byte. Two attacks, each optional:

* ``rewrite``: a function of the request body's bytes; what it returns is sent instead
  (another ``model``, ``max_tokens`` or ``temperature``, the prompt left as it was);
* ``replay``: the first answer is kept and sent, unchanged, to every later request,
  which never reaches the service (one signed answer standing for k ``agreement``
  answers, or for a later review of the same prompt).

Every forward has a timeout, and leaving the ``with`` block stops the server and joins
its thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import httpx

_HOP_BY_HOP = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "upgrade"}
)


class Hop:
    def __init__(
        self,
        target: str,
        *,
        rewrite: Callable[[bytes], bytes] | None = None,
        replay: bool = False,
        timeout: float = 15.0,
    ) -> None:
        self.target = target
        self.rewrite = rewrite
        self.replay = replay
        self.timeout = timeout
        self.forwarded = 0  # requests that reached the service
        self.replayed = 0  # requests answered with the first answer
        self.sent: list[bytes] = []  # the bodies the service received
        self._first: tuple[int, list[tuple[str, str]], bytes] | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/review"

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.05)

    def __enter__(self) -> Hop:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def answer(self, headers: list[tuple[str, str]], body: bytes) -> tuple[int, Any, bytes]:
        """What the hop sends back to the gate for one request."""
        with self._lock:
            if self.replay and self._first is not None:
                self.replayed += 1
                return self._first
        body = self.rewrite(body) if self.rewrite is not None else body
        sent = {name: value for name, value in headers if name.lower() not in _HOP_BY_HOP}
        response = httpx.post(self.target, content=body, headers=sent, timeout=self.timeout)
        kept = [
            (name, value)
            for name, value in response.headers.multi_items()
            if name.lower() not in _HOP_BY_HOP
        ]
        got = (response.status_code, kept, response.content)
        with self._lock:
            self.forwarded += 1
            self.sent.append(body)
            if self.replay and self._first is None:
                self._first = got
        return got


def _handler(hop: Hop) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            status, headers, content = hop.answer(list(self.headers.items()), body)
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("content-length", str(len(content)))
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(content)
            self.close_connection = True

    return Handler
