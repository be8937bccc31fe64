"""200 requests at once through ``review-gate serve``: every answer is a signed envelope or
a clear 503, threads stay bounded, and memory is flat from one wave to the next."""

from __future__ import annotations

import gc
import json
import threading
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from gate.decide.signature import (
    HEADER,
    check,
    prompt_sha256,
    public_key_from_pem,
    request_sha256,
)
from gate.lab.sim import ReviewerSimulator
from gate.serve.keys import public_path
from tests.integration.serve.conftest import TOKEN, Running

WAVE = 200
WAVES = 3
#: growth allowed between the first wave and the last (measured: ~70 KB over two waves;
#: a simulator that kept its ended threads grew 1.45 MB a wave)
FLAT_BYTES = 1024 * 1024


def _wave(running: Running, body: bytes) -> list[httpx.Response]:
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    barrier = threading.Barrier(WAVE, timeout=60)

    def one(_: int) -> httpx.Response:
        with httpx.Client(timeout=60.0) as client:
            barrier.wait()  # all 200 connect at once
            return client.post(running.url, content=body, headers=headers)

    with ThreadPoolExecutor(max_workers=WAVE) as pool:
        return list(pool.map(one, range(WAVE)))


def test_200_concurrent_requests_with_memory_flat(serve: Any) -> None:
    sim = ReviewerSimulator("openai", lambda _: "an answer " * 10, record=False)
    sim.start()
    running: Running = serve(sim, max_concurrent=32, max_connections=WAVE + 8)
    public = public_key_from_pem(public_path(running.key_path).read_bytes(), source="test")
    request = {"model": "m", "system": "s", "user": "u" * 2000, "max_tokens": 50}
    body = json.dumps({**request, "temperature": 0, "nonce": "0" * 32}).encode()
    digest, sent = prompt_sha256("s", "u" * 2000), request_sha256(body)
    threads_before = threading.active_count()
    tracemalloc.start()
    try:
        sizes = []
        for _ in range(WAVES):
            responses = _wave(running, body)
            statuses = {response.status_code for response in responses}
            assert statuses <= {200, 503}, statuses
            sealed = [r for r in responses if r.status_code == 200]
            assert sealed, "no request was answered"
            for response in sealed:
                check(
                    public,
                    response.headers[HEADER],
                    request_digest=sent,
                    prompt_digest=digest,
                    envelope=response.content,
                )
            for response in responses:
                if response.status_code == 503:
                    assert response.headers["retry-after"].isdigit()
            del responses, sealed
            gc.collect()
            sizes.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
        sim.stop()
    assert sizes[-1] - sizes[0] < FLAT_BYTES, sizes
    assert running.service.in_flight == 0
    assert threading.active_count() <= threads_before + 4  # connection threads all ended
