"""``review-gate serve`` as a process: ``--new-key``, start-up errors that name the setting,
and a graceful stop on SIGTERM (in-flight requests finish or are cut, never sealed)."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from gate.lab.sim import SimResponse
from tests.integration.serve.conftest import GOOD, TOKEN

EXE = [sys.executable, "-m", "gate"]
BODY = json.dumps({**GOOD, "nonce": "0" * 32}).encode()
HEADERS = {"authorization": f"Bearer {TOKEN}"}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEW_GATE")}
    env.update({"REVIEW_GATE_API_KEY": TOKEN, "NO_PROXY": "127.0.0.1", **extra})
    return env


def _run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXE, "serve", *args], capture_output=True, text=True, timeout=60, env=_env(**extra)
    )


def test_new_key_writes_the_pair_once(tmp_path: Path) -> None:
    path = tmp_path / "reviewer.key"
    made = _run("--new-key", str(path))
    assert made.returncode == 0, made.stderr
    assert re.fullmatch(r"ed25519:[0-9a-f]{16}\n", made.stdout)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert b"BEGIN PRIVATE KEY" in path.read_bytes()
    assert b"BEGIN PUBLIC KEY" in (tmp_path / "reviewer.key.pub").read_bytes()
    before = path.read_bytes()
    again = _run("--new-key", str(path))
    assert again.returncode == 2
    assert "never overwritten" in again.stderr
    assert path.read_bytes() == before


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "k"
    assert _run("--new-key", str(path)).returncode == 0
    return path


class _OtherDialect(BaseHTTPRequestHandler):
    """Ollama's own API shape at /models: a list, but not the OpenAI one."""

    def do_GET(self) -> None:
        body = b'{"models": [{"name": "llama3"}]}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def other_dialect() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _OtherDialect)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_start_up_errors_name_the_setting(
    tmp_path: Path, key: Path, sim_factory: Any, other_dialect: str
) -> None:
    sim = sim_factory()
    bad_key = tmp_path / "bad.key"
    bad_key.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    free = sim.base_url.replace(str(sim.port), "9")  # the discard port: nothing listens
    cases = [
        (("--key", str(bad_key), "--upstream", sim.base_url), {}, "--key"),
        (("--key", str(tmp_path / "none"), "--upstream", sim.base_url), {}, "--new-key"),
        (("--key", str(key), "--upstream", free), {}, "cannot reach the upstream"),
        (("--key", str(key), "--upstream", sim.base_url[:-3]), {}, "ending in /v1"),
        (("--key", str(key), "--upstream", other_dialect), {}, "OpenAI dialect"),
        (("--key", str(key), "--upstream", sim.base_url), {"REVIEW_GATE_API_KEY": ""}, "token"),
        (("--key", str(key), "--upstream", sim.base_url), {"REVIEW_GATE_API_KEY": "x"}, "fewer"),
        (("--key", str(key), "--upstream", "localhost:8080"), {}, "--upstream"),
    ]
    for args, env, words in cases:
        done = _run(*args, "--port", "0", **env)
        assert done.returncode == 2, (args, done.stderr)
        assert words in done.stderr, (args, done.stderr)
        assert TOKEN not in done.stderr
    assert all(asked.method == "GET" for asked in sim.exchanges)  # no question was sent


def _start(key: Path, upstream: str, *more: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*EXE, "serve", "--key", str(key), "--upstream", upstream, "--port", "0", *more],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    assert process.stderr is not None
    for _ in range(50):  # bounded: the line comes within a few seconds
        line = process.stderr.readline()
        found = re.search(r"listening on (http://[^\s,]+)", line)
        if found:
            return process, found.group(1)
    process.kill()
    raise AssertionError("serve did not say where it listens")


def _in_flight(url: str, sim: Any) -> tuple[threading.Thread, list[httpx.Response]]:
    """The gate's request posted from a thread, returned once the simulator has it (or
    after 10 s); its answer lands in the list."""
    answers: list[httpx.Response] = []
    thread = threading.Thread(
        target=lambda: answers.append(httpx.post(url, content=BODY, headers=HEADERS, timeout=30))
    )
    thread.start()
    until = time.monotonic() + 10
    while sim.count == 0 and time.monotonic() < until:
        time.sleep(0.02)
    return thread, answers


def test_sigterm_lets_a_request_finish_within_the_grace(key: Path, sim_factory: Any) -> None:
    sim = sim_factory(script=[SimResponse(content="v" * 400, segment_size=40, pause=0.05)])
    process, url = _start(key, sim.base_url, "--grace", "20")
    thread, answers = _in_flight(url, sim)
    process.send_signal(signal.SIGTERM)
    thread.join(timeout=30)
    assert process.wait(timeout=30) == 0
    assert answers[0].status_code == 200
    assert "mc1-signature" in answers[0].headers
    with pytest.raises(httpx.ConnectError):  # no longer accepting
        httpx.post(url, content=BODY, headers=HEADERS, timeout=5)


def test_sigterm_cuts_what_the_grace_does_not_cover_and_never_seals_it(
    key: Path, sim_factory: Any
) -> None:
    sim = sim_factory(script=[SimResponse(content="v" * 300, stall_after=250)])
    process, url = _start(key, sim.base_url, "--grace", "0.5", "--read-timeout", "60")
    thread, answers = _in_flight(url, sim)
    stopped = time.monotonic()
    process.send_signal(signal.SIGTERM)
    thread.join(timeout=30)
    assert process.wait(timeout=30) == 0
    assert time.monotonic() - stopped < 15  # the grace, the cut, the 503: not the 60 s
    assert answers[0].status_code == 503
    assert "mc1-signature" not in answers[0].headers
    assert not answers[0].content.startswith(b"MC1 ")
    assert process.stderr is not None
    assert "1 request(s) cut unsealed" in process.stderr.read()
