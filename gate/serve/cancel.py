"""Cutting an upstream exchange that nobody waits for any more.

Each request the service forwards has one :class:`Cancel`: it holds the exchange's
deadline (:class:`~gate.safe.watchdog.Watchdog`, which ``perform`` runs) and cuts it
early (:meth:`Cancel.cut`) when the client left or the shutdown's grace period ran out.
A cut request is never sealed: the service checks :attr:`Cancel.why` after the upstream
answered, and answers 503 (or nobody).

:class:`ClientWatch` is one thread for all requests: it waits (``selectors``) on the
client sockets of the requests being forwarded; a socket that becomes readable with
nothing to read is a client that closed its side, and its request is cut. The same thread
shuts down a connection whose request did not arrive within its deadline: the socket's own
timeout bounds each read, not a client that sends a byte just inside it, again and again.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time

from gate.safe.watchdog import Watchdog

#: how often the watch thread looks at its stop flag
POLL_S = 0.2


class Cancel:
    """One forwarded request's deadline, and the reason it was cut ("" while it was not)."""

    def __init__(self, deadline: float) -> None:
        self.watchdog = Watchdog(deadline)
        self._lock = threading.Lock()
        self.why = ""

    def cut(self, why: str) -> None:
        """Cut the upstream exchange now (the first reason stays)."""
        with self._lock:
            if self.why:
                return
            self.why = why
        self.watchdog.cut()


class ClientWatch:
    """One thread that cuts a request as soon as its client closes the connection, and
    shuts a connection down whose request did not arrive in time (:meth:`reading`)."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._reading: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="serve-client-watch", daemon=True)
        self._thread.start()

    def add(self, sock: socket.socket, cancel: Cancel) -> None:
        with self._lock, contextlib.suppress(ValueError, KeyError, OSError):
            self._selector.register(sock, selectors.EVENT_READ, cancel)

    def remove(self, sock: socket.socket) -> None:
        with self._lock, contextlib.suppress(ValueError, KeyError, OSError):
            self._selector.unregister(sock)

    def reading(self, sock: socket.socket, seconds: float) -> None:
        """``sock``'s request (its head and body) must arrive within ``seconds``: a client
        that sends a byte now and then (a slow-loris) is cut off then."""
        with self._lock:
            self._reading[sock] = time.monotonic() + seconds

    def read(self, sock: socket.socket) -> None:
        """``sock``'s request arrived (or the connection ends): no read deadline any more."""
        with self._lock:
            self._reading.pop(sock, None)

    def _expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            late = [sock for sock, until in self._reading.items() if until <= now]
            for sock in late:
                del self._reading[sock]
        for sock in late:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            self._selector.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._expire()
            with self._lock:
                empty = not self._selector.get_map()
            if empty:
                self._stop.wait(POLL_S)
                continue
            try:
                ready = self._selector.select(timeout=POLL_S)
            except (OSError, ValueError):
                self._stop.wait(POLL_S)
                continue
            for key, _ in ready:
                self._look(key)

    def _look(self, key: selectors.SelectorKey) -> None:
        sock = key.fileobj
        assert isinstance(sock, socket.socket)
        try:
            left = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return
        except OSError:
            left = True
        self.remove(sock)  # readable: either gone, or bytes the service will not read now
        if left:
            key.data.cut("client_gone")
