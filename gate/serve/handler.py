"""The HTTP side of ``review-gate serve``: the standard library's threading server.

``POST /review`` (what the gate's ``mc1`` provider sends) goes through, in order: the
front door (:func:`gate.serve.door.check`: ``Host``, ``Origin``, the body's length), the
bearer token (401 before anything else is read or forwarded), the shutdown (503), a free
slot (503 with ``Retry-After``), the body read within ``client_read`` seconds (408), the
request read strictly (400), and then the upstream (:func:`gate.serve.upstream.forward`).
``GET /healthz`` says whether the service is up, whether the upstream answers, and the
key id: nothing secret. Every answer closes its connection, and a connection over
``max_connections`` is answered 503 by the acceptor itself, so threads stay bounded.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import secrets
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gate import __version__
from gate.serve import door
from gate.serve.config import MAX_HEAD_BYTES, RETRY_AFTER_S
from gate.serve.service import Service
from gate.serve.upstream import Answer, BadQuestion, forward, parse, refused

PATH = "/review"
#: what is read and dropped, at most, after a refusal sent before the body was read
LINGER_BYTES = 1 << 20
LINGER_S = 1.0
HEALTH = "/healthz"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: %d\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
)


class HeadLimit(io.BufferedIOBase):
    """The connection's reader, whose lines (the request line and the headers) hold at
    most ``limit`` bytes in all: the standard library reads up to 100 header lines of
    64 KiB each, 6.4 MB held per connection before the handler (and its token check)
    sees any. Over it, :class:`http.client.LineTooLong`, which the library answers 431
    (414 for the request line alone). The body is read with :meth:`read1`, uncounted:
    its length was checked at the door."""

    def __init__(self, raw: io.BufferedIOBase, limit: int = MAX_HEAD_BYTES) -> None:
        super().__init__()
        self._raw, self._left = raw, limit

    def readline(self, size: int | None = -1, /) -> bytes:
        most = self._left + 1 if size is None or size < 0 else min(size, self._left + 1)
        line = self._raw.readline(most)
        self._left -= len(line)
        if self._left < 0:
            raise http.client.LineTooLong(f"request head over {MAX_HEAD_BYTES} bytes")
        return line

    def read1(self, size: int = -1) -> bytes:
        return self._raw.read1(size)

    def close(self) -> None:
        self._raw.close()
        super().close()


class Server(ThreadingHTTPServer):
    """One thread a connection, at most ``max_connections`` of them."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128  # 200 clients connecting at once are queued, not reset

    def __init__(self, service: Service, address: tuple[str, int]) -> None:
        self.service = service
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.service.open_connection():
            body = b'{"error":{"type":"busy","message":"too many connections"}}'
            with contextlib.suppress(OSError):
                request.sendall(_BUSY % (RETRY_AFTER_S, len(body), body))
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.service.close_connection()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that broke (the client left while its error was written): one
        line with the exception's type, not the library's traceback on standard error
        (the log holds codes, never what a client sent)."""
        error = sys.exc_info()[1]
        self.service.log(f"connection error {type(error).__name__}")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "review-gate-serve"
    sys_version = ""
    server: Server

    def setup(self) -> None:
        super().setup()
        self.rfile = HeadLimit(self.rfile)
        seconds = self.server.service.config.client_read
        self.connection.settimeout(seconds)  # each read; the watch bounds them all
        self.server.service.watch.reading(self.connection, seconds)

    def finish(self) -> None:
        self.server.service.watch.read(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """http.server's own lines (with the request line) are not written: see :meth:`_log`."""

    def do_POST(self) -> None:
        started = time.monotonic()
        self._body_read = False
        answer, received = self._post()
        self._send(answer)
        self._log("POST", answer, received, started)
        if not self._body_read:
            self._linger()

    def _linger(self) -> None:
        """After a refusal sent before the body was read: close our side, then read what
        the client still sends (at most :data:`LINGER_BYTES` within :data:`LINGER_S`), so
        the close does not reset the connection before the client read the refusal."""
        until, left = time.monotonic() + LINGER_S, LINGER_BYTES
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(LINGER_S)
            while left > 0 and time.monotonic() < until:
                part = self.connection.recv(min(left, 1 << 16))
                if not part:
                    return
                left -= len(part)

    def do_GET(self) -> None:
        started = time.monotonic()
        self.service.watch.read(self.connection)
        answer = self._health()
        self._send(answer)
        self._log("GET", answer, 0, started)

    def _other(self) -> None:
        self.close_connection = True
        self._send(refused(405, "method_not_allowed", f"POST {PATH} or GET {HEALTH}"))

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _other

    @property
    def service(self) -> Service:
        return self.server.service

    def _post(self) -> tuple[Answer, int]:
        service = self.service
        if self.path != PATH:
            return refused(404, "not_found", f"the reviewer answers POST {PATH}"), 0
        refusal = door.check(service.door, "POST", self.headers.items())
        if refusal is not None:
            return refused(refusal.status, refusal.reason, refusal.message), 0
        if not service.authorized(self.headers.get_all("authorization") or []):
            return refused(
                401,
                "unauthorized",
                "a valid bearer token is required (the gate's mc1 key)",
                **{"www-authenticate": 'Bearer realm="review-gate"'},
            ), 0
        if service.stopping.is_set():
            return refused(
                503,
                "stopping",
                "the service is stopping; retryable",
                **{"retry-after": str(RETRY_AFTER_S)},
            ), 0
        with service.slot() as free:
            if not free:
                return refused(
                    503,
                    "busy",
                    f"{service.config.max_concurrent} requests are being answered "
                    "(--max-concurrent); retryable",
                    **{"retry-after": str(RETRY_AFTER_S)},
                ), 0
            return self._answer(int(self.headers["content-length"]))

    def _answer(self, length: int) -> tuple[Answer, int]:
        body = self._read_body(length)
        self.service.watch.read(self.connection)  # the request is in: no read deadline
        self._body_read = body is not None
        if body is None:
            return refused(
                408,
                "body_timeout",
                f"the request body did not arrive within {self.service.config.client_read:g}s",
            ), 0
        try:
            question = parse(body)
        except BadQuestion as err:
            return refused(400, err.reason, err.message), len(body)
        with self.service.forwarding(self.connection) as cancel:
            answer = forward(self.service.config, question, self.service.key, cancel)
        return answer, len(body)

    def _read_body(self, length: int) -> bytes | None:
        """``length`` bytes within ``client_read`` seconds in all, or None."""
        until = time.monotonic() + self.service.config.client_read
        parts, have = [], 0
        try:
            while have < length and time.monotonic() < until:
                part = self.rfile.read1(min(length - have, 1 << 16))
                if not part:
                    return None
                parts.append(part)
                have += len(part)
        except OSError:
            return None
        return b"".join(parts) if have == length else None

    def _health(self) -> Answer:
        service = self.service
        if self.path != HEALTH:
            return refused(404, "not_found", f"GET {HEALTH}")
        refusal = door.check(service.door, "GET", self.headers.items())
        if refusal is not None:
            return refused(refusal.status, refusal.reason, refusal.message)
        reachable = service.health.reachable()
        up = not service.stopping.is_set()
        state = {
            "status": "up" if up else "stopping",
            "upstream": "reachable" if reachable else "unreachable",
            "key_id": service.key_id,
            "in_flight": service.in_flight,
            "version": __version__,
        }
        body = json.dumps(state, sort_keys=True).encode("ascii")
        headers = {"content-type": "application/json", "cache-control": "no-store"}
        return Answer(200 if up and reachable else 503, body, headers, "" if up else "stopping")

    def _send(self, answer: Answer) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):  # a client that left gets nothing
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(answer.body)))
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(answer.body)
            self.wfile.flush()

    def _log(self, method: str, answer: Answer, received: int, started: float) -> None:
        """One line: no path the client chose, no header value, no prompt, no answer."""
        path = self.path if self.path in (PATH, HEALTH) else "(other)"
        upstream = answer.upstream_status if answer.upstream_status is not None else "-"
        what = "sealed" if answer.sealed and path == PATH else answer.reason or "-"
        self.service.log(
            f"request {secrets.token_hex(4)} {method} {path} {answer.status} {what} "
            f"upstream={upstream} in={received}B out={len(answer.body)}B "
            f"{time.monotonic() - started:.3f}s"
        )
