"""What every request of ``review-gate serve`` shares: the token, slots, in-flight requests.

:meth:`Service.drain` is the end of a graceful shutdown: the requests in flight may
finish within ``grace`` seconds; the rest are cut (:meth:`gate.serve.cancel.Cancel.cut`:
each is answered 503, never sealed), and so is a request whose body was still arriving
then (it is forwarded only after the grace, so drain's cut could not see it).

The log (``log``, one line a call) holds request ids, statuses, reason codes, sizes and
times: never a prompt, an answer, a header's value or a secret.
"""

from __future__ import annotations

import contextlib
import hmac
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from gate.serve.cancel import Cancel, ClientWatch
from gate.serve.door import Door
from gate.serve.probe import Health

if TYPE_CHECKING:
    import socket

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from gate.serve.config import ServeConfig

Log = Callable[[str], None]
#: after the grace period, how long the cut requests have to answer their 503
CUT_WAIT_S = 10.0


class Service:
    """What every request shares: the config, the key, the slots, the in-flight set."""

    def __init__(self, config: ServeConfig, key: Ed25519PrivateKey, key_id: str, log: Log) -> None:
        self.config, self.key, self.key_id, self.log = config, key, key_id, log
        self.door = Door.of(config.max_body_bytes, config.allowed_hosts)
        self.stopping = threading.Event()
        self.health = Health(config.upstream, config.upstream_key)
        self._expected = f"Bearer {config.token}".encode()
        self._slots = threading.BoundedSemaphore(config.max_concurrent)
        self._lock = threading.Condition()
        self._inflight: set[Cancel] = set()
        self._grace_over = False  # set by drain: a request forwarded from then on is cut
        self._connections = 0
        self.watch = ClientWatch()

    def authorized(self, values: list[str]) -> bool:
        """Exactly one ``Authorization: Bearer <token>``, compared in constant time."""
        if len(values) != 1:
            return False
        return hmac.compare_digest(values[0].strip().encode("utf-8", "replace"), self._expected)

    def open_connection(self) -> bool:
        with self._lock:
            if self._connections >= self.config.max_connections:
                return False
            self._connections += 1
            return True

    def close_connection(self) -> None:
        with self._lock:
            self._connections -= 1
            self._lock.notify_all()

    @contextlib.contextmanager
    def slot(self) -> Iterator[bool]:
        """One of ``max_concurrent`` slots, or False at once when none is free."""
        got = self._slots.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                self._slots.release()

    @contextlib.contextmanager
    def forwarding(self, client: socket.socket) -> Iterator[Cancel]:
        """A request in flight: cut when its client leaves or the grace period ends."""
        cancel = Cancel(self.config.deadline)
        with self._lock:
            self._inflight.add(cancel)
            late = self._grace_over
        if late:  # its body arrived after the grace: drain's cut did not see it
            cancel.cut("stopping")
        self.watch.add(client, cancel)
        try:
            yield cancel
        finally:
            self.watch.remove(client)
            with self._lock:
                self._inflight.discard(cancel)
                self._lock.notify_all()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._inflight)

    def drain(self) -> int:
        """Wait up to ``grace`` for the requests in flight; cut the rest; how many were cut."""
        until = time.monotonic() + self.config.grace
        with self._lock:
            while self._inflight and self._lock.wait(max(0.0, until - time.monotonic())):
                pass
            late = list(self._inflight)
            self._grace_over = True
        for cancel in late:
            cancel.cut("stopping")
        until = time.monotonic() + CUT_WAIT_S
        with self._lock:
            while self._connections and self._lock.wait(max(0.0, until - time.monotonic())):
                pass
        return len(late)
