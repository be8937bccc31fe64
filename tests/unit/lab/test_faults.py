"""The fault proxy against a tiny upstream socket server, through real sockets."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.errors import UsageError
from gate.lab.faults import Fault, FaultKind, FaultProxy, parse_hostport

REPO = Path(__file__).resolve().parents[3]
REQUEST = b"GET /thing HTTP/1.1\r\nHost: upstream\r\n\r\n"
RESPONSE = bytes(range(256)) * 4  # 1024 bytes, every byte value, so a flip is visible


class Upstream:
    """Reads one request (up to the blank line), answers RESPONSE in pieces, closes."""

    def __init__(self, response: bytes = RESPONSE, piece: int = 100) -> None:
        self.response = response
        self.piece = piece
        self.requests: list[bytes] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.05)
        self.address: tuple[str, int] = self._server.getsockname()[:2]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Upstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._server.close()
        assert not self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                data = b""
                with contextlib.suppress(OSError):
                    while b"\r\n\r\n" not in data:
                        got = conn.recv(4096)
                        if not got:
                            break
                        data += got
                    self.requests.append(data)
                    for start in range(0, len(self.response), self.piece):
                        conn.sendall(self.response[start : start + self.piece])


def fetch(address: tuple[str, int], *, timeout: float = 5.0) -> tuple[bytes, str]:
    """Send REQUEST, read until EOF or timeout; return (bytes, 'eof' | 'timeout')."""
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.sendall(REQUEST)
        got = b""
        while True:
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                return got, "timeout"
            except ConnectionResetError:
                return got, "reset"
            if not chunk:
                return got, "eof"
            got += chunk


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


def test_no_fault_forwards_request_and_response_exactly(upstream: Upstream) -> None:
    with FaultProxy(upstream.address) as proxy:
        got, end = fetch(proxy.address)
        assert proxy.wait(5)
    assert (got, end) == (RESPONSE, "eof")
    assert upstream.requests == [REQUEST]
    rec = proxy.records[0]
    assert (rec.request_bytes, rec.upstream_bytes, rec.client_bytes) == (len(REQUEST), 1024, 1024)
    assert rec.outcome == "closed"
    assert not rec.applied
    assert bytes(rec.captured) == RESPONSE


@pytest.mark.parametrize("at", [0, 1, 99, 100, 101, 517, 1023])
def test_cut_forwards_exactly_n_bytes_then_closes(upstream: Upstream, at: int) -> None:
    with FaultProxy(upstream.address, Fault(FaultKind.CUT, at)) as proxy:
        got, end = fetch(proxy.address)
        assert proxy.wait(5)
    assert got == RESPONSE[:at]
    assert end in ("eof", "reset")
    assert proxy.records[0].outcome == "cut"
    assert proxy.records[0].client_bytes == at


def test_cut_past_the_end_forwards_everything(upstream: Upstream) -> None:
    with FaultProxy(upstream.address, Fault(FaultKind.CUT, 5000)) as proxy:
        got, end = fetch(proxy.address)
        assert proxy.wait(5)
    assert (got, end) == (RESPONSE, "eof")
    assert not proxy.records[0].applied


@pytest.mark.parametrize("at", [0, 99, 100, 1023])
def test_flip_changes_exactly_one_byte(upstream: Upstream, at: int) -> None:
    with FaultProxy(upstream.address, Fault(FaultKind.FLIP, at)) as proxy:
        got, end = fetch(proxy.address)
        assert proxy.wait(5)
    assert end == "eof"
    assert len(got) == len(RESPONSE)
    diffs = [i for i in range(len(got)) if got[i] != RESPONSE[i]]
    assert diffs == [at]
    assert got[at] == RESPONSE[at] ^ 0x01
    assert proxy.records[0].applied


def test_flip_with_mask_and_past_the_end(upstream: Upstream) -> None:
    with FaultProxy(upstream.address, Fault(FaultKind.FLIP, 3, mask=0xFF)) as proxy:
        got, _ = fetch(proxy.address)
        proxy.fault = Fault(FaultKind.FLIP, 4096)
        unchanged, _ = fetch(proxy.address)
    assert got[3] == RESPONSE[3] ^ 0xFF
    assert unchanged == RESPONSE
    assert [rec.applied for rec in proxy.records] == [True, False]


def test_stall_sends_n_bytes_then_nothing_until_client_leaves(upstream: Upstream) -> None:
    with FaultProxy(upstream.address, Fault(FaultKind.STALL, 250)) as proxy:
        got, end = fetch(proxy.address, timeout=0.3)
        assert proxy.wait(5)  # the client left, so the stalled connection ends
    assert (got, end) == (RESPONSE[:250], "timeout")
    assert proxy.records[0].outcome == "stalled"
    assert proxy.alive_threads == 0


def test_stall_is_released_by_stop(upstream: Upstream) -> None:
    proxy = FaultProxy(upstream.address, Fault(FaultKind.STALL, 10), stall_seconds=60)
    proxy.start()
    with socket.create_connection(proxy.address, timeout=5) as sock:
        sock.sendall(REQUEST)
        first = b""
        while len(first) < 10:
            first += sock.recv(100)
        proxy.stop()
        assert sock.recv(100) == b""  # stop() closed the held connection
    assert first == RESPONSE[:10]
    assert proxy.alive_threads == 0


def test_fault_is_chosen_per_connection(upstream: Upstream) -> None:
    with FaultProxy(upstream.address) as proxy:
        results = []
        for at in (5, 50, 500):
            proxy.fault = Fault(FaultKind.CUT, at)
            results.append(fetch(proxy.address)[0])
    assert results == [RESPONSE[:5], RESPONSE[:50], RESPONSE[:500]]
    assert [rec.fault.at for rec in proxy.records] == [5, 50, 500]


def test_once_serves_one_connection_then_refuses(upstream: Upstream) -> None:
    with FaultProxy(upstream.address, Fault(FaultKind.CUT, 7), once=True) as proxy:
        got, _ = fetch(proxy.address)
        assert proxy.wait(5)
        with pytest.raises(ConnectionRefusedError):  # the listener is closed
            fetch(proxy.address, timeout=1)
    assert got == RESPONSE[:7]
    assert len(proxy.records) == 1


def test_unreachable_upstream_closes_the_client() -> None:
    # Bound but never listening: connections are refused, and the port stays
    # reserved so the proxy's own listener cannot be handed the same port.
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        dead = placeholder.getsockname()[:2]
        with FaultProxy(dead, connect_timeout=1) as proxy:
            got, end = fetch(proxy.address)
            assert proxy.wait(5)
    assert got == b""
    assert end in ("eof", "reset")
    assert proxy.records[0].outcome == "upstream_unreachable"


def test_connections_are_bounded(upstream: Upstream) -> None:
    with FaultProxy(upstream.address, Fault(FaultKind.STALL, 0), max_connections=1) as proxy:
        held = socket.create_connection(proxy.address, timeout=5)
        held.sendall(REQUEST)
        deadline = time.monotonic() + 5
        while not proxy.records and time.monotonic() < deadline:
            time.sleep(0.01)
        got, end = fetch(proxy.address, timeout=2)  # over the bound: refused, not queued
        held.close()
    assert (got, end) in ((b"", "eof"), (b"", "reset"))
    assert len(proxy.records) == 1


def test_stop_leaves_no_thread_behind(upstream: Upstream) -> None:
    before = threading.active_count()
    with FaultProxy(upstream.address, Fault(FaultKind.CUT, 10)) as proxy:
        for _ in range(5):
            fetch(proxy.address)
    assert proxy.alive_threads == 0
    assert threading.active_count() == before


def test_bad_addresses_and_offsets_are_usage_errors() -> None:
    assert parse_hostport("127.0.0.1:80", what="--listen") == ("127.0.0.1", 80)
    assert parse_hostport("[::1]:9", what="--listen") == ("::1", 9)
    for bad in ("127.0.0.1", ":80", "host:port", "h:70000"):
        with pytest.raises(UsageError, match="--upstream must be HOST:PORT"):
            parse_hostport(bad, what="--upstream")
    with pytest.raises(UsageError, match="offset"):
        Fault(FaultKind.CUT, -1)
    with pytest.raises(UsageError, match="mask"):
        Fault(FaultKind.FLIP, 0, mask=0)


def test_cli_once_cuts_and_exits(upstream: Upstream) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    cmd = [sys.executable, "-m", "gate", "fault-proxy", "--listen", f"127.0.0.1:{port}"]
    cmd += ["--upstream", f"{upstream.address[0]}:{upstream.address[1]}"]
    cmd += ["--cut-after", "33", "--once"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline()
        assert f"listening on 127.0.0.1:{port}" in banner
        assert "cut after 33 bytes" in banner
        got, _ = fetch(("127.0.0.1", port))
        rest = proc.communicate(timeout=10)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert got == RESPONSE[:33]
    assert proc.returncode == 0
    assert "33 bytes out, cut" in rest


def test_cli_rejects_two_faults() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "gate", "fault-proxy", "--listen", "127.0.0.1:0"]
    cmd += ["--upstream", "127.0.0.1:1", "--cut-after", "1", "--flip-at", "2"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "not allowed with argument" in proc.stderr


def test_stop_releases_a_send_to_a_client_that_stopped_reading() -> None:
    big = b"x" * (16 << 20)  # far more than the socket buffers hold
    with Upstream(response=big, piece=1 << 16) as server:
        proxy = FaultProxy(server.address, io_timeout=60)
        proxy.start()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(5)
            sock.connect(proxy.address)
            sock.sendall(REQUEST)
            deadline, seen = time.monotonic() + 10, -1
            while time.monotonic() < deadline:  # until the proxy is stuck sending to us
                time.sleep(0.05)
                now = proxy.records[0].client_bytes if proxy.records else 0
                if now > 0 and now == seen:
                    break
                seen = now
            proxy.stop()  # the proxy thread is blocked in sendall to us: stop must free it
            # Still connected and not reading; stop() joins for at most 5 s.
            assert proxy.alive_threads == 0
    assert 0 < proxy.records[0].client_bytes < len(big)


def test_records_are_bounded_and_reported_as_they_close(upstream: Upstream) -> None:
    closed: list[tuple[int, str]] = []
    with FaultProxy(
        upstream.address,
        Fault(FaultKind.CUT, 9),
        max_records=2,
        on_close=lambda rec: closed.append((rec.number, rec.outcome)),
    ) as proxy:
        for _ in range(5):
            fetch(proxy.address)
            assert proxy.wait(5)
    assert [rec.number for rec in proxy.records] == [4, 5]
    assert closed == [(n, "cut") for n in range(1, 6)]


def test_cli_ctrl_c_stops_cleanly(upstream: Upstream) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "gate", "fault-proxy", "--listen", "127.0.0.1:0"]
    cmd += ["--upstream", f"{upstream.address[0]}:{upstream.address[1]}", "--flip-at", "0"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline()
        port = int(banner.split("listening on 127.0.0.1:")[1].split(",")[0])
        got, _ = fetch(("127.0.0.1", port))
        live = proc.stderr.readline()  # reported when the connection closes, not at exit
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=10)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert got[0] == RESPONSE[0] ^ 0x01
    assert "connection 1: request 39 bytes, response 1024 bytes in, 1024 bytes out" in live
    assert proc.returncode == 0
    assert "fault-proxy: stopped" in rest


# --- reseal: a rewriting hop without the key ---------------------------------------------


def _mc1_response(content: bytes, *, chunked: bool) -> bytes:
    from gate.decide.envelope import seal

    envelope = seal(content)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-mc1\r\nmc1-signature: kept\r\n"
    if chunked:
        half = len(envelope) // 2
        body = b"".join(
            b"%x\r\n%s\r\n" % (len(part), part) for part in (envelope[:half], envelope[half:])
        )
        return head + b"Transfer-Encoding: chunked\r\n\r\n" + body + b"0\r\n\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(envelope) + envelope


@pytest.mark.parametrize("chunked", [False, True])
def test_reseal_turns_a_fail_into_a_pass_sealed_again_keeping_the_other_headers(
    chunked: bool,
) -> None:
    from gate.decide.envelope import verify_text
    from gate.lab.faults import reseal, response_end

    original = _mc1_response(b'```json\n{"verdict": "fail"}\n```\n', chunked=chunked)
    assert response_end(original) == len(original)
    assert response_end(original[:-1]) is None
    rewritten = reseal(original)
    head, _, body = rewritten.partition(b"\r\n\r\n")
    assert b"mc1-signature: kept" in head
    assert b"Transfer-Encoding" not in head
    assert f"Content-Length: {len(body)}".encode() in head
    assert verify_text(body) == '```json\n{"verdict": "pass"}\n```\n'
    assert response_end(rewritten) == len(rewritten)


def test_reseal_changes_an_answer_without_a_fail_and_leaves_other_bodies_alone() -> None:
    from gate.decide.envelope import verify_text
    from gate.lab.faults import reseal

    original = _mc1_response(b"pass", chunked=False)
    assert verify_text(reseal(original).partition(b"\r\n\r\n")[2]) == " pass"
    plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    assert reseal(plain) == plain
    assert Fault(FaultKind.RESEAL).describe().startswith("rewrite the MC1 answer")


def test_reseal_through_the_proxy_sends_the_rewritten_response() -> None:
    from gate.decide.envelope import verify_text

    original = _mc1_response(b'{"verdict": "fail"}', chunked=True)
    server = Upstream(original, piece=7)
    with server, FaultProxy(server.address, Fault(FaultKind.RESEAL)) as proxy:
        got, how = fetch(proxy.address)
        assert proxy.wait(5)
    assert how == "eof"
    body = got.partition(b"\r\n\r\n")[2]
    assert verify_text(body) == '{"verdict": "pass"}'
    assert proxy.records[0].applied


def test_the_command_line_offers_the_reseal() -> None:
    from gate.cli import build_parser
    from gate.commands.fault_proxy import fault_from_args

    args = build_parser().parse_args(
        ["fault-proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--reseal"]
    )
    assert fault_from_args(args) == Fault(FaultKind.RESEAL)
    with pytest.raises(SystemExit):
        build_parser().parse_args(
            ["fault-proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--reseal",
             "--cut-after", "3"]
        )  # fmt: skip
