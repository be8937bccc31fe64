"""``review-gate serve``'s request head is bounded, and a broken connection is one log line.

Outside attack of issue 33, item 2 (decision 0052). The standard library's server reads a
head of up to 100 header lines of 64 KiB each (6.4 MB) before the handler sees it, so
anyone who can connect (no token needed: the head comes before the token check) held
that much per connection: 60 connections raised the service's resident memory from
37 MB to 411 MB (``/tmp`` script in the report), and ``max_connections`` (256) allows
four times that. And a connection that broke while the server answered its malformed
request printed the server's traceback to standard error: lines the log's discipline
(codes and sizes only) does not cover, as many as an unauthenticated client asks for.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

import pytest

from gate.serve.config import MAX_HEAD_BYTES
from tests.integration.serve.conftest import Running


def _answer(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as sock:
        with contextlib.suppress(OSError):  # the server may refuse before the head is sent
            sock.sendall(request)
        got = b""
        for _ in range(100):
            try:
                part = sock.recv(65536)
            except OSError:
                break
            if not part:
                break
            got += part
        return got


def test_a_head_over_the_limit_is_431_before_it_is_held(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory()
    running: Running = serve(sim)
    port = running.server.server_address[1]
    line = b"X-Pad: " + b"a" * 2000 + b"\r\n"
    lines = MAX_HEAD_BYTES // len(line) + 2  # just over the limit, under the library's 100
    assert lines < 100
    head = b"POST /review HTTP/1.1\r\nHost: 127.0.0.1\r\n" + line * lines
    answer = _answer(port, head + b"Content-Length: 2\r\n\r\n{}")
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
    assert sim.count == 0
    # a head under the limit is read as before (here: no token, 401)
    small = b"POST /review HTTP/1.1\r\nHost: 127.0.0.1\r\n" + line * 2
    assert _answer(port, small + b"Content-Length: 2\r\n\r\n{}").startswith(b"HTTP/1.1 401 ")


def test_a_broken_connection_prints_no_traceback(
    sim_factory: Any, serve: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    sim = sim_factory()
    running: Running = serve(sim)
    port = running.server.server_address[1]
    for _ in range(5):  # a malformed head, and the client gone before the 400 is written
        sock = socket.create_connection(("127.0.0.1", port), timeout=10.0)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.sendall(b"POST /review HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n")
        sock.close()  # SO_LINGER 0: a reset, so the server's answer breaks
    running.halt()
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[:2000]
    assert "Exception occurred" not in err
