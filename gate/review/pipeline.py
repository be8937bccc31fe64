"""One review, end to end: diff bytes + config -> decision + certificate.

:func:`review_diff` is step 5 of docs/design.md ("One review, from event to status"),
between the diff and the status, shared by ``review-gate review`` and the GitHub
action: it binds the review to ``sha256(diff)`` and the policy version, builds the prompt, calls
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gate.config.load import unsigned_beside_signed
from gate.config.model import Config
from gate.config.wording import dotted
from gate.decide.agreement import Answer, aggregate, stops_asking
from gate.decide.agreement import summary as agreement_summary
from gate.decide.attempt import Attempt, ReviewOutcome
from gate.decide.decision import (
    Binding,
    Decision,
    Family,
    State,
    Status,
    binding_for,
    blocked,
    decide,
)
from gate.decide.ends import CONTEXT_OVERFLOW, outage
from gate.diff import Coverage
from gate.errors import ContextUnknown, GateError, UsageError
from gate.review.budget import fits_served, too_long
from gate.review.context import (
    HeadFiles,
    partial_note,
    record,
    shown_for,
    whole_prompt_sha256,
)
from gate.review.cost import over_budget
from gate.review.prompt import build_prompt
from gate.review.result import ReviewResult, config_sha256, reviewer_of
from gate.review.scope import coverage_before_call, guard_coverage
from gate.review.served import refused, with_served
from gate.reviewers.settings import ReviewerSettings, validate

if TYPE_CHECKING:
    from gate.review.carry import Asked, Ledger


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
    fallback_keys: Sequence[str | None] | None = None,
    question: Asked | None = None,
    head: HeadFiles | None = None,
) -> ReviewResult:
    """Review ``diff`` (the exact bytes sent) with the reviewer ``config`` names.

    With ``fallbacks:`` and ``fallback_keys`` (one key each, in order; None: only the
    reviewer is asked, as replay does), each next reviewer is asked only when the one
    before :func:`could_not_answer`; the result is the last one asked, with the earlier
    ones in ``earlier`` (their attempts paid for and certified).

    Raises :class:`~gate.errors.UsageError` / :class:`~gate.errors.ConfigError`
    only for settings that cannot work (unknown provider, missing model or
    key, a base URL that is no URL), before any request, and GateError
    (``undecodable``) for bytes that are not UTF-8 (:func:`select_diff` leaves such
    sections out); every transport problem becomes an ``incomplete`` decision.
    ``sleep`` is the pause between retries (tests and the demo shorten it).
    ``coverage`` (from :func:`select_diff`, whose bytes ``diff`` must be)
    applies :func:`guard_coverage` to the decision and goes into the certificate.
    ``on_attempt`` sees each attempt as soon as it ends (the CLI prints it live).
    With ``config.agreement`` k > 1 the reviewer is asked up to k times, each on a fresh
    connection, and :func:`gate.decide.agreement.aggregate` decides (a pass needs k passes);
    the asking stops at the first answer that decides a block (no set could still pass).
    ``carry``: earlier chunk answers (:mod:`gate.review.carry`) for a review in chunks;
    ignored with ``incremental: off`` and for a diff reviewed in one request.
    ``question``: the key of the question this review answers
    (:func:`gate.memory.question.key_for` of these bytes and ``config``); a review in
    chunks derives each chunk's question from it, and without it carries nothing. A key
    of other bytes or another config is a bug (GateError ``internal_error``).
    ``head``: with ``context: files``, the changed files' text at the head
    (:mod:`gate.review.context`), shown beside the diff (each chunk its own files') and
    recorded in the certificate (``context.reviewer_context``); it never widens coverage.
    """
    binding = binding_for(diff, config)
    _check_bound(binding, config, coverage, question)
    chain = settings_chain(config, api_key, fallback_keys)
    allow = config.allow_partial_coverage
    if coverage is not None and (gap := coverage_before_call(coverage, allow_partial=allow)):
        # never pay for a review that will block on coverage
        return _unasked(gap, diff, config, chain[0][1], binding, coverage, extra_cert, head)
    earlier: list[ReviewResult] = []
    for position, (asked, settings) in enumerate(chain):
        result = _review_with(
            diff, asked, settings, binding, coverage=coverage, extra_cert=extra_cert,
            sleep=sleep, on_attempt=on_attempt,
            carry=None if config.incremental == "off" else carry, question=question, head=head,
        )  # fmt: skip
        if position + 1 == len(chain) or not could_not_answer(result):
            break
        earlier.append(result)
    if not earlier:
        return result
    return replace(
        result,
        config_sha256=config_sha256(config),
        earlier=tuple(earlier),
        notes=(*fallback_notes(result, earlier), *result.notes),
    )


def _review_with(
    diff: bytes,
    config: Config,
    settings: ReviewerSettings,
    binding: Binding,
    *,
    coverage: Coverage | None,
    extra_cert: Mapping[str, Any] | None,
    sleep: Callable[[float], None],
    on_attempt: Callable[[Attempt], None] | None,
    carry: Ledger | None,
    question: Asked | None,
    head: HeadFiles | None,
) -> ReviewResult:
    """One reviewer of the chain: the server's context first (once, where asked for),
    then the review in chunks or in one request."""
    from gate.review.chunked import review_chunks  # the pool: httpx, loaded when asked

    try:  # the server's context, once per reviewer (gate/review/served.py)
        config, settings, served = with_served(config, settings)
    except ContextUnknown as err:
        return _unasked(refused(err), diff, config, settings, binding, coverage, extra_cert, head)
    costly = None
    if served is not None and served.tokens is not None:
        # max_cost again over the cut the server's size makes (more chunks)
        costly = over_budget(diff, config, coverage)
    if costly is not None:
        result = _unasked(costly, diff, config, settings, binding, coverage, extra_cert, head)
    else:
        result = review_chunks(
            diff, config, settings, coverage=coverage, extra_cert=extra_cert, sleep=sleep,
            on_attempt=on_attempt, carry=carry, question=question, head=head,
        ) or _review_whole(
            diff, config, settings, binding, coverage=coverage, extra_cert=extra_cert,
            sleep=sleep, on_attempt=on_attempt, head=head,
        )  # fmt: skip
    if served is None:
        return result
    return replace(
        result,
        notes=(*result.notes, served.note),
        extra={**result.extra, "context_window": served.to_json()},
    )


def _unasked(
    decision: Decision,
    diff: bytes,
    config: Config,
    settings: ReviewerSettings,
    binding: Binding,
    coverage: Coverage | None,
    extra_cert: Mapping[str, Any] | None,
    head: HeadFiles | None,
) -> ReviewResult:
    """The result of a review blocked before its reviewer was asked."""
    return ReviewResult(
        decision=decision,
        outcome=ReviewOutcome(attempts=(), envelope=None),
        binding=binding,
        prompt_sha256=whole_prompt_sha256(diff, config, head),
        config_sha256=config_sha256(config),
        reviewer=reviewer_of(settings),
        min_confidence=config.min_confidence,
        coverage=coverage,
        review_decision=decision,
        extra=dict(extra_cert or {}),
    )


def _check_bound(
    binding: Binding, config: Config, coverage: Coverage | None, question: Asked | None
) -> None:
    """The coverage manifest and the question key given to :func:`review_diff` must be of
    its bytes (and the key of its config): either mismatch is a bug in the caller
    (GateError ``internal_error``), raised before any request."""
    if coverage is not None and coverage.diff_sha != binding.diff_sha:
        raise GateError(
            "review_diff was given a coverage manifest for other bytes than the diff; "
            "this is a bug in review-gate, please report it",
            reason="internal_error",
        )
    if question is not None and (question.diff_sha, question.config_sha) != (
        binding.diff_sha,
        config_sha256(config),
    ):
        raise GateError(
            "review_diff was given the question key of other bytes or another config; "
            "this is a bug in review-gate, please report it",
            reason="internal_error",
        )


def settings_chain(
    config: Config, api_key: str | None, fallback_keys: Sequence[str | None] | None
) -> list[tuple[Config, ReviewerSettings]]:
    """The reviewer and each fallback (with ``fallback_keys``), each with its settings,
    every one validated before any request (a UsageError naming the setting)."""
    chained = config.chain() if fallback_keys is not None else (config,)
    keys = (api_key, *(fallback_keys or ()))
    if len(keys) != len(chained):
        raise GateError(
            f"review_diff was given {len(keys) - 1} fallback keys for {len(config.fallbacks)} "
            "fallbacks; this is a bug in review-gate, please report it",
            reason="internal_error",
        )
    chain = [
        (c, ReviewerSettings.from_config(c.reviewer, key))
        for c, key in zip(chained, keys, strict=True)
    ]
    for _, settings in chain:
        validate(settings)
    if fallback_keys is not None and (unsigned := unsigned_beside_signed(config)):
        raise UsageError(
            f"{dotted(unsigned[0])} is not set, but another mc1 reviewer of the chain names "
            "a public_key: a signature failure asks the next reviewer, whose unsigned answer "
            "a rewriting hop could seal; set a key for every mc1 reviewer",
            reason="config_public_key",
        )
    return chain


def could_not_answer(result: ReviewResult) -> bool:
    """Whether the next reviewer may be asked: only after an outage
    (:mod:`gate.decide.ends`). The review is ``unavailable``, no answer or chunk of it
    decided anything (a ``fail``, a ``needs_human`` of a malformed, unbound or
    low-confidence answer, an unstable set, an end the model or the diff chose), and
    every attempt that did not answer was an outage: an end the diff can cause is never
    a way to re-roll."""
    decided = result.review_decision or result.decision
    if decided.family is not Family.UNAVAILABLE:
        return False
    parts = [decided, *(a.decision for a in result.answers)] + [
        c.decision for c in result.chunks if c.decision is not None and not c.split
    ]
    if any(d.state in (State.FAIL, State.NEEDS_HUMAN) for d in parts):
        return False
    return all(outage(a) for a in _attempts(result) if not a.complete)


def _attempts(result: ReviewResult) -> list[Attempt]:
    """Every attempt behind ``result``: each answer's, each chunk's (its splits included)."""
    found = [*result.outcome.attempts, *(a for answer in result.answers for a in answer.attempts)]
    for chunk in result.chunks:
        found += chunk.outcome.attempts
    return found


def _who(result: ReviewResult) -> str:
    return f"{result.reviewer.provider} {result.reviewer.model or '(no model)'}"


def fallback_notes(result: ReviewResult, earlier: Sequence[ReviewResult]) -> tuple[str, ...]:
    """One line per reviewer that could not answer, then who answered (summary, comment)."""
    lines = [
        f"reviewer {n} of {len(earlier) + 1} ({_who(r)}) could not answer: "
        f"{r.decision.reason} ({r.decision.detail[:160]})"
        for n, r in enumerate(earlier, 1)
    ]
    lines.append(f"fallback reviewer {len(earlier) + 1} ({_who(result)}) was asked and decided")
    return tuple(lines)


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
    head: HeadFiles | None = None,
) -> ReviewResult:
    """The review in one request (asked up to ``agreement`` times: the asking stops at the
    first answer that decides a block), decided and aggregated."""
    from gate.reviewers.transport import review  # httpx: loaded when a request is made

    shown = shown_for(diff, config, head)
    prompt = build_prompt(
        diff, binding=binding, instructions=config.instructions, context=shown.text
    )
    if not fits_served(prompt.size, config):  # a server cuts what does not fit: not sent
        too = blocked(
            State.NEEDS_HUMAN,
            CONTEXT_OVERFLOW,
            too_long(prompt.size, config),
            status=Status.FAILURE,
        )
        return _unasked(too, diff, config, settings, binding, coverage, extra_cert, head)
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
        if stops_asking(answers[-1]):
            break
    verdict_decision = aggregate([a.decision for a in answers])
    decision, note = verdict_decision, None
    if coverage is not None:
        decision, note = guard_coverage(
            verdict_decision, coverage, allow_partial=config.allow_partial_coverage
        )
    notes: tuple[str, ...] = () if note is None else (note,)
    if config.agreement > 1:
        notes = (f"agreement: {agreement_summary(answers, config.agreement)}", *notes)
    extra = dict(extra_cert or {})
    if (context := record(config, head, [(None, diff)])) is not None:
        extra["reviewer_context"] = context
        notes = (*notes, *partial_note(context))
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
        extra=extra,
        answers=tuple(answers),
        k=config.agreement,
    )
