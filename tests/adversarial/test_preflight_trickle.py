"""A server that trickles the head of its context answer (a byte just inside the read
timeout, again and again) cannot hold the preflight past its deadline.

``gate.reviewers.window`` promised a deadline over each ask, but checked it only between
pieces of the body: httpx's timeouts are per read, so a status line and headers sent a
byte at a time kept the review waiting for as long as the server liked (and then the
size it told was believed). Outside attack of issue 33, item 1 (decision 0050).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from gate.errors import ContextUnknown
from gate.reviewers import window
from gate.reviewers.settings import ReviewerSettings

BODY = b'{"default_generation_settings": {"n_ctx": 100000}}'
HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    + b"X-Pad: "
    + b"a" * 40
    + b"\r\nContent-Length: %d\r\n\r\n" % len(BODY)
)
#: one byte of the head every TRICKLE_S seconds: inside any read timeout used below
TRICKLE_S = 0.1


@pytest.fixture
def trickling_port() -> Iterator[int]:
    """A server that answers every connection's request a byte of the head at a time
    (bounded: the whole answer takes len(HEAD) * TRICKLE_S, about 9 s)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.05)
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2.0)
            try:
                conn.recv(65536)
                for index in range(len(HEAD)):
                    if stop.wait(TRICKLE_S):
                        return
                    conn.sendall(HEAD[index : index + 1])
                conn.sendall(BODY)
            except OSError:
                return

    def serve() -> None:
        until = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < until:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    listener.close()


def test_a_trickled_head_is_cut_at_the_preflight_deadline(
    trickling_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(window, "DEADLINE_S", 1.0)
    settings = ReviewerSettings(
        provider="openai",
        model="m",
        base_url=f"http://127.0.0.1:{trickling_port}/v1",
        context_window="llama.cpp",
        connect_timeout=2.0,
        read_timeout=2.0,  # each byte arrives well inside it
    )
    started = time.monotonic()
    with pytest.raises(ContextUnknown) as err:
        window.context_of(settings)
    took = time.monotonic() - started
    assert took < 3.0, f"the preflight took {took:.1f}s past its 1s deadline"
    assert err.value.reason == "context_window_unreachable"
