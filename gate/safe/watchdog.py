"""The one request deadline over httpx: shut the connection's sockets down when it passes.

httpx has only per-operation timeouts, so an answer (its head or its body) trickled a
byte just inside the read timeout would hold the caller for as long as the sender
likes. The sockets are learnt through httpx's public ``trace`` extension as each
connection is made (TCP connect, TLS start, through a proxy or not), kept in a weak
set, and shut down when the timer fires; a socket learnt after that is shut down at
once. The reviewer transport (:mod:`gate.reviewers.base`, one client per attempt) and
the gate's GitHub client (:mod:`gate.action.github.http`, a pool whose kept-alive
sockets it passes in, since a request on a kept connection makes no new one) both use it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from collections.abc import Mapping
from typing import Any

#: the trace events that hand over a connected stream (its socket is in its extra info)
SOCKET_EVENTS = frozenset(
    f"{layer}.{step}.complete"
    for layer in ("connection", "proxy", "socks")
    for step in ("connect_tcp", "start_tls")
)


class Watchdog:
    """A deadline of ``seconds`` over the sockets in ``sockets`` (a fresh set when None).

    Use as a context manager around the exchange and pass :meth:`trace` as httpx's
    ``trace`` extension; ``fired`` says whether the deadline passed while armed."""

    def __init__(
        self, seconds: float, sockets: weakref.WeakSet[socket.socket] | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._sockets: weakref.WeakSet[socket.socket] = (
            weakref.WeakSet() if sockets is None else sockets
        )
        self.fired = False
        self._armed = True
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disarm()
        self._timer.join()

    def disarm(self) -> None:
        """The exchange is over: a later deadline means nothing."""
        with self._lock:
            self._armed = False
        self._timer.cancel()

    def trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name not in SOCKET_EVENTS:
            return
        getter = getattr(info.get("return_value"), "get_extra_info", None)
        sock = getter("socket") if getter is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.add(sock)
                if self.fired:
                    _shutdown(sock)

    def cut(self) -> None:
        """End the exchange now, as the deadline would (a caller that must stop it early:
        ``review-gate serve`` when its client left or its grace period ran out)."""
        self._fire()

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self.fired = True
            for sock in list(self._sockets):
                _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    # the plain socket method, so a TLS socket's state is left to its reader
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
