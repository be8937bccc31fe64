"""The decision table of docs/decisions/0004-decision-table.md, as one pure function.

:func:`decide` maps what arrived (a sealed MC1 envelope, or nothing, plus the
attempts that produced it) to a :class:`Decision`. Only one row yields
``pass``/``success``: a complete, well-formed, bound ``pass`` verdict with
confidence at or above the minimum and at least one reason, read straight
from the fence (never from a repair). Every error is caught here *by type*
and turned into a blocking state with a specific reason code; an unexpected
exception propagates (and the callers exit non-zero), it never passes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from gate.diff import diff_sha
from gate.errors import (
    BadEncoding,
    BindingError,
    EnvelopeError,
    ExitCode,
    FenceError,
    PromptUnread,
    ShapeError,
    StrictJSONError,
    VerdictError,
)
from gate.safe.redact import redact

if TYPE_CHECKING:
    from gate.config.model import Config
    from gate.decide.attempt import Attempt
    from gate.decide.verdict import Verdict

# The envelope, verdict and repair modules are imported by the functions that use them:
# the action imports this module for its types before its first request, and decides
# only after the review (docs/decisions/0034-start-up.md).

MAX_DESCRIPTION = 140


class State(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NEEDS_HUMAN = "needs_human"
    INCOMPLETE = "incomplete"


class Family(StrEnum):
    """What kind of outcome a decision is, for the people who must act on it.

    A block is either about the code (``rejected``, ``needs_human``, ``coverage``) or not
    (``unavailable``: the reviewer could not answer, quota, rate limit, outage, timeout,
    cut; ``config``: the gate's own setup). Derived from the state and the reason alone
    (:func:`family_of`), so a certificate, a record and the stats read the same family.
    """

    PASS = "pass"
    REJECTED = "rejected"
    NEEDS_HUMAN = "needs_human"
    COVERAGE = "coverage"
    UNAVAILABLE = "unavailable"
    CONFIG = "config"

    @property
    def about_the_code(self) -> bool:
        return self not in (Family.UNAVAILABLE, Family.CONFIG)


#: needs_human reasons where part (or all) of the change was not reviewed
COVERAGE_REASONS = frozenset(
    {"partial_coverage", "nothing_reviewed", "too_large", "over_budget", "draft"}
    | {"not_reviewed_event", "context_overflow"}
)
#: needs_human reasons that are the gate's setup, besides every ``config_*`` reason
CONFIG_REASONS = frozenset(
    {"usage", "missing_api_key", "fork_no_credentials", "missing_key", "missing_model"}
    | {"bad_base_url", "unknown_provider", "bad_output_path", "malformed_event"}
)


def family_of(state: str, reason: str) -> Family:
    """The family of a decision (or of a record: ``state`` may be ``skipped``).

    ``fail`` is ``rejected`` and ``incomplete`` is ``unavailable`` whatever the reason;
    a ``needs_human`` is ``config`` or ``coverage`` by its reason, else ``needs_human``.
    An unknown state raises: a family is never guessed for something that is not a decision.
    """
    if state == "pass":
        return Family.PASS
    if state == "fail":
        return Family.REJECTED
    if state == "incomplete":
        return Family.UNAVAILABLE
    if state not in ("needs_human", "skipped"):
        raise ValueError(f"no family for the state {state!r}")
    if reason.startswith("config_") or reason in CONFIG_REASONS:
        return Family.CONFIG
    if reason in COVERAGE_REASONS or state == "skipped":
        return Family.COVERAGE
    return Family.NEEDS_HUMAN


class Status(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"
    PENDING = "pending"


@dataclass(frozen=True)
class Binding:
    """What the verdict must repeat: the digest of the diff sent and the policy."""

    diff_sha: str
    policy_version: str


#: The binding as the prompt carries it: one line each, the value a JSON string.
_DIFF_SHA_LINE = re.compile(r'^diff_sha: "([0-9a-f]{64})"$', re.MULTILINE)
_POLICY_LINE = re.compile(r'^policy_version: ("(?:[^"\\\n]|\\.)*")$', re.MULTILINE)


def binding_lines(binding: Binding) -> list[str]:
    """The lines that carry ``binding`` in a prompt (read back by :func:`binding_in`)."""
    return [
        f"diff_sha: {json.dumps(binding.diff_sha)}",
        f"policy_version: {json.dumps(binding.policy_version, ensure_ascii=False)}",
    ]


def binding_in(text: str) -> Binding | None:
    """The binding a prompt from :func:`gate.review.prompt.build_prompt` carries, or None.

    The inverse of the binding lines, for local reviewers that answer bound
    verdicts (the demo, the reviewer simulator in tests) and for the output grammar
    (:mod:`gate.decide.grammar`), which writes the values in. The first match wins:
    the gate's lines come before the fenced diff.
    """
    sha = _DIFF_SHA_LINE.search(text)
    policy = _POLICY_LINE.search(text)
    if sha is None or policy is None:
        return None
    try:
        version = json.loads(policy.group(1))
    except ValueError:
        return None
    return (
        Binding(diff_sha=sha.group(1), policy_version=version) if isinstance(version, str) else None
    )


@dataclass(frozen=True)
class Decision:
    state: State
    status: Status
    reason: str
    description: str
    detail: str
    verdict: Verdict | None = None
    source: str = "none"  # "envelope" | "repaired" | "none"
    envelope_sha256: str | None = None

    @property
    def family(self) -> Family:
        return family_of(str(self.state), self.reason)

    def to_json(self) -> dict[str, Any]:
        return {
            "state": str(self.state),
            "family": str(self.family),
            "reason": self.reason,
            "status": str(self.status),
            "description": self.description,
            "detail": self.detail,
            "verdict": None if self.verdict is None else self.verdict.to_json(),
            "source": self.source,
            "envelope_sha256": self.envelope_sha256,
        }


def binding_for(diff: bytes, config: Config) -> Binding:
    """The binding the verdict must repeat: SHA-256 of the diff bytes and the policy."""
    return Binding(diff_sha=diff_sha(diff), policy_version=config.policy_version)


def describe(prefix: str, cause: str) -> str:
    """``prefix: cause``, single-line, printable, at most 140 characters, secrets redacted
    before the cut (a cut secret would no longer be found whole)."""
    text = " ".join(redact(f"{prefix}: {cause}").split())
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    if len(text) > MAX_DESCRIPTION:
        text = text[: MAX_DESCRIPTION - 3].rstrip() + "..."
    return text


def status_description(decision: Decision) -> str:
    """The commit status description: the decision's own, led by its family when it blocks.

    ``unavailable`` and ``config`` say they are not about the code, so nobody reads an
    outage as a rejection. At most 140 characters (the family is never the part cut).
    """
    family = decision.family
    if family is Family.PASS or decision.description.startswith(str(family)):
        return decision.description
    lead = str(family) if family.about_the_code else f"{family}, not about the code"
    return describe(lead, decision.description)


def blocked(state: State, reason: str, detail: str, *, status: Status = Status.ERROR) -> Decision:
    """A blocking decision made outside the verdict (config, coverage, guards)."""
    if state is State.PASS or status is Status.SUCCESS:
        raise ValueError("blocked() never produces a pass")
    return Decision(
        state=state,
        status=status,
        reason=reason,
        description=describe(str(state), detail),
        detail=detail,
    )


def passed_without_review(reason: str, cause: str, detail: str) -> Decision:
    """The pass of a change that leaves the reviewer nothing to be asked about and nothing
    unreviewed that blocks, made with no reviewer call: every changed file a binary asset
    (``no_code_changed``) or left out by the base config's include/exclude
    (``nothing_in_scope``, under ``nothing_in_scope: pass``).
    :func:`gate.review.scope.nothing_in_scope` alone decides when; the coverage manifest
    names every file."""
    if reason not in WITHOUT_REVIEW:
        raise ValueError(f"{reason!r} is no pass without review")
    return Decision(
        state=State.PASS,
        status=Status.SUCCESS,
        reason=reason,
        description=describe(reason.replace("_", " "), cause),
        detail=detail,
    )


#: the reasons of a pass made with no reviewer call (:func:`passed_without_review`)
WITHOUT_REVIEW = frozenset({"no_code_changed", "nothing_in_scope"})


def exit_code(decision: Decision) -> ExitCode:
    """0 for pass, 1 for fail, 3 for every other (blocking) state."""
    if decision.state is State.PASS and decision.status is Status.SUCCESS:
        return ExitCode.PASS
    if decision.state is State.FAIL:
        return ExitCode.FAIL
    return ExitCode.BLOCKED


def _incomplete(attempts: Sequence[Attempt], reason: str, detail: str, end: str) -> Decision:
    count = len(attempts)
    plural = "attempt" if count == 1 else "attempts"
    prefix = f"incomplete after {count} {plural}" if count else "incomplete"
    suffix = f" ({end})" if end else ""
    return Decision(
        state=State.INCOMPLETE,
        status=Status.ERROR,
        reason=reason,
        description=describe(prefix, f"{detail}{suffix}"),
        detail=detail,
    )


def decide(
    envelope: bytes | None,
    *,
    binding: Binding,
    min_confidence: float = 0.8,
    attempts: Sequence[Attempt] = (),
    max_size: int | None = None,
    read: bool = True,
) -> Decision:
    """Apply the decision table to what the reviewer transport produced.

    ``max_size`` bounds the envelope body (default: 16 MiB, or the envelope's length).
    ``read=False`` decides by the contract before the ``read`` member (a certificate
    that records no read words: :func:`gate.review.certificate.read_recorded`).
    """
    from gate.decide.ends import outage
    from gate.decide.envelope import DEFAULT_MAX_SIZE, verify_envelope
    from gate.decide.readback import check_read
    from gate.decide.verdict import check_binding, check_shape, extract_fence, strict_loads

    if envelope is None:
        last = attempts[-1] if attempts else None
        if last is None:
            return _incomplete(attempts, "no_response", "no response from the reviewer", "")
        if not outage(last):  # the model or the diff chose this end: it decides
            return _chosen_end(last)
        return _incomplete(
            attempts, last.reason or "incomplete", last.detail or last.reason, str(last.end_reason)
        )
    try:
        limit = max_size if max_size is not None else max(DEFAULT_MAX_SIZE, len(envelope))
        sealed = verify_envelope(envelope, max_size=limit)
    except BadEncoding as err:
        return _needs_human(err.reason, err.message, None)
    except EnvelopeError as err:
        end = str(attempts[-1].end_reason) if attempts else ""
        return _incomplete(attempts, err.reason, err.message, end)
    content = sealed.text()
    try:
        fenced = extract_fence(content)
    except FenceError as err:
        return _needs_human(err.reason, err.message, sealed.envelope_sha256)
    try:
        obj = strict_loads(fenced)
    except StrictJSONError as err:
        return _from_repair(fenced, err, binding, sealed.envelope_sha256, read=read)
    try:
        verdict = check_shape(obj, read=read)
        check_binding(verdict, diff_sha=binding.diff_sha, policy_version=binding.policy_version)
    except (ShapeError, BindingError) as err:
        return _needs_human(err.reason, err.message, sealed.envelope_sha256)
    except PromptUnread as err:
        return _unread(err, sealed.envelope_sha256, None)
    if read:
        try:
            check_read(
                verdict.read, diff_sha=binding.diff_sha, policy_version=binding.policy_version
            )
        except PromptUnread as err:
            return _unread(err, sealed.envelope_sha256, verdict)
    return _table(verdict, min_confidence, sealed.envelope_sha256)


def _unread(err: PromptUnread, envelope_sha: str, verdict: Verdict | None) -> Decision:
    """A verdict about a prompt the model did not see whole (:mod:`gate.decide.readback`):
    a ``needs_human`` posted as ``failure`` that stands like a chosen end (the same prompt
    is cut the same way: not retried, no fallback asked), pass or fail alike, since either
    judges part of the change."""
    return _needs_human(
        err.reason, err.message, envelope_sha, verdict, status=Status.FAILURE, source="envelope"
    )


def _chosen_end(last: Attempt) -> Decision:
    """The block of an end the model or the diff chose (:mod:`gate.decide.ends`): a
    ``needs_human`` about the code, posted as ``failure``, that stands like a ``fail``
    (a fallback is not asked, a later run does not ask again) until the diff changes or
    a writer asks for a fresh review."""
    reason = last.reason or "unexpected_finish"
    said = last.detail or reason
    return replace(
        _needs_human(reason, said, None, status=Status.FAILURE),
        detail=f"{said}; the model or the diff chose this end (not an outage), so it stands "
        "until the diff changes or a writer asks for a fresh review",
    )


def _needs_human(
    reason: str,
    detail: str,
    envelope_sha: str | None,
    verdict: Verdict | None = None,
    *,
    status: Status = Status.ERROR,
    source: str = "none",
) -> Decision:
    return Decision(
        state=State.NEEDS_HUMAN,
        status=status,
        reason=reason,
        description=describe(f"needs_human: {reason}", detail),
        detail=detail,
        verdict=verdict,
        source=source,
        envelope_sha256=envelope_sha,
    )


def _from_repair(
    fenced: str, err: StrictJSONError, binding: Binding, envelope_sha: str, *, read: bool
) -> Decision:
    from gate.decide.readback import check_read
    from gate.decide.repair import find_structural_cut
    from gate.decide.verdict import check_binding, check_shape, strict_loads

    repair = find_structural_cut(fenced) if err.reason == "json_syntax" else None
    if repair is None:
        return _needs_human(err.reason, err.message, envelope_sha)
    try:
        verdict = check_shape(strict_loads(repair.text), read=read)
        check_binding(verdict, diff_sha=binding.diff_sha, policy_version=binding.policy_version)
        if read:
            check_read(
                verdict.read, diff_sha=binding.diff_sha, policy_version=binding.policy_version
            )
    except VerdictError as inner:
        return _needs_human(
            inner.reason,
            f"after adding the missing {repair.closers!r}: {inner.message}",
            envelope_sha,
            source="repaired",
        )
    if verdict.verdict == "fail":
        return Decision(
            state=State.FAIL,
            status=Status.FAILURE,
            reason="repaired_fail",
            description=describe(
                "fail (repaired)", f"{_first_reason(verdict)} [closers {repair.closers!r} added]"
            ),
            detail=f"the JSON lacked only {repair.closers!r}; the repaired verdict is fail",
            verdict=verdict,
            source="repaired",
            envelope_sha256=envelope_sha,
        )
    return _needs_human(
        "repaired_pass",
        f"the verdict JSON lacked {repair.closers!r}; a repaired pass is never a pass",
        envelope_sha,
        verdict,
        source="repaired",
    )


def _first_reason(verdict: Verdict) -> str:
    return verdict.reasons[0] if verdict.reasons else "no reasons given"


def _table(verdict: Verdict, min_confidence: float, envelope_sha: str) -> Decision:
    if verdict.verdict == "fail":
        return Decision(
            state=State.FAIL,
            status=Status.FAILURE,
            reason="reviewer_fail",
            description=describe("fail", _first_reason(verdict)),
            detail="; ".join(verdict.reasons) or "the reviewer rejected the change",
            verdict=verdict,
            source="envelope",
            envelope_sha256=envelope_sha,
        )
    if not verdict.reasons:
        return _needs_human(
            "no_reasons",
            "pass without reasons",
            envelope_sha,
            verdict,
            status=Status.FAILURE,
            source="envelope",
        )
    if verdict.confidence < min_confidence:
        return _needs_human(
            "low_confidence",
            f"pass with confidence {verdict.confidence:g} below the minimum {min_confidence:g}",
            envelope_sha,
            verdict,
            status=Status.FAILURE,
            source="envelope",
        )
    count = len(verdict.reasons)
    return Decision(
        state=State.PASS,
        status=Status.SUCCESS,
        reason="reviewer_pass",
        description=describe(
            "pass", f"confidence {verdict.confidence:g}, {count} reason{'s' * (count != 1)}"
        ),
        detail="; ".join(verdict.reasons),
        verdict=verdict,
        source="envelope",
        envelope_sha256=envelope_sha,
    )
