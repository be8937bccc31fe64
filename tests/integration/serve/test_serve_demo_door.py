"""``demo --serve`` has ``review-gate serve``'s front door: the same ``Host``, ``Origin`` and
body-size refusals (gate/serve/door.py, one definition), before the body is read."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.serve.config import MAX_BODY_BYTES
from tests.integration.serve.conftest import TOKEN, Running

BODY = json.dumps({"model": "healthy", "messages": [], "stream": True}).encode()

#: (extra headers, the status both servers answer, the reason)
CASES = [
    ({"Host": "attacker.example"}, 403, "host_refused"),
    ({"Origin": "http://evil.example"}, 403, "origin_refused"),
    ({"Sec-Fetch-Site": "cross-site"}, 403, "origin_refused"),
    ({"Content-Length": str(MAX_BODY_BYTES + 1)}, 413, "body_too_large"),
]


def _raw(port: int, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    """One request as written (a header replaced, a length claimed and never sent)."""
    sent = {"Host": "127.0.0.1", "Content-Length": str(len(body)), **headers}
    head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items())
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as sock:
        sock.sendall(head.encode() + b"\r\n" + (body if len(body) < 1000 else b""))
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[int]:
    from gate.lab.serve import serve

    printed: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=serve,
        args=(tmp_path / "demo",),
        kwargs={"stop": stop, "report": printed.append, "seconds": 60},
    )
    thread.start()
    until = time.monotonic() + 10
    while not printed and time.monotonic() < until:
        time.sleep(0.02)
    url = "\n".join(printed).split(" at ", 1)[1].split()[0]
    yield int(url.split(":")[2].split("/")[0])
    stop.set()
    thread.join(10)
    assert not thread.is_alive()


@pytest.mark.parametrize(("headers", "status", "reason"), CASES)
def test_demo_serve_refuses_what_serve_refuses(
    demo: int, sim_factory: Any, serve: Any, headers: dict[str, str], status: int, reason: str
) -> None:
    answers = [_raw(demo, "/v1/chat/completions", headers, BODY)]
    running: Running = serve(sim_factory())
    port = running.server.server_address[1]
    answers.append(_raw(port, "/review", {**headers, "Authorization": f"Bearer {TOKEN}"}, BODY))
    for answer in answers:
        assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer[:80]
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["type"] == reason


def test_demo_serve_still_answers_a_local_client(demo: int) -> None:
    answer = _raw(demo, "/v1/chat/completions", {}, BODY)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"data: [DONE]" in answer
