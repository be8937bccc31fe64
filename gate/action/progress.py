"""Progress on a long review, where branch protection shows it: the ``pending`` status.

A review in chunks can take many minutes; while it runs, the ``pending`` description says
how far it is (``pending: reviewing: 12/40 chunks``), updated at most every
:data:`INTERVAL` seconds (a commit keeps at most 1,000 statuses per context, and each
update is an API call). Fed by the live attempts of the review
(:class:`gate.decide.attempt.ChunkAttempt`); a chunk counts as done once one of its
attempts is final (complete, or not retried). A failed update is a note, never the
run's end: progress is a courtesy, the final status is what decides.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from gate.decide.attempt import Attempt, ChunkAttempt
from gate.decide.decision import describe
from gate.errors import GitHubError

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
        interval: float = INTERVAL,
    ) -> None:
        self._post, self._clock, self._notes, self._interval = post, clock, notes, interval
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
