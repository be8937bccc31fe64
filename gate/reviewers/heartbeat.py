"""A heartbeat while the reviewer is silent: a long answer must not look like a hang.

While a stream is open and nothing of the answer has arrived for :data:`INTERVAL`
seconds (keep-alive comments are not the answer: :func:`gate.reviewers.base.open_streams`),
a line is said (``waiting for the reviewer: 31 s, 2,205 bytes so far``), and again every
:data:`INTERVAL` seconds of silence. It watches :func:`gate.reviewers.base.open_streams`
from a daemon thread that the front end (the command line's ``review``, the action's
log) starts around a review and stops after it; the thread wakes every :data:`TICK`
seconds and lives no longer than the review.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from gate.reviewers.base import open_streams

#: the longest silence without a heartbeat line, in seconds
INTERVAL = 15.0
#: how often the open streams are looked at
TICK = 1.0


class Heartbeat:
    """``with Heartbeat(say): review(...)``: says a line per silent open stream, at least
    every ``interval`` seconds of its silence."""

    def __init__(
        self,
        say: Callable[[str], None],
        *,
        interval: float | None = None,
        tick: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # the module's values, read now (not when this was defined), so a test of a front
        # end can shorten them for the whole run
        self._interval = INTERVAL if interval is None else interval
        self._tick = TICK if tick is None else tick
        self._say, self._clock = say, clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="heartbeat", daemon=True)
        #: per stream: (answer progress at the last change or line, when)
        self._seen: dict[int, tuple[int, float]] = {}

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _watch(self) -> None:
        while not self._stop.wait(self._tick):
            self.beat()

    def beat(self) -> None:
        """Look at the open streams once; say a line for each silent long enough."""
        now = self._clock()
        live = open_streams()
        self._seen = {k: v for k, v in self._seen.items() if k in {s[0] for s in live}}
        for key, seconds, size, progress in live:
            last, since = self._seen.get(key, (progress, now))
            if progress != last:
                self._seen[key] = (progress, now)
                continue
            self._seen.setdefault(key, (progress, now))
            if now - since >= self._interval:
                self._say(f"waiting for the reviewer: {seconds:.0f} s, {size:,} bytes so far")
                self._seen[key] = (progress, now)
