"""Progress on a long review, where people look: the ``pending`` status and the job's log.

**The log** (:class:`LogLines`) gets each attempt as it ends (the line the command line
prints: ``chunk 3/8: attempt 1/2 openai HTTP 200: complete, ...``) and, while the reviewer is
silent, a heartbeat at least every 15 seconds (:mod:`gate.reviewers.heartbeat`), so a
slow answer does not read as a hung job. Each line is untrusted text (a provider's error
words are in it): redacted, escaped and neutral, written whole under one lock (the
chunks' workers and the heartbeat write from their own threads).

**The status.** A review in chunks can take many minutes; while it runs, the ``pending``
description says how far it is (``pending: reviewing: 12/40 chunks``), updated at most
every :data:`INTERVAL` seconds (a commit keeps at most 1,000 statuses per context, and
each update is an API call). Fed by the live attempts of the review
(:class:`gate.decide.attempt.ChunkAttempt`); a chunk counts as done once one of its
attempts is final (complete, or not retried). A failed update is a note, never the run's
end: progress is a courtesy, the final status is what decides.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TextIO

from gate.action import report
from gate.decide.attempt import Attempt, ChunkAttempt
from gate.decide.decision import describe
from gate.errors import GitHubError
from gate.safe import untrusted

#: the fewest seconds between two progress updates of the pending status
INTERVAL = 10.0


class ChunkProgress:
    """Counts the chunks done and posts the ``pending`` description at most every
    :data:`INTERVAL` seconds (``post`` posts it; ``clock`` is monotonic seconds)."""

    def __init__(
        self,
        post: Callable[[str], None],
        *,
        clock: Callable[[], float],
        notes: list[str],
        interval: float | None = None,
    ) -> None:
        self._post, self._clock, self._notes = post, clock, notes
        self._interval = INTERVAL if interval is None else interval  # read now: a test may patch it
        self._lock = threading.Lock()
        self._done: set[str] = set()
        self._last = clock()
        self._failed = False

    def attempt(self, attempt: Attempt) -> None:
        """``on_attempt`` for :func:`gate.review.pipeline.review_diff`."""
        if not isinstance(attempt, ChunkAttempt):
            return
        name, _, total = attempt.chunk.partition("/")
        with self._lock:
            if attempt.complete or not attempt.retryable:
                self._done.add(name.split(".")[0])  # a half counts for its chunk
            now = self._clock()
            if self._failed or now - self._last < self._interval:
                return
            self._last = now
            text = describe("pending", f"reviewing: {len(self._done)}/{total} chunks")
            try:
                self._post(text)
            except GitHubError as err:
                self._failed = True
                self._notes.append(f"could not update the pending status: {err.message}")


class LogLines:
    """``log(text)``: one untrusted line in the job's log, whole, from any thread."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self._lock:
            report.emit([untrusted.line(text)], self._out)
