"""One review, end to end: diff bytes + config -> decision + certificate.

:func:`review_diff` is the pipeline of docs/design.md between the diff and the
status, shared by ``review-gate review`` and the GitHub action: it binds the
review to ``sha256(diff)`` and the policy version, builds the prompt, calls
the reviewer transport (which retries only bytes that did not arrive) and
applies the decision table to the sealed envelope; the certificate is built from
the result, once, by the caller that writes it. It touches no environment
variable, no file and no exit code; the callers do.

Before it, the selection both callers share: :func:`select_diff` splits the
diff into file sections and applies the config's ``include``/``exclude`` and
``max_diff_bytes``; :func:`nothing_reviewed` blocks (``needs_human``,
``nothing_reviewed``) when no file section is left, without calling the model;
and ``review_diff(..., coverage=...)`` turns a pass on partial coverage into
``needs_human`` (``partial_coverage``) unless ``allow_partial_coverage``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from gate import certificate, reviewers
from gate.agreement import Answer, aggregate, answers_json
from gate.agreement import summary as agreement_summary
from gate.attempt import Attempt, ReviewOutcome
from gate.config import Config
from gate.decision import Binding, Decision, Family, State, blocked, decide
from gate.diff import COVER_HINT, Coverage, FileSection, SelectedDiff, select, split_diff
from gate.errors import GateError
from gate.prompt import build_prompt

if TYPE_CHECKING:
    from gate.chunks import FileEntry, Plan
    from gate.chunks.carry import Ledger
    from gate.chunks.review import ChunkReview
    from gate.reviewers.settings import ReviewerSettings


@dataclass(frozen=True)
class Reviewer:
    """Who reviewed, as the certificate names it (no key, no credentials in the URL)."""

    provider: str
    model: str
    base_url: str
    max_tokens: int
    temperature: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ReviewResult:
    """Everything one review produced; the certificate is built from it, once, by whoever
    writes it (:meth:`certificate_for`), with the caller's own context added."""

    decision: Decision
    outcome: ReviewOutcome
    binding: Binding
    prompt_sha256: str
    config_sha256: str
    reviewer: Reviewer
    min_confidence: float
    #: what the reviewer saw (when the caller passed it); ``decision`` already
    #: reflects it, ``review_decision`` is the verdict's own decision
    coverage: Coverage | None = None
    review_decision: Decision | None = None
    notes: tuple[str, ...] = ()
    #: the caller's context for the certificate, given to :func:`review_diff`
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: each chunk as reviewed, when the diff was reviewed in chunks (gate/chunks/review.py)
    chunks: tuple[ChunkReview, ...] = ()
    #: with ``agreement: k`` > 1, each of the k answers (``outcome`` is the first's)
    answers: tuple[Answer, ...] = ()
    #: the reviewers asked before this one (``fallbacks:``), each of which could not
    #: answer for an ``unavailable`` reason; ``reviewer`` is the one that answered
    earlier: tuple[ReviewResult, ...] = ()

    def paid_attempts(self) -> tuple[Attempt, ...]:
        """Every request the review paid for, in order: each attempt of each of the
        ``agreement`` answers (``outcome`` holds only the first answer's), and in a
        chunked review each chunk's, halves and overflowed chunks included. The cost
        is counted over these."""
        before = tuple(a for result in self.earlier for a in result.paid_attempts())
        if self.chunks:
            return before + tuple(a for review in self.chunks for a in review.outcome.attempts)
        if len(self.answers) > 1:
            return before + tuple(a for answer in self.answers for a in answer.attempts)
        return before + self.outcome.attempts

    def agreement(self) -> str | None:
        """``3/3 agree: pass`` (for the summary), or None with a single answer."""
        return agreement_summary(self.answers) if len(self.answers) > 1 else None

    def certificate_for(
        self, decision: Decision | None = None, *, extra: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The certificate of this review, deciding ``decision`` (default: the review's)."""
        context: dict[str, Any] = {
            "reviewer": self.reviewer.to_json(),
            "min_confidence": self.min_confidence,
        }
        if self.coverage is not None:
            context["coverage"] = self.coverage.to_json()
            if self.review_decision is not None and self.decision is not self.review_decision:
                context["review_decision"] = self.review_decision.to_json()
        if len(self.answers) > 1:
            context["agreement"] = {
                "k": len(self.answers),
                "summary": agreement_summary(self.answers),
                "answers": answers_json(self.answers),
            }
        if self.earlier:
            context["fallback"] = fallback_json(self)
        context.update(self.extra)
        context.update(extra or {})
        return certificate.build(
            decision or self.decision,
            binding=self.binding,
            attempts=self.outcome.attempts,
            inputs={
                "diff": self.binding.diff_sha,
                "prompt": self.prompt_sha256,
                "config": self.config_sha256,
            },
            envelope=self.outcome.envelope,
            extra=context,
        )

    @cached_property
    def certificate(self) -> dict[str, Any]:
        """The certificate with no caller context (built on first use)."""
        return self.certificate_for()


def binding_for(diff: bytes, config: Config) -> Binding:
    """The binding the verdict must repeat: SHA-256 of the diff bytes and the policy."""
    return Binding(diff_sha=hashlib.sha256(diff).hexdigest(), policy_version=config.policy_version)


def prompt_sha256(diff: bytes, config: Config) -> str:
    """The digest of the prompt :func:`review_diff` would send for ``diff`` (the memory's
    key, known before any call)."""
    binding = binding_for(diff, config)
    return build_prompt(diff, binding=binding, instructions=config.instructions).sha256()


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment (safe for a certificate).

    A URL urllib cannot read (it never reaches a certificate: the transport's
    validation refuses it first) is shown as ``"<invalid URL>"``, never raised.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def select_diff(
    diff: bytes | Sequence[FileSection], config: Config, *, source: str = "diff"
) -> SelectedDiff:
    """What the reviewer is shown: per file, the config's include/exclude and byte limit.

    ``diff`` is the raw diff (split here) or its sections (the action's, which
    may hold files GitHub sent no patch for). Every file left out is recorded
    in the coverage manifest with why.
    """
    sections = split_diff(diff) if isinstance(diff, bytes) else list(diff)
    return select(
        sections,
        include=config.include,
        exclude=config.exclude,
        max_bytes=config.max_diff_bytes,
        source=source,
        original=diff if isinstance(diff, bytes) else None,
        assets=config.binary_assets == "allow",
    )


def nothing_reviewed(coverage: Coverage) -> Decision | None:
    """``needs_human`` (``nothing_reviewed``) when no file section is reviewed, else None.

    An empty review must never reach the model: a verdict on nothing would pass.
    """
    if coverage.reviewed:
        return None
    if coverage.total == 0:
        cause = (
            "the diff holds no file section (it is empty, or has no 'diff --git' "
            "headers: make it with git diff)"
        )
    else:
        cause = f"{coverage.summary()}: {coverage.advice()}"
    return blocked(State.NEEDS_HUMAN, "nothing_reviewed", f"nothing to review: {cause}")


#: the files a partial-coverage block names (the manifest has them all)
NAMED_GAPS = 5


def coverage_before_call(coverage: Coverage, *, allow_partial: bool) -> Decision | None:
    """``needs_human`` (``partial_coverage``) when files the review needs were left out and
    partial coverage is not allowed: decided before any request, so a review that would
    block on coverage is never paid for. Names the files and what would cover each."""
    if coverage.complete or allow_partial:
        return None
    gaps = coverage.gaps
    named = "; ".join(
        f"{item.path} ({COVER_HINT.get(item.why, str(item.why))})" for item in gaps[:NAMED_GAPS]
    )
    more = f"; and {len(gaps) - NAMED_GAPS} more" if len(gaps) > NAMED_GAPS else ""
    return blocked(
        State.NEEDS_HUMAN,
        "partial_coverage",
        f"partial coverage: {coverage.summary()}; the reviewer was not asked. Not reviewed: "
        f"{named}{more}. Cover those files, or a maintainer sets allow_partial_coverage: true "
        "in the base config",
    )


def guard_coverage(
    decision: Decision, coverage: Coverage, *, allow_partial: bool
) -> tuple[Decision, str | None]:
    """The decision once coverage is taken into account, and a note for the report.

    A pass on partial coverage is ``needs_human`` (``partial_coverage``) unless
    partial coverage is allowed; a blocking decision stays as it is, with a note.
    """
    if coverage.complete or allow_partial:
        return decision, None
    if decision.state is State.PASS:
        guarded = blocked(
            State.NEEDS_HUMAN,
            "partial_coverage",
            f"partial coverage: {coverage.summary()}; review the rest by hand or set "
            "allow_partial_coverage: true",
        )
        return guarded, None
    return decision, f"partial coverage: {coverage.summary()}"


def blocked_certificate(
    decision: Decision,
    diff: bytes,
    config: Config,
    *,
    coverage: Coverage | None = None,
    extra_cert: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The certificate of a run blocked before any reviewer call (no attempts, no envelope)."""
    binding = binding_for(diff, config)
    context: dict[str, Any] = {"min_confidence": config.min_confidence}
    if coverage is not None:
        context["coverage"] = coverage.to_json()
    context.update(extra_cert or {})
    return certificate.build(
        decision,
        binding=binding,
        attempts=(),
        inputs={"diff": binding.diff_sha, "config": config_sha256(config)},
        envelope=None,
        extra=context,
    )


def config_sha256(config: Config) -> str:
    canonical = json.dumps(config.to_json(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


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
    With ``config.agreement`` k > 1 the reviewer is asked k times, each on a fresh
    connection, and :func:`gate.agreement.aggregate` decides (a pass needs k passes).
    ``carry``: earlier chunk answers (:mod:`gate.chunks.carry`) for a review in chunks;
    ignored with ``incremental: off`` and for a diff reviewed in one request.
    """
    binding = binding_for(diff, config)
    if coverage is not None and coverage.diff_sha != binding.diff_sha:
        raise GateError(
            "review_diff was given a coverage manifest for other bytes than the diff; "
            "this is a bug in review-gate, please report it",
            reason="internal_error",
        )
    chained = config.chain() if fallback_keys is not None else (config,)
    keys = (api_key, *(fallback_keys or ()))
    if len(keys) != len(chained):
        raise GateError(
            f"review_diff was given {len(keys) - 1} fallback keys for {len(config.fallbacks)} "
            "fallbacks; this is a bug in review-gate, please report it",
            reason="internal_error",
        )
    chain = [(c, c.reviewer.to_settings(key)) for c, key in zip(chained, keys, strict=True)]
    for _, settings in chain:
        reviewers.validate(settings)  # a UsageError naming the setting, before any request
    allow = config.allow_partial_coverage
    if coverage is not None and (gap := coverage_before_call(coverage, allow_partial=allow)):
        return ReviewResult(  # never pay for a review that will block on coverage
            decision=gap,
            outcome=ReviewOutcome(attempts=(), envelope=None),
            binding=binding,
            prompt_sha256=prompt_sha256(diff, config),
            config_sha256=config_sha256(config),
            reviewer=reviewer_of(chain[0][1]),
            min_confidence=config.min_confidence,
            coverage=coverage,
            review_decision=gap,
            extra=dict(extra_cert or {}),
        )
    earlier: list[ReviewResult] = []
    for position, (asked, settings) in enumerate(chain):
        result = review_chunks(
            diff,
            asked,
            settings,
            coverage=coverage,
            extra_cert=extra_cert,
            sleep=sleep,
            on_attempt=on_attempt,
            carry=None if config.incremental == "off" else carry,
        ) or _review_whole(
            diff, asked, settings, binding, coverage=coverage, extra_cert=extra_cert,
            sleep=sleep, on_attempt=on_attempt,
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


def could_not_answer(result: ReviewResult) -> bool:
    """Whether the next reviewer may be asked: the review is ``unavailable`` (the reviewer
    could not answer: quota, rate limit, outage, timeout, cut) and no answer or chunk of
    it decided anything (a ``fail``, a ``needs_human`` of a malformed, unbound or
    low-confidence answer, an unstable set): an outage is never a way to re-roll."""
    decided = result.review_decision or result.decision
    if decided.family is not Family.UNAVAILABLE:
        return False
    parts = [a.decision for a in result.answers] + [
        c.decision for c in result.chunks if c.decision is not None and not c.split
    ]
    return not any(d.state in (State.FAIL, State.NEEDS_HUMAN) for d in parts)


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


def fallback_json(result: ReviewResult) -> dict[str, Any]:
    """The certificate's ``context.fallback``: who answered, and why each earlier one did not."""
    return {
        "answered_by": {"position": len(result.earlier) + 1, **result.reviewer.to_json()},
        "earlier": [
            {
                "position": n,
                "reviewer": r.reviewer.to_json(),
                "decision": r.decision.to_json(),
                "attempts": [a.to_json() for a in r.paid_attempts()],
            }
            for n, r in enumerate(result.earlier, 1)
        ],
    }


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
    prompt = build_prompt(diff, binding=binding, instructions=config.instructions)
    answers: list[Answer] = []
    outcomes: list[ReviewOutcome] = []
    for _ in range(config.agreement):
        # each answer on a fresh connection: review() opens one per attempt
        outcome = reviewers.review(
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


def reviewer_of(settings: ReviewerSettings) -> Reviewer:
    """Who reviewed, as the certificate names it (no key; the URL without credentials)."""
    return Reviewer(
        provider=settings.provider,
        model=settings.model,
        base_url=public_url(settings.base_url),
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
    )


@dataclass(frozen=True)
class ChunkSetup:
    """How a diff too large for one request is cut: the plan, the pull request's file
    list, the most diff bytes per chunk (0: nothing fits) and the estimated tokens of
    the prompt around each chunk's diff."""

    plan: Plan
    files: tuple[FileEntry, ...]
    limit: int
    overhead: int


def chunk_setup(diff: bytes, config: Config, coverage: Coverage | None = None) -> ChunkSetup | None:
    """The chunks ``diff`` is reviewed in, or None when it fits one request whole (and
    ``incremental`` is not ``always``, which chunks even then). The one place the cut is
    made: :func:`review_chunks` and the cost estimate (:func:`gate.cost.estimate`) both
    ask here."""
    from gate import chunks
    from gate.chunks import review as chunked

    sections = split_diff(diff)
    cov = coverage or Coverage(
        reviewed=tuple(s.path for s in sections if s.path),
        skipped=(),
        diff_bytes=len(diff),
        diff_sha=hashlib.sha256(diff).hexdigest(),
    )
    files = chunks.file_list(diff, cov, sections)
    limit, overhead = chunked.chunk_budget(config, files)
    if limit >= len(diff) and config.incremental != "always":
        return None
    plan = chunks.plan(diff, cov, max_chunk_bytes=max(1, limit), sections=sections)
    if plan.too_large:
        # the list and the plan together: a file the plan leaves out is listed as not
        # reviewed (too_large), never as an ordinary change "in other chunks"
        files = chunks.plan_file_list(diff, plan, sections)
    return ChunkSetup(plan, tuple(files), limit, overhead)


def review_chunks(
    diff: bytes,
    config: Config,
    settings: ReviewerSettings,
    *,
    coverage: Coverage | None,
    extra_cert: Mapping[str, Any] | None,
    sleep: Callable[[float], None],
    on_attempt: Callable[[Attempt], None] | None,
    carry: Ledger | None = None,
) -> ReviewResult | None:
    """The review in chunks (:mod:`gate.chunks.review`), or None when the diff fits one request
    whole (then :func:`review_diff` asks exactly as it always has)."""
    from gate.chunks import review as chunked

    setup = chunk_setup(diff, config, coverage)
    if setup is None:
        return None
    plan, files, limit, overhead = setup.plan, setup.files, setup.limit, setup.overhead
    question = chunked.chunk_question(config, config_sha256(config))
    reviews: tuple[ChunkReview, ...] = ()
    outcome = ReviewOutcome(attempts=(), envelope=None)
    if limit < 1:
        review_decision = blocked(
            State.NEEDS_HUMAN,
            "too_large",
            f"the prompt around the diff (about {overhead} tokens, with the list of "
            f"{len(files)} files) and max_tokens fill the model's window of "
            f"{chunked.input_window(config)} tokens; raise max_input_tokens or split the change",
        )
    elif (over := chunked.too_many(plan, config, overhead)) is not None:
        review_decision = over
    elif not plan.chunks:
        review_decision = nothing_reviewed(plan.coverage) or blocked(
            State.NEEDS_HUMAN, "nothing_reviewed", "nothing to review"
        )
    elif gap := coverage_before_call(plan.coverage, allow_partial=config.allow_partial_coverage):
        review_decision = gap  # a too_large file: the chunks would be paid for, then block
    else:
        review_decision, reviews = chunked.run_chunks(
            plan, files, config, settings, sleep=sleep, on_attempt=on_attempt,
            carry=carry, question=question,
        )  # fmt: skip
        outcome = ReviewOutcome(
            attempts=tuple(a for r in reviews for a in r.outcome.attempts), envelope=None
        )
    decision, note = guard_coverage(
        review_decision, plan.coverage, allow_partial=config.allow_partial_coverage
    )
    context = dict(extra_cert or {})
    context["chunks"] = chunked.manifest_json(plan, reviews, question)
    carried = sum(1 for r in reviews if r.carried is not None)
    notes = () if note is None else (note,)
    if carried:
        notes = (
            f"{carried} of {len(plan.chunks)} chunks carried: their exact bytes passed (or "
            "failed) the same question in an earlier run, so they were not sent again",
            *notes,
        )
    return ReviewResult(
        decision=decision,
        outcome=outcome,
        binding=Binding(
            diff_sha=hashlib.sha256(diff).hexdigest(), policy_version=config.policy_version
        ),
        # the question's prompt digest is the whole diff's, whatever the shape of the
        # review (gate/memory/question.py); each chunk's own digest is in the manifest
        prompt_sha256=prompt_sha256(diff, config),
        config_sha256=config_sha256(config),
        reviewer=reviewer_of(settings),
        min_confidence=config.min_confidence,
        coverage=plan.coverage,
        review_decision=review_decision,
        notes=notes,
        extra=context,
        chunks=reviews,
    )
