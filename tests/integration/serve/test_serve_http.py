"""``review-gate serve`` under abuse, on 127.0.0.1: tokens, Host and Origin, sizes, slots,
a slow upstream, a client that leaves, the health endpoint and what the log holds.

Every refusal is checked to have cost the upstream nothing (``sim.count``).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from typing import Any

import httpx
import pytest

from gate.lab.sim import SimResponse
from tests.integration.serve.conftest import BODY, GOOD, TOKEN, Running


def _wait(condition: Any, seconds: float = 10.0) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token-of-enough-length-000000", f"Basic {TOKEN}", f"Bearer {TOKEN}x"],
)
def test_a_bad_or_missing_token_is_401_and_never_reaches_the_upstream(
    sim_factory: Any, serve: Any, authorization: str | None
) -> None:
    sim = sim_factory()
    running: Running = serve(sim)
    headers = {} if authorization is None else {"authorization": authorization}
    response = running.post(BODY, token=None, **headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert sim.count == 0


def test_two_authorization_headers_are_refused(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory()
    running: Running = serve(sim)
    headers = [("authorization", f"Bearer {TOKEN}"), ("authorization", f"Bearer {TOKEN}")]
    response = httpx.post(running.url, content=BODY, headers=headers, timeout=10.0)
    assert response.status_code == 401
    assert sim.count == 0


@pytest.mark.parametrize(
    ("headers", "status", "reason"),
    [
        ({"host": "attacker.example"}, 403, "host_refused"),  # a rebound DNS name
        ({"host": "attacker.example:8430"}, 403, "host_refused"),
        ({"origin": "http://127.0.0.1:8430"}, 403, "origin_refused"),  # even a local page
        ({"origin": "null"}, 403, "origin_refused"),
        ({"sec-fetch-site": "cross-site"}, 403, "origin_refused"),
    ],
)
def test_a_web_page_cannot_drive_it(
    sim_factory: Any, serve: Any, headers: dict[str, str], status: int, reason: str
) -> None:
    sim = sim_factory()
    running: Running = serve(sim)
    response = running.post(BODY, **headers)
    assert response.status_code == status
    assert response.json()["error"]["type"] == reason
    assert sim.count == 0
    health = httpx.get(running.root + "/healthz", headers=headers, timeout=10.0)
    assert health.status_code == status


def test_a_host_allowed_by_the_operator_is_served(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory()
    running: Running = serve(sim, allowed_hosts=("reviewer.internal",))
    assert running.post(BODY, host="reviewer.internal:8430").status_code == 200
    assert running.post(BODY, host="localhost").status_code == 200
    assert running.post(BODY, host="other.internal").status_code == 403


def test_oversized_and_unframed_bodies_are_refused_before_reading(
    sim_factory: Any, serve: Any
) -> None:
    sim = sim_factory()
    running: Running = serve(sim, max_body_bytes=len(BODY))
    assert running.post(BODY).status_code == 200
    big = BODY[:-1] + b" " * 5000 + b"}"
    response = running.post(big)
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "body_too_large"
    chunked = httpx.post(
        running.url,
        content=iter([BODY]),  # a generator: sent chunked, without Content-Length
        headers={"authorization": f"Bearer {TOKEN}"},
        timeout=10.0,
    )
    assert chunked.status_code == 411
    assert sim.count == 1


def test_a_declared_length_never_sent_is_a_408_within_the_read_bound(
    sim_factory: Any, serve: Any
) -> None:
    sim = sim_factory()
    running: Running = serve(sim, client_read=0.5)
    port = running.server.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as sock:
        sock.sendall(
            b"POST /review HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
            + b'{"model"'
        )
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408")
    assert sim.count == 0


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"model":"m","model":"m","system":"s","user":"u","max_tokens":5,"temperature":0,'
        b'"nonce":"0123456789abcdef"}',
        json.dumps({k: v for k, v in GOOD.items() if k != "temperature"}).encode(),
        json.dumps({**GOOD, "max_tokens": True}).encode(),
        json.dumps({**GOOD, "model": ""}).encode(),
        # the nonce: the gate's fresh one, which the signature covers
        json.dumps({k: v for k, v in GOOD.items() if k != "nonce"}).encode(),
        json.dumps({**GOOD, "nonce": 12345678901234567890}).encode(),
        json.dumps({**GOOD, "nonce": "0" * 15}).encode(),
        json.dumps({**GOOD, "nonce": "0" * 129}).encode(),
    ],
)
def test_a_request_that_is_not_the_gates_is_400(sim_factory: Any, serve: Any, body: bytes) -> None:
    sim = sim_factory()
    running: Running = serve(sim)
    response = running.post(body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "bad_request"
    assert sim.count == 0


def test_other_paths_and_methods(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory()
    running: Running = serve(sim)
    headers = {"authorization": f"Bearer {TOKEN}"}
    assert httpx.post(running.root + "/v1", content=BODY, headers=headers).status_code == 404
    assert httpx.put(running.url, content=BODY, headers=headers).status_code == 405
    assert httpx.options(running.url).status_code == 405
    assert sim.count == 0


def _slow(seconds: float) -> SimResponse:
    """An answer streamed in pieces over about ``seconds``."""
    return SimResponse(content="z" * 400, segment_size=40, pause=seconds / 40)


def test_no_free_slot_is_a_clear_503_with_retry_after(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory(script=[_slow(1.5)])
    running: Running = serve(sim, max_concurrent=1)
    first: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: first.append(running.post(BODY)))
    thread.start()
    assert _wait(lambda: running.service.in_flight == 1)
    second = running.post(BODY)
    thread.join(timeout=30)
    assert second.status_code == 503
    assert second.headers["retry-after"].isdigit()
    assert "--max-concurrent" in second.json()["error"]["message"]
    assert first[0].status_code == 200  # the slow one was answered whole
    assert sim.count == 1


def test_a_slow_upstream_is_bounded_by_the_deadline(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory(script=[_slow(6.0)])
    running: Running = serve(sim, deadline=1.0)
    started = time.monotonic()
    response = running.post(BODY)
    assert response.status_code == 504
    assert time.monotonic() - started < 5.0
    assert "mc1-signature" not in response.headers


def test_a_client_that_leaves_cuts_the_upstream_request(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory(script=[SimResponse(content="w" * 300, stall_after=200)])
    running: Running = serve(sim, read_timeout=15.0, deadline=20.0)
    port = running.server.server_address[1]
    sock = socket.create_connection(("127.0.0.1", port), timeout=10.0)
    sock.sendall(
        b"POST /review HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(BODY)}\r\n\r\n".encode()
        + BODY
    )
    assert _wait(lambda: running.service.in_flight == 1)
    assert _wait(lambda: sim.count == 1)
    left = time.monotonic()
    sock.close()
    # the upstream exchange ends within the watch's poll, not after the 15 s read timeout
    assert _wait(lambda: running.service.in_flight == 0, seconds=5.0)
    assert time.monotonic() - left < 5.0
    assert _wait(lambda: any(" client_gone " in line for line in running.logs), seconds=5.0)


def test_health_says_up_reachable_and_the_key_id_and_nothing_secret(
    sim_factory: Any, serve: Any
) -> None:
    sim = sim_factory()
    running: Running = serve(sim, upstream_key="upstream-secret-key-value-1234")
    response = httpx.get(running.root + "/healthz", timeout=10.0)
    assert response.status_code == 200
    state = response.json()
    assert state["status"] == "up"
    assert state["upstream"] == "reachable"
    assert state["key_id"] == running.service.key_id
    assert TOKEN not in response.text
    assert "upstream-secret" not in response.text
    for _ in range(5):  # cached: health checks do not drive the upstream
        httpx.get(running.root + "/healthz", timeout=10.0)
    assert sim.model_lists <= 2


def test_the_log_holds_no_prompt_no_answer_and_no_secret(sim_factory: Any, serve: Any) -> None:
    planted_prompt, planted_answer = "PLANTED-PROMPT-7f3a9c", "PLANTED-ANSWER-c81e2d"
    upstream_key = "upstream-secret-key-value-5678"
    sim = sim_factory(
        lambda _: planted_answer,
        script=[
            SimResponse(content=planted_answer, finish="length"),  # refused: its detail
            SimResponse(status=400, error_body=json.dumps({"error": {"message": planted_prompt}})),
        ],
    )
    running: Running = serve(sim, upstream_key=upstream_key)
    request = {**GOOD, "system": planted_prompt, "user": planted_prompt, "max_tokens": 9}
    body = json.dumps(request).encode()
    statuses = [running.post(body).status_code for _ in range(3)]
    statuses.append(running.post(body, token=f"{TOKEN}-{planted_prompt}").status_code)
    assert statuses == [422, 422, 200, 401]
    assert sim.exchanges[0].headers["authorization"] == f"Bearer {upstream_key}"
    running.halt()
    text = "\n".join(running.logs)
    assert len(running.logs) >= 4
    for planted in (planted_prompt, planted_answer, TOKEN, upstream_key, "s3cr3t"):
        assert planted not in text


def test_a_client_that_trickles_its_request_is_cut_off_at_the_read_deadline(
    sim_factory: Any, serve: Any
) -> None:
    sim = sim_factory()
    running: Running = serve(sim, client_read=1.0)
    port = running.server.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as sock:
        sock.sendall(b"POST /review HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started, closed = time.monotonic(), False
        for _ in range(40):  # a header byte every 0.2 s, each inside the socket's timeout
            try:
                sock.sendall(b"X")
            except OSError:
                closed = True
                break
            readable, _, _ = select.select([sock], [], [], 0.2)
            if readable and not sock.recv(4096):
                closed = True
                break
    assert closed
    assert time.monotonic() - started < 4.0  # the 1 s deadline, not 40 bytes x 0.2 s
    assert sim.count == 0
