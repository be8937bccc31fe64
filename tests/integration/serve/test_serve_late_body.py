"""A request whose body arrives after the shutdown began is answered 503, never forwarded.

Outside attack of issue 33, item 2 (decision 0052). The shutdown cut the requests being
forwarded when it began; a request that had passed the ``stopping`` check and was still
reading its body was in no list: once its body arrived it was forwarded and sealed after
the service had said it stopped, outside the grace period, while the process was about
to exit under it.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from tests.integration.serve.conftest import BODY, TOKEN, Running


def test_a_body_that_arrives_after_the_shutdown_began_is_not_sealed(
    sim_factory: Any, serve: Any
) -> None:
    sim = sim_factory()
    running: Running = serve(sim, grace=0.5)
    port = running.server.server_address[1]
    head = (
        f"POST /review HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=15.0) as sock:
        sock.sendall(head + BODY[:-1])
        time.sleep(0.3)  # past the stopping check, reading the body
        running.stop.set()
        until = time.monotonic() + 5
        while not running.service.stopping.is_set() and time.monotonic() < until:
            time.sleep(0.02)
        time.sleep(1.0)  # the grace (0.5 s) is over, the cut made
        sock.sendall(BODY[-1:])
        answer = b""
        for _ in range(100):
            part = sock.recv(65536)
            if not part:
                break
            answer += part
    status = answer.split(b"\r\n", 1)[0]
    assert status.startswith(b"HTTP/1.1 503 "), answer[:200]
    assert b"mc1-signature" not in answer.lower()
    assert sim.count == 0
