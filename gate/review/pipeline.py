"""One review, end to end: diff bytes + config -> decision + certificate.

:func:`review_diff` is the pipeline of docs/design.md between the diff and the
status, shared by ``review-gate review`` and the GitHub action: it binds the
review to ``sha256(diff)`` and the policy version, builds the prompt, calls
the reviewer transport (which retries only bytes that did not arrive) and
applies the decision table to the sealed envelope; the certificate is built from
the result, once, by the caller that writes it. It touches no environment
variable, no file and no exit code; the callers do.

Before it, the selection both callers share (:mod:`gate.review.scope`: ``select_diff``,
``nothing_reviewed``); ``review_diff(..., coverage=...)`` turns a pass on partial
coverage into ``needs_human`` (``partial_coverage``) unless ``allow_partial_coverage``.
A diff too large for one request goes to :func:`gate.review.chunked.review_chunks`;
both paths return a :class:`gate.review.result.ReviewResult`. Dependencies point one way:
``chunks.budget`` -> ``cost`` -> ``chunks.review`` -> ``pipeline``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gate.config import Config
from gate.decide.agreement import Answer, aggregate
from gate.decide.agreement import summary as agreement_summary
from gate.decide.attempt import Attempt, ReviewOutcome
from gate.decide.decision import Binding, binding_for, decide
from gate.diff import Coverage
from gate.errors import GateError
from gate.review.prompt import build_prompt
from gate.review.result import ReviewResult, config_sha256, reviewer_of
from gate.review.scope import coverage_before_call, guard_coverage
from gate.reviewers.settings import ReviewerSettings, validate

if TYPE_CHECKING:
    from gate.review.carry import Ledger


def prompt_sha256(diff: bytes, config: Config) -> str:
    """The digest of the prompt :func:`review_diff` would send for ``diff`` (the memory's
    key, known before any call)."""
    binding = binding_for(diff, config)
    return build_prompt(diff, binding=binding, instructions=config.instructions).sha256()


def review_diff(
    diff: bytes,
    config: Config,
    *,
    api_key: str | None,
    extra_cert: Mapping[str, Any] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    coverage: Coverage | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
    carry: Ledger | None = None,
) -> ReviewResult:
    """Review ``diff`` (the exact bytes sent) with the reviewer ``config`` names.

    Raises :class:`~gate.errors.UsageError` / :class:`~gate.errors.ConfigError`
    only for settings that cannot work (unknown provider, missing model or
    key, a base URL that is no URL), before any request, and GateError
    (``undecodable``) for bytes that are not UTF-8 (:func:`select_diff` leaves such
    sections out); every transport problem becomes an ``incomplete`` decision.
    ``sleep`` is the pause between retries (tests and the demo shorten it).
    ``coverage`` (from :func:`select_diff`, whose bytes ``diff`` must be)
    applies :func:`guard_coverage` to the decision and goes into the certificate.
    ``on_attempt`` sees each attempt as soon as it ends (the CLI prints it live).
    With ``config.agreement`` k > 1 the reviewer is asked k times, each on a fresh
    connection, and :func:`gate.decide.agreement.aggregate` decides (a pass needs k passes).
    ``carry``: earlier chunk answers (:mod:`gate.review.carry`) for a review in chunks;
    ignored with ``incremental: off`` and for a diff reviewed in one request.
    """
    binding = binding_for(diff, config)
    if coverage is not None and coverage.diff_sha != binding.diff_sha:
        raise GateError(
            "review_diff was given a coverage manifest for other bytes than the diff; "
            "this is a bug in review-gate, please report it",
            reason="internal_error",
        )
    settings = ReviewerSettings.from_config(config.reviewer, api_key)
    validate(settings)  # a UsageError naming the setting, before anything else
    allow = config.allow_partial_coverage
    if coverage is not None and (gap := coverage_before_call(coverage, allow_partial=allow)):
        return ReviewResult(  # never pay for a review that will block on coverage
            decision=gap,
            outcome=ReviewOutcome(attempts=(), envelope=None),
            binding=binding,
            prompt_sha256=prompt_sha256(diff, config),
            config_sha256=config_sha256(config),
            reviewer=reviewer_of(settings),
            min_confidence=config.min_confidence,
            coverage=coverage,
            review_decision=gap,
            extra=dict(extra_cert or {}),
        )
    from gate.review.chunked import review_chunks

    chunked = review_chunks(
        diff,
        config,
        settings,
        coverage=coverage,
        extra_cert=extra_cert,
        sleep=sleep,
        on_attempt=on_attempt,
        carry=None if config.incremental == "off" else carry,
    )
    if chunked is not None:
        return chunked
    return _review_whole(
        diff, config, settings, binding, coverage=coverage, extra_cert=extra_cert,
        sleep=sleep, on_attempt=on_attempt,
    )  # fmt: skip


def _review_whole(
    diff: bytes,
    config: Config,
    settings: ReviewerSettings,
    binding: Binding,
    *,
    coverage: Coverage | None,
    extra_cert: Mapping[str, Any] | None,
    sleep: Callable[[float], None],
    on_attempt: Callable[[Attempt], None] | None,
) -> ReviewResult:
    """The review in one request (asked ``agreement`` times), decided and aggregated."""
    from gate.reviewers.transport import review  # httpx: loaded when a request is made

    prompt = build_prompt(diff, binding=binding, instructions=config.instructions)
    answers: list[Answer] = []
    outcomes: list[ReviewOutcome] = []
    for _ in range(config.agreement):
        # each answer on a fresh connection: review() opens one per attempt
        outcome = review(
            settings, system=prompt.system, user=prompt.user, sleep=sleep, on_attempt=on_attempt
        )
        answer_decision = decide(
            outcome.envelope,
            binding=binding,
            min_confidence=config.min_confidence,
            attempts=outcome.attempts,
        )
        outcomes.append(outcome)
        answers.append(Answer(answer_decision, outcome.attempts, outcome.envelope))
    verdict_decision = aggregate([a.decision for a in answers])
    decision, note = verdict_decision, None
    if coverage is not None:
        decision, note = guard_coverage(
            verdict_decision, coverage, allow_partial=config.allow_partial_coverage
        )
    notes: tuple[str, ...] = () if note is None else (note,)
    if len(answers) > 1:
        notes = (f"agreement: {agreement_summary(answers)}", *notes)
    return ReviewResult(
        decision=decision,
        outcome=outcomes[0],
        binding=binding,
        prompt_sha256=prompt.sha256(),
        config_sha256=config_sha256(config),
        reviewer=reviewer_of(settings),
        min_confidence=config.min_confidence,
        coverage=coverage,
        review_decision=verdict_decision,
        notes=notes,
        extra=dict(extra_cert or {}),
        answers=tuple(answers),
    )
