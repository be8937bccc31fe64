"""A ``review-gate serve`` in this process, in front of a reviewer simulator, on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from gate.lab.sim import ReviewerSimulator
from gate.serve import keys
from gate.serve.config import ServeConfig
from gate.serve.handler import Server
from gate.serve.life import run, start
from gate.serve.service import Service

TOKEN = "tok-" + "s3cr3t-planted-token-value-0123456789"
#: the gate's request (gate.reviewers.mc1.build_request), with its fresh nonce
GOOD: dict[str, Any] = {
    "model": "m",
    "system": "s",
    "user": "u",
    "max_tokens": 50,
    "temperature": 0,
    "nonce": "0123456789abcdef0123456789abcdef",
}
BODY = json.dumps(GOOD).encode()


@dataclass
class Running:
    service: Service
    server: Server
    key_path: Path
    stop: threading.Event
    thread: threading.Thread
    logs: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/review"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def post(self, body: bytes, *, token: str | None = TOKEN, **headers: str) -> httpx.Response:
        sent = {"content-type": "application/json", "accept": "application/x-mc1", **headers}
        if token is not None:
            sent["authorization"] = f"Bearer {token}"
        return httpx.post(self.url, content=body, headers=sent, timeout=30.0)

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()


@pytest.fixture(scope="session")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("serve-key") / "reviewer.key"
    keys.new_key(path)
    return path


@pytest.fixture
def serve(key_path: Path) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def make(sim: ReviewerSimulator, *, check: bool = True, **overrides: Any) -> Running:
        values: dict[str, Any] = {
            "upstream": sim.base_url,
            "key_path": key_path,
            "token": TOKEN,
            "port": 0,
            "deadline": 20.0,
            "read_timeout": 10.0,
            "connect_timeout": 5.0,
            "grace": 5.0,
            **overrides,
        }
        logs: list[str] = []
        service, server = start(ServeConfig(**values), logs.append, check_upstream=check)
        stop = threading.Event()
        thread = threading.Thread(target=run, args=(service, server, stop), daemon=True)
        thread.start()
        running = Running(service, server, key_path, stop, thread, logs)
        started.append(running)
        return running

    yield make
    for running in started:
        running.halt()
