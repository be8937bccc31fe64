"""The reviewer transport: one attempt per call, retries only for bytes that did not arrive.

See the package docstring (:mod:`gate.reviewers`) and
docs/decisions/0003-retries-for-missing-bytes.md.
"""

from __future__ import annotations

import importlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gate.decide.attempt import Attempt, ChunkAttempt, ReviewOutcome
from gate.decide.ends import name_refusal
from gate.providers import PROVIDERS, Provider
from gate.reviewers import prompt_read, signed
from gate.reviewers.settings import ReviewerSettings, validate
from gate.safe import redact

if TYPE_CHECKING:
    from gate.reviewers.base import HttpRequest, Parser, Reply
    from gate.safe.watchdog import Watchdog


@dataclass(frozen=True)
class Dialect:
    """One wire dialect: how to build its request and how to read its answer."""

    name: str
    build_request: Callable[..., HttpRequest]
    parser: Callable[[ReviewerSettings], Parser]


def dialect(provider: str) -> Dialect:
    """The dialect module for ``provider`` (imported on first use)."""
    if provider not in PROVIDERS:
        validate(ReviewerSettings(provider=provider, model="", base_url=""))
    module = importlib.import_module(f"gate.reviewers.{Provider(provider).module}")
    return Dialect(name=module.NAME, build_request=module.build_request, parser=module.Stream)


def call_once(
    settings: ReviewerSettings, *, system: str, user: str, watchdog: Watchdog | None = None
) -> Reply:
    """One attempt: send the request, read the answer under every limit, judge it.

    The key is registered for redaction while the attempt runs, so every text a
    dialect cuts short (an error frame, a malformed event) is redacted before the cut.
    ``watchdog``: the caller's deadline over the exchange, to cut it early
    (:func:`gate.reviewers.base.perform`).
    """
    from gate.reviewers.base import perform  # httpx: imported when a request is made

    chosen = dialect(settings.provider)
    with redact.scope(settings.api_key):
        request = chosen.build_request(settings, system=system, user=user)
        parser = chosen.parser(settings)
        exchange = perform(
            settings,
            request,
            parser.feed,
            getattr(parser, "progress", None),
            watchdog=watchdog,
        )
        reply = signed.checked(
            parser.conclude(exchange), settings, request=request.body, system=system, user=user
        )
        return named(prompt_read.checked(reply, system=system, user=user))


def named(reply: Reply) -> Reply:
    """``reply`` with the reason its refused body names (:func:`gate.decide.ends.name_refusal`:
    the prompt over the context window, a content filter, a refused key) in place of its
    ``http_<status>``, so every caller reads a 400 the same way; any other reply as it is."""
    if reply.complete or reply.reason != f"http_{reply.http_status}":
        return reply
    reason = name_refusal(reply.http_status, reply.raw)
    if reason is None:
        return reply
    return replace(reply, reason=reason, detail=f"{reply.detail} [{reason}]", retryable=False)


def backoff_delay(
    settings: ReviewerSettings,
    number: int,
    retry_after: float | None,
    rng: random.Random,
) -> float:
    """Seconds to wait after attempt ``number`` (1-based) before the next one.

    The server's ``Retry-After`` wins, capped at ``retry_after_cap``; otherwise
    exponential backoff ``backoff_base * 2**(number-1)`` capped at
    ``backoff_cap``, jittered into its upper half.
    """
    if retry_after is not None:
        return max(0.0, min(retry_after, settings.retry_after_cap))
    ceiling = min(settings.backoff_cap, settings.backoff_base * 2.0 ** (number - 1))
    return ceiling / 2 + rng.uniform(0.0, ceiling / 2)


def review(
    settings: ReviewerSettings,
    *,
    system: str,
    user: str,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> ReviewOutcome:
    """Ask the reviewer, retrying only attempts whose bytes did not all arrive.

    Returns every attempt and, when the last one carried all the completeness
    evidence, its MC1 envelope. Raises :class:`~gate.errors.UsageError` only
    for invalid settings. ``on_attempt`` is called with each attempt as soon
    as it ends (before any pause), e.g. to print it live.
    """
    validate(settings)
    chance = rng if rng is not None else random.Random()
    attempts: list[Attempt] = []
    reply: Reply | None = None
    for number in range(1, settings.attempts + 1):
        reply = call_once(settings, system=system, user=user)
        attempt = reply.to_attempt(number)
        if reply.complete or not reply.retryable or number == settings.attempts:
            attempts.append(attempt)
            if on_attempt is not None:
                on_attempt(attempt)
            break
        delay = backoff_delay(settings, number, reply.retry_after, chance)
        waited = (
            f"Retry-After {reply.retry_after:g}s honoured as {delay:.2f}s"
            if reply.retry_after is not None
            else f"backoff {delay:.2f}s"
        )
        attempts.append(replace(attempt, detail=f"{attempt.detail} [{waited}]"))
        if on_attempt is not None:
            on_attempt(attempts[-1])
        sleep(delay)
    assert reply is not None
    return ReviewOutcome(
        attempts=tuple(attempts),
        envelope=reply.envelope if reply.complete else None,
        raw=reply.raw,
    )


def attempt_line(attempt: Attempt, total: int | None = None) -> str:
    """One human line per attempt, for command output and logs (no secrets in it)."""
    of = f"/{total}" if total else ""
    if attempt.complete:
        state = "complete"
    else:
        state = f"incomplete: {attempt.reason} ({attempt.end_reason})"
    status = f" HTTP {attempt.http_status}" if attempt.http_status is not None else ""
    chunk = f"chunk {attempt.chunk}: " if isinstance(attempt, ChunkAttempt) else ""
    head = (
        f"{chunk}attempt {attempt.number}{of} {attempt.provider}{status}: {state}, "
        f"{attempt.bytes_received} bytes in {attempt.elapsed_s:.2f}s, "
        f"finish {attempt.finish_reason}"
    )
    signed = attempt.signature
    if signed is not None and attempt.complete:
        checked = "checked" if signed.checked else "not checked: no reviewer.public_key is set"
        head += f", signed by {signed.key_id or 'a malformed key id'} ({checked})"
    return head if attempt.complete else f"{head}: {attempt.detail}"
