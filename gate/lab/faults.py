"""A fault-injecting TCP proxy: cut, flip or stall a server's response.

:class:`FaultProxy` listens on a TCP address, and for each client connection
opens a connection to the upstream, forwards everything the client sends, and
forwards the upstream's response with one fault applied (:class:`Fault`):

* ``cut`` after N response bytes: forward exactly N bytes, then close both
  connections (the client sees the peer close early);
* ``flip`` byte N: forward everything, with response byte N XOR-ed with a mask;
* ``stall`` after N bytes: forward N bytes, then send nothing more and hold the
  connection open until the client gives up or ``stall_seconds`` pass;
* ``reseal``: hold the whole HTTP response, and when its body is an MC1 envelope rewrite
  the answer (each ``"verdict": "fail"`` becomes ``"pass"``; with none, a space leads the
  content) and seal it again with a correct MC1 header, length and SHA-256 recomputed,
  under a new ``Content-Length``; every other header, ``mc1-signature`` included, is kept
  (:func:`reseal`). What a rewriting intermediary without the service's key can do: the
  envelope checks, only the signature can tell (decision record 0051).

Response bytes are counted from the first byte the upstream sends on that
connection (HTTP status line included). The fault can be changed between
connections (:attr:`FaultProxy.fault`); each connection uses the fault set when
it was accepted. Every socket operation has a timeout, the number of live
connections is bounded, and :meth:`FaultProxy.stop` (or leaving the ``with``
block) closes every socket and joins every thread it started.
"""

from __future__ import annotations

import contextlib
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType

from gate.errors import EnvelopeError, UsageError

#: How often the threads look at the stop flag (seconds).
POLL = 0.05
#: Bytes read from a socket at a time.
CHUNK = 65536
#: The most a reseal holds before it gives up and forwards what it has unchanged.
HOLD_LIMIT = 16 << 20


class FaultKind(StrEnum):
    NONE = "none"  # forward faithfully
    CUT = "cut"  # close after N response bytes
    FLIP = "flip"  # XOR response byte N with the mask
    STALL = "stall"  # stop forwarding after N response bytes
    RESEAL = "reseal"  # rewrite an MC1 answer and seal it again (no key)


@dataclass(frozen=True)
class Fault:
    """One fault, applied to one connection's response bytes."""

    kind: FaultKind = FaultKind.NONE
    at: int = 0
    mask: int = 0x01

    def __post_init__(self) -> None:
        if self.at < 0:
            raise UsageError(f"fault offset must be 0 or more, not {self.at}")
        if not 1 <= self.mask <= 0xFF:
            raise UsageError(f"flip mask must be 1..255, not {self.mask}")

    def describe(self) -> str:
        if self.kind is FaultKind.NONE:
            return "no fault"
        if self.kind is FaultKind.CUT:
            return f"cut after {self.at} bytes"
        if self.kind is FaultKind.FLIP:
            return f"flip byte {self.at} (xor 0x{self.mask:02x})"
        if self.kind is FaultKind.RESEAL:
            return "rewrite the MC1 answer and seal it again (no key)"
        return f"stall after {self.at} bytes"


@dataclass
class ConnectionRecord:
    """What one proxied connection carried (filled in while it runs)."""

    number: int
    fault: Fault
    request_bytes: int = 0
    upstream_bytes: int = 0  # response bytes read from the upstream
    client_bytes: int = 0  # response bytes forwarded to the client
    applied: bool = False  # the fault's offset was reached
    outcome: str = "open"  # closed | cut | stalled | upstream_unreachable | error: ...
    captured: bytearray = field(default_factory=bytearray, repr=False)
    held: bytearray = field(default_factory=bytearray, repr=False)  # reseal: the response so far
    done: threading.Event = field(default_factory=threading.Event, repr=False)


def parse_hostport(text: str, *, what: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``[v6]:PORT``) -> (host, port); a usage error names ``what``."""
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise UsageError(f"{what} must be HOST:PORT (for example 127.0.0.1:8080), not {text!r}")
    return host, int(port_text)


class FaultProxy:
    """A TCP proxy that applies one :class:`Fault` to each response it forwards.

    Use as a context manager (``with FaultProxy(...) as proxy:``) or call
    :meth:`start` and :meth:`stop`. ``listen`` port 0 picks an ephemeral port;
    :attr:`address` tells which. With ``once=True`` the proxy accepts a single
    connection, serves it, and stops accepting.
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        fault: Fault | None = None,
        *,
        listen: tuple[str, int] = ("127.0.0.1", 0),
        once: bool = False,
        connect_timeout: float = 5.0,
        io_timeout: float = 30.0,
        stall_seconds: float = 30.0,
        max_connections: int = 32,
        capture_limit: int = 1 << 20,
        max_records: int = 100_000,
        on_close: Callable[[ConnectionRecord], None] | None = None,
    ) -> None:
        self.upstream = upstream
        self.fault = fault if fault is not None else Fault()
        self.once = once
        self.connect_timeout = connect_timeout
        self.io_timeout = io_timeout
        self.stall_seconds = stall_seconds
        self.capture_limit = capture_limit
        self.max_records = max_records
        self.on_close = on_close
        #: The most recent connections (at most ``max_records``), oldest first.
        self.records: list[ConnectionRecord] = []
        self._accepted = 0
        self._slots = threading.BoundedSemaphore(max_connections)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._live: set[socket.socket] = set()
        self._accept_thread: threading.Thread | None = None
        self._accepted_all = threading.Event()
        family = socket.AF_INET6 if ":" in listen[0] else socket.AF_INET
        try:
            self._listener = socket.create_server(listen, family=family, backlog=max_connections)
        except OSError as err:
            raise UsageError(
                f"cannot listen on {listen[0]}:{listen[1]}: {err.strerror or err}; "
                "pick a free port (0 picks one)"
            ) from err
        self._listener.settimeout(POLL)
        self.address: tuple[str, int] = self._listener.getsockname()[:2]

    # -- life cycle -----------------------------------------------------------

    def __enter__(self) -> FaultProxy:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://host:port`` of the proxy (for use as a base URL)."""
        host, port = self.address
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def start(self) -> None:
        if self._accept_thread is not None:
            return
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name="fault-proxy-accept", daemon=True
        )
        self._accept_thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Close every socket and join every thread (bounded by ``timeout``)."""
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        end = time.monotonic() + timeout
        if self._accept_thread is not None:
            self._accept_thread.join(max(0.0, end - time.monotonic()))
        with self._lock:
            threads = list(self._threads)
            live = list(self._live)
        for sock in live:  # wake any thread blocked in a send to a client that stopped reading
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))

    def wait(self, timeout: float) -> bool:
        """Wait until every connection accepted so far has ended (with ``once``: until the
        one connection was accepted and served); True if they did within ``timeout``."""
        end = time.monotonic() + timeout
        if self.once and not self._accepted_all.wait(timeout):
            return False
        with self._lock:
            records = list(self.records)
        return all(rec.done.wait(max(0.0, end - time.monotonic())) for rec in records)

    def serve(self) -> None:
        """Run in the foreground until stopped (or, with ``once``, one connection served)."""
        self.start()
        try:
            while not self._stop.is_set():
                if self.once and self.wait(POLL):
                    break
                if not self.once:
                    self._stop.wait(POLL * 4)
        finally:
            self.stop()

    @property
    def alive_threads(self) -> int:
        """Threads of this proxy still running (0 after :meth:`stop`)."""
        with self._lock:
            threads = list(self._threads)
        if self._accept_thread is not None:
            threads.append(self._accept_thread)
        return sum(1 for thread in threads if thread.is_alive())

    # -- accepting ------------------------------------------------------------

    def _accept_loop(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    client, _ = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return  # listener closed by stop()
                if not self._slots.acquire(blocking=False):
                    client.close()  # over the bound: refuse rather than queue forever
                    continue
                with self._lock:
                    self._accepted += 1
                    record = ConnectionRecord(number=self._accepted, fault=self.fault)
                    self.records.append(record)
                    if len(self.records) > self.max_records:
                        del self.records[: len(self.records) - self.max_records]
                    thread = threading.Thread(
                        target=self._serve_one,
                        args=(client, record),
                        name=f"fault-proxy-conn-{record.number}",
                        daemon=True,
                    )
                    self._threads = [t for t in self._threads if t.is_alive()]
                    self._threads.append(thread)
                thread.start()
                if self.once:
                    with contextlib.suppress(OSError):
                        self._listener.close()
                    return
        finally:
            self._accepted_all.set()

    # -- one connection -------------------------------------------------------

    def _serve_one(self, client: socket.socket, record: ConnectionRecord) -> None:
        upstream: socket.socket | None = None
        self._track(client)
        try:
            client.settimeout(self.io_timeout)
            try:
                upstream = socket.create_connection(self.upstream, timeout=self.connect_timeout)
            except OSError as err:
                record.outcome = "upstream_unreachable"
                raise _Done from err
            self._track(upstream)
            upstream.settimeout(self.io_timeout)
            self._pump(client, upstream, record)
        except _Done:
            pass
        except OSError as err:
            record.outcome = f"error: {err.__class__.__name__}"
        finally:
            with self._lock:
                self._live.discard(client)
                if upstream is not None:
                    self._live.discard(upstream)
            _close(client)
            if upstream is not None:
                _close(upstream)
            if record.outcome == "open":
                record.outcome = "closed"
            record.done.set()
            self._slots.release()
            if self.on_close is not None:
                with contextlib.suppress(OSError, ValueError):  # e.g. stderr closed
                    self.on_close(record)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._live.add(sock)
        if self._stop.is_set():  # stop() ran before this socket was tracked
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _pump(self, client: socket.socket, upstream: socket.socket, rec: ConnectionRecord) -> None:
        fault = rec.fault
        client_open = True
        idle_since = time.monotonic()
        with selectors.DefaultSelector() as sel:
            sel.register(client, selectors.EVENT_READ)
            sel.register(upstream, selectors.EVENT_READ)
            while not self._stop.is_set():
                events = sel.select(POLL)
                now = time.monotonic()
                if not events:
                    if now - idle_since > self.io_timeout:
                        rec.outcome = "idle_timeout"
                        return
                    continue
                idle_since = now
                for key, _ in events:
                    sock = key.fileobj
                    if sock is client:
                        data = client.recv(CHUNK)
                        if not data:  # client finished sending (or left)
                            sel.unregister(client)
                            client_open = False
                            with contextlib.suppress(OSError):
                                upstream.shutdown(socket.SHUT_WR)
                            continue
                        rec.request_bytes += len(data)
                        upstream.sendall(data)
                        continue
                    data = upstream.recv(CHUNK)
                    if not data:
                        self._release(client, rec, ended=True)
                        return  # upstream finished: the client gets a clean close
                    if self._forward(client, data, rec, fault, client_open):
                        return

    def _forward(
        self,
        client: socket.socket,
        data: bytes,
        rec: ConnectionRecord,
        fault: Fault,
        client_open: bool,
    ) -> bool:
        """Forward one upstream chunk with the fault applied; True ends the connection."""
        start = rec.upstream_bytes
        rec.upstream_bytes += len(data)
        if fault.kind is FaultKind.RESEAL and not rec.applied:
            rec.held += data
            self._release(client, rec, ended=False)
            return False
        out = data
        stop_after = False
        if fault.kind in (FaultKind.CUT, FaultKind.STALL) and start + len(data) >= fault.at:
            out = data[: max(0, fault.at - start)]
            stop_after = True
        elif fault.kind is FaultKind.FLIP and start <= fault.at < start + len(data):
            index = fault.at - start
            out = data[:index] + bytes([data[index] ^ fault.mask]) + data[index + 1 :]
            rec.applied = True
        if out:
            room = self.capture_limit - len(rec.captured)
            if room > 0:
                rec.captured += out[:room]
            client.sendall(out)
            rec.client_bytes += len(out)
        if not stop_after:
            return False
        rec.applied = True
        if fault.kind is FaultKind.CUT:
            rec.outcome = "cut"
            return True
        rec.outcome = "stalled"
        self._hold(client, client_open)
        return True

    def _send(self, client: socket.socket, rec: ConnectionRecord, out: bytes) -> None:
        room = self.capture_limit - len(rec.captured)
        if room > 0:
            rec.captured += out[:room]
        client.sendall(out)
        rec.client_bytes += len(out)

    def _release(self, client: socket.socket, rec: ConnectionRecord, *, ended: bool) -> None:
        """Reseal: once the held response is whole (or the upstream ended, or it passed
        :data:`HOLD_LIMIT`), send it rewritten and forward the rest as it comes."""
        if rec.applied or not rec.held:
            return
        whole = response_end(bytes(rec.held))
        if whole is None and not ended and len(rec.held) <= HOLD_LIMIT:
            return
        held = bytes(rec.held)
        cut = whole if whole is not None else len(held)
        rec.held.clear()
        rec.applied = True
        self._send(client, rec, reseal(held[:cut]) + held[cut:])

    def _hold(self, client: socket.socket, client_open: bool) -> None:
        """Stall: send nothing until the client leaves, stop() or ``stall_seconds``."""
        end = time.monotonic() + self.stall_seconds
        while not self._stop.is_set() and time.monotonic() < end:
            if not client_open:
                self._stop.wait(POLL)
                continue
            client.settimeout(POLL)
            try:
                if not client.recv(CHUNK):
                    return  # the client gave up
            except TimeoutError:
                continue


#: a verdict a rewriting intermediary turns into a pass
_FAIL_VERDICT = re.compile(rb'"verdict"\s*:\s*"fail"')
_HEAD_END = b"\r\n\r\n"


def _header_lines(head: bytes) -> list[bytes]:
    return head.split(b"\r\n")[1:]


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in _header_lines(head):
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == name:
            return value.strip()
    return None


def _chunks(body: bytes) -> tuple[bytes, int] | None:
    """(the payload, the bytes of ``body`` its chunked framing took), or None while the
    terminal chunk has not arrived (at most one pass over ``body``)."""
    payload, at = bytearray(), 0
    while True:
        line_end = body.find(b"\r\n", at)
        if line_end < 0:
            return None
        try:
            size = int(body[at:line_end].split(b";")[0].strip() or b"x", 16)
        except ValueError:
            return None
        start = line_end + 2
        if size == 0:
            trailer_end = body.find(b"\r\n", start)
            return (bytes(payload), trailer_end + 2) if trailer_end >= 0 else None
        if len(body) < start + size + 2:
            return None
        payload += body[start : start + size]
        at = start + size + 2


def response_end(data: bytes) -> int | None:
    """How many bytes of ``data`` make one whole HTTP response (by ``Content-Length`` or the
    terminal chunk), or None while it is not whole (or its end cannot be told)."""
    head_end = data.find(_HEAD_END)
    if head_end < 0:
        return None
    head, body = data[:head_end], data[head_end + 4 :]
    if b"chunked" in (_header(head, b"transfer-encoding") or b"").lower():
        framed = _chunks(body)
        return None if framed is None else head_end + 4 + framed[1]
    length = _header(head, b"content-length")
    if length is None or not length.isdigit():
        return None
    end = head_end + 4 + int(length)
    return end if len(data) >= end else None


def reseal(response: bytes) -> bytes:
    """``response`` with its MC1 answer rewritten and sealed again, its framing now one
    ``Content-Length``; every other header kept. A response whose body is no whole MC1
    envelope is returned unchanged."""
    from gate.decide.envelope import seal, verify_text

    head, sep, body = response.partition(_HEAD_END)
    if not sep:
        return response
    if b"chunked" in (_header(head, b"transfer-encoding") or b"").lower():
        framed = _chunks(body)
        if framed is None:
            return response
        body = framed[0]
    try:
        content = verify_text(body).encode("utf-8")
    except EnvelopeError:
        return response
    rewritten = _FAIL_VERDICT.sub(b'"verdict": "pass"', content)
    if rewritten == content:
        rewritten = b" " + content
    envelope = seal(rewritten)
    framing = (b"content-length", b"transfer-encoding")
    kept = [
        line
        for line in _header_lines(head)
        if line.partition(b":")[0].strip().lower() not in framing
    ]
    status = head.split(b"\r\n", 1)[0]
    lines = [status, *kept, b"Content-Length: %d" % len(envelope)]
    return b"\r\n".join(lines) + _HEAD_END + envelope


class _Done(Exception):
    """Internal: end this connection quietly."""


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
