"""Many requests at once: a shared pause, one run-wide deadline, context overflow recognised.

:func:`review_paced` is :func:`gate.reviewers.review` for one chunk among several that run
concurrently (:mod:`gate.review.chunked` owns the pool of threads; the transport is synchronous
httpx, one connection per attempt). What it adds:

- **one deadline for the run.** :class:`Pacer` holds the monotonic instant the whole
  review must end by; each attempt's own ``deadline`` is cut to what is left, and no
  attempt starts after it (the chunk ends ``incomplete``, ``run_deadline``);
- **a Retry-After pauses everyone.** When one chunk is told to wait (HTTP 429/503 with
  ``Retry-After``), :meth:`Pacer.hold` pushes the shared pause, and every chunk waits
  for it before its next attempt: the provider's rate limit is for the key, not for one
  request. Plain backoff (no ``Retry-After``) stays per chunk;
- **each chunk has its own retry budget** (``settings.attempts``), for missing bytes only,
  as in :func:`~gate.reviewers.review`;
- **context overflow.** A 4xx whose error says the prompt is over the model's window
  (OpenAI ``context_length_exceeded``, Anthropic ``prompt is too long``, Gemini's
  ``input token count ... exceeds the maximum number of tokens``, the OpenAI-compatible
  servers' ``maximum context length``: :data:`gate.decide.ends.REFUSAL_MARKERS`) is
  ``context_overflow`` and reported to the caller, which splits the chunk in half. No
  verdict arrived, so nothing answered is asked again.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from gate.decide.attempt import Attempt, EndReason, ReviewOutcome
from gate.decide.ends import CONTEXT_OVERFLOW
from gate.reviewers.base import Reply
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.transport import backoff_delay, call_once


def context_overflow(reply: Reply) -> bool:
    """Whether ``reply`` is the provider saying the prompt is over the model's window
    (named by :func:`gate.reviewers.transport.call_once` from the error body,
    :data:`gate.decide.ends.REFUSAL_MARKERS`)."""
    return not reply.complete and reply.reason == CONTEXT_OVERFLOW


class Pacer:
    """The state every chunk of one run shares: the run's deadline and the common pause."""

    def __init__(
        self,
        run_deadline: float,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep
        self.deadline_at = clock() + run_deadline
        self.run_deadline = run_deadline
        self._pause_until = 0.0
        self.holds = 0  # how many times a Retry-After paused the run (for the report)

    def remaining(self) -> float:
        return self.deadline_at - self._clock()

    def hold(self, seconds: float) -> None:
        """Pause every chunk for ``seconds`` from now (a server's Retry-After)."""
        with self._lock:
            self._pause_until = max(self._pause_until, self._clock() + seconds)
            self.holds += 1

    def wait(self) -> float:
        """Wait out the shared pause (never past the run's deadline); the seconds waited."""
        with self._lock:
            until = min(self._pause_until, self.deadline_at)
        pause = until - self._clock()
        if pause <= 0:
            return 0.0
        self._sleep(pause)
        return pause


@dataclass(frozen=True)
class PacedOutcome:
    """One chunk's attempts; ``overflow`` when the last one was a context overflow."""

    outcome: ReviewOutcome
    overflow: bool = False


def _out_of_time(settings: ReviewerSettings, number: int, pacer: Pacer) -> Attempt:
    return Attempt(
        number=number,
        provider=settings.provider,
        complete=False,
        reason="run_deadline",
        detail=(
            f"the review ran out of its run_deadline={pacer.run_deadline:g}s before this "
            "chunk's attempt could start; raise run_deadline or concurrency"
        ),
        end_reason=EndReason.TIMEOUT,
    )


def review_paced(
    settings: ReviewerSettings,
    *,
    system: str,
    user: str,
    pacer: Pacer,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> PacedOutcome:
    """Ask the reviewer for one chunk, retrying only missing bytes, under the shared pacer."""
    chance = rng if rng is not None else random.Random()
    attempts: list[Attempt] = []
    reply: Reply | None = None
    for number in range(1, settings.attempts + 1):
        pacer.wait()
        left = pacer.remaining()
        if left <= 0:
            attempts.append(_out_of_time(settings, number, pacer))
            reply = None
            break
        bounded = replace(settings, deadline=min(settings.deadline, left))
        reply = call_once(bounded, system=system, user=user)
        attempt = reply.to_attempt(number)
        if context_overflow(reply):
            attempt = replace(
                attempt,
                detail=f"{attempt.detail} [the prompt is over the model's context window; "
                "the chunk is split in half and asked again]",
            )
            attempts.append(attempt)
            if on_attempt is not None:
                on_attempt(attempt)
            return PacedOutcome(ReviewOutcome(tuple(attempts), None, reply.raw), overflow=True)
        if reply.complete or not reply.retryable or number == settings.attempts:
            attempts.append(attempt)
            if on_attempt is not None:
                on_attempt(attempt)
            break
        delay = backoff_delay(settings, number, reply.retry_after, chance)
        if reply.retry_after is not None:
            waited = f"Retry-After {reply.retry_after:g}s honoured as {delay:.2f}s, for every chunk"
            pacer.hold(delay)
        else:
            waited = f"backoff {delay:.2f}s"
        attempts.append(replace(attempt, detail=f"{attempt.detail} [{waited}]"))
        if on_attempt is not None:
            on_attempt(attempts[-1])
        if reply.retry_after is None:
            sleep(delay)
    complete = reply is not None and reply.complete
    return PacedOutcome(
        ReviewOutcome(
            attempts=tuple(attempts),
            envelope=reply.envelope if reply is not None and complete else None,
            raw=reply.raw if reply is not None else b"",
        )
    )
