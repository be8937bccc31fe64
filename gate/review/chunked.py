"""A pull request reviewed in chunks: budget, prompts, the pool, the table, the manifest.

:func:`gate.review.pipeline.review_diff` calls :func:`review_chunks` when the selected diff does
not fit one request (or a file in it is ``too_large``). The steps:

1. **budget** (:func:`gate.review.budget.chunk_budget`): the model's input window
   (``max_input_tokens``, else :func:`gate.review.chunks.context_window`) minus
   ``reviewer.max_tokens`` and the prompt around
   the diff (system prompt, binding, chunk header and file list, estimated at
   :data:`gate.review.chunks.BYTES_PER_TOKEN`), in bytes, capped by ``max_chunk_bytes``;
2. **plan** (:func:`gate.review.chunks.plan`); over ``max_chunks`` chunks the review is
   ``needs_human`` (``too_large``) before any model call, naming the chunk count and the
   estimated tokens;
3. **prompts**: each chunk's prompt is bound to the SHA-256 of that chunk's bytes and says
   which chunk of how many it is, with the list of every file of the pull request (path,
   change, bytes) so the reviewer knows the whole scope (:func:`scope_text`);
4. **the pool**: at most ``concurrency`` chunks at once (threads; the transport is
   synchronous), each with its own retry budget, one ``run_deadline``, a Retry-After on
   one chunk pausing all (:mod:`gate.reviewers.pool`); a context overflow splits that
   chunk in half (:func:`gate.review.chunks.halve`), at most :data:`MAX_SPLIT_DEPTH` levels;
5. **decide and aggregate**: each chunk's envelope is decided against its own binding, so
   a verdict carrying another chunk's ``diff_sha`` is unbound (``needs_human``); the
   answers are matched to chunks by the request that carried them, and the binding
   checks the digest, so the order in which they arrive does not matter. With
   ``agreement: k`` each chunk is asked k times (one after another, each on a fresh
   connection) and its k decisions go through :func:`gate.decide.agreement.aggregate` (a chunk
   passes only on k passes), exactly as a review in one request would; then
   :func:`gate.decide.chunk_table.aggregate` over the chunks;
6. **evidence**: the certificate's ``context.chunks`` holds the manifest (ordered chunk
   digests, their files, one digest over them) and each chunk's attempts, envelope and
   decision.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from gate.config.model import Config
from gate.decide.agreement import Answer, stops_asking
from gate.decide.agreement import aggregate as agree
from gate.decide.attempt import Attempt, ChunkAttempt, ReviewOutcome
from gate.decide.chunk_table import aggregate
from gate.decide.decision import Binding, Decision, State, Status, blocked, decide
from gate.decide.ends import CONTEXT_OVERFLOW
from gate.diff import Coverage, diff_sha, split_diff
from gate.errors import UsageError
from gate.review.budget import (
    chunk_prompt,
    chunk_setup,
    chunk_template_sha,
    fits_served,
    fits_window,
    input_window,
    request_size,
    too_long,
    too_many,
)
from gate.review.carry import Asked, Ledger, settle
from gate.review.certificate import attempts_from, envelope_bytes
from gate.review.chunks import Chunk, FileEntry, Plan, estimate_tokens, halve, plan
from gate.review.context import HeadFiles, partial_note, record, whole_prompt_sha256
from gate.review.cost import fits
from gate.review.prompt import Prompt
from gate.review.result import ChunkReview, ReviewResult, config_sha256, reviewer_of
from gate.review.scope import coverage_before_call, guard_coverage, nothing_reviewed
from gate.reviewers.pool import PacedOutcome, Pacer, review_paced
from gate.reviewers.settings import ReviewerSettings

#: how many times a chunk that overflows the model's window is halved, at most
MAX_SPLIT_DEPTH = 3


def chunk_rows(reviews: Sequence[ChunkReview]) -> list[dict[str, Any]]:
    """One row per chunk for the summary, the comment and ``review --json``: chunk, files,
    bytes, state, reason (``split`` rows are chunks replaced by their halves)."""
    return [
        {
            "chunk": r.chunk.name,
            "of": r.total,
            "files": len(r.chunk.pieces),
            "bytes": r.chunk.size,
            "diff_sha": r.chunk.sha,
            "state": r.state,
            "reason": r.reason,
            "attempts": len(r.outcome.attempts),
            "carried": None if r.carried is None else r.carried.origin(),
        }
        for r in reviews
    ]


def _order(name: str) -> tuple[int, ...]:
    """A chunk name's place (``3.2`` after ``3.1``); a name that is no chunk's goes last."""
    parts = name.split(".")
    if not all(part.isascii() and part.isdigit() for part in parts):
        return (1 << 62,)
    return tuple(int(part) for part in parts)


def carried_reviews(
    plan: Plan, config: Config, carry: Ledger | None, question: str
) -> dict[str, ChunkReview]:
    """The chunks of ``plan`` whose earlier answers are carried, by chunk name: looked up
    by ``question`` and the chunk's own digest, decided again against the chunk's binding
    (:func:`gate.review.carry.settle`); only a pass or a fail is carried."""
    out: dict[str, ChunkReview] = {}
    if carry is None or not question:
        return out
    total = len(plan.chunks)
    for chunk in plan.chunks:
        found = carry.find(question, chunk.sha)
        if found is None:
            continue
        decision = settle(
            found,
            chunk,
            policy_version=config.policy_version,
            min_confidence=config.min_confidence,
            agreement=config.agreement,
        )
        if decision is None:
            continue
        binding = Binding(diff_sha=chunk.sha, policy_version=config.policy_version)
        answers = tuple(
            Answer(decide(env, binding=binding, min_confidence=config.min_confidence), (), env)
            for env in found.envelopes
        )
        outcome = ReviewOutcome(attempts=(), envelope=found.envelopes[0])
        out[chunk.name] = ChunkReview(
            chunk, total, "", outcome, decision, answers=answers, carried=found,
            k=config.agreement,
        )  # fmt: skip
    return out


def run_chunks(
    plan: Plan,
    files: Sequence[FileEntry],
    config: Config,
    settings: ReviewerSettings,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_attempt: Callable[[Attempt], None] | None = None,
    carry: Ledger | None = None,
    question: str = "",
    head: HeadFiles | None = None,
) -> tuple[Decision, tuple[ChunkReview, ...]]:
    """Review every chunk of ``plan`` (the pool), decide each, aggregate them.

    ``carry``: earlier answers, looked up by ``question`` (the chunks' question,
    :meth:`gate.memory.question.QuestionKey.chunk_question`) and each
    chunk's digest; a chunk whose carried answers decide again to a pass or a fail
    (:func:`carried_reviews`) is not sent, every other chunk is.

    Every request is sized from the prompt that is really sent (:func:`request_size`),
    as :func:`gate.review.cost.request_bytes` sized them when ``max_cost`` approved the
    plan. A chunk whose real prompt does not fit the window (:func:`fits_window`: a long
    backtick run makes its fence long) is split before it is sent, as one the model
    answered with a context overflow is. A chunk is split only while the estimate with
    its halves' requests added still fits under ``max_cost``: the halves are requests
    the approval never counted. Otherwise it stays whole and blocks (``context_overflow``).
    ``head``: the files ``context: files`` shows, each chunk (and half) its own files'.
    """
    total = len(plan.chunks)
    affordable = _affordability(plan, files, config, head)
    pacer = Pacer(config.run_deadline, sleep=sleep)
    done = carried_reviews(plan, config, carry, question)

    def one(chunk: Chunk, depth: int) -> tuple[Chunk, int, Prompt, list[PacedOutcome]]:
        prompt = chunk_prompt(chunk, total, files, config, head)
        live = _labelled(on_attempt, f"{chunk.name}/{total}")
        answers: list[PacedOutcome] = []
        if depth < MAX_SPLIT_DEPTH and not fits_window(prompt.size, config):
            # never sent: it cannot fit, so it is split as an overflow would split it
            empty = ReviewOutcome(attempts=(), envelope=None)
            return chunk, depth, prompt, [PacedOutcome(empty, overflow=True)]
        # agreement: k asks each chunk up to k times, as review_diff asks a whole diff (a
        # pass needs k passes); a context overflow ends the asking (the chunk is split),
        # and so does an answer that decides a block (no set could still pass)
        for _ in range(config.agreement):
            paced = review_paced(
                settings,
                system=prompt.system,
                user=prompt.user,
                pacer=pacer,
                sleep=sleep,
                on_attempt=live,
            )
            answers.append(paced)
            if paced.overflow or stops_asking(_answer(chunk, paced, config)):
                break
        return chunk, depth, prompt, answers

    with ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="chunk") as pool:
        pending: set[Future[tuple[Chunk, int, Prompt, list[PacedOutcome]]]] = {
            pool.submit(one, chunk, 0) for chunk in plan.chunks if chunk.name not in done
        }
        while pending:
            finished, pending = _wait(pool, pending)
            for future in finished:
                chunk, depth, prompt, asked = future.result()
                outcome = _all_attempts(asked)
                overflow = asked[-1].overflow
                halves = halve(chunk) if overflow and depth < MAX_SPLIT_DEPTH else None
                if halves is not None and not affordable(halves):
                    halves = None  # the chunk blocks whole: its halves would pass max_cost
                if halves is not None:
                    done[chunk.name] = ChunkReview(
                        chunk, total, prompt.sha256(), outcome, None, split=True
                    )
                    pending |= {pool.submit(one, half, depth + 1) for half in halves}
                    continue
                decision, answers = _decide_chunk(chunk, prompt, asked, config)
                done[chunk.name] = ChunkReview(
                    chunk, total, prompt.sha256(), outcome, decision, answers=answers,
                    k=config.agreement,
                )  # fmt: skip
    reviews = tuple(sorted(done.values(), key=lambda r: _order(r.chunk.name)))
    return _chunk_table(plan, reviews, config), reviews


def _affordability(
    plan: Plan, files: Sequence[FileEntry], config: Config, head: HeadFiles | None
) -> Callable[[Sequence[Chunk]], bool]:
    """Whether a chunk's halves may be sent: with ``max_cost``, only while the estimate of
    every request it has allowed so far (the plan, then earlier halves) with theirs added
    still fits. The plan's requests are sized when a split first asks (without
    ``max_cost`` nothing asks: five chunk prompts built for nothing)."""
    total = len(plan.chunks)
    allowed: list[int] = []

    def affordable(halves: Sequence[Chunk]) -> bool:
        if config.max_cost is None:
            return True
        if not allowed:
            allowed.extend(request_size(chunk, total, files, config, head) for chunk in plan.chunks)
        more = [request_size(half, total, files, config, head) for half in halves]
        if not fits([*allowed, *more], config):
            return False
        allowed.extend(more)
        return True

    return affordable


def _labelled(
    on_attempt: Callable[[Attempt], None] | None, label: str
) -> Callable[[Attempt], None] | None:
    """``on_attempt`` with each attempt naming its chunk (the CLI prints "chunk 7/40:
    attempt ..."), or None when nobody listens."""
    if on_attempt is None:
        return None
    report = on_attempt
    return lambda attempt: report(ChunkAttempt.of(attempt, label))


def _all_attempts(asked: Sequence[PacedOutcome]) -> ReviewOutcome:
    """One chunk's outcome: every attempt of its answers, the first answer's envelope."""
    return ReviewOutcome(
        attempts=tuple(a for paced in asked for a in paced.outcome.attempts),
        envelope=asked[0].outcome.envelope,
        raw=asked[0].outcome.raw,
    )


def _decide_chunk(
    chunk: Chunk, prompt: Prompt, asked: Sequence[PacedOutcome], config: Config
) -> tuple[Decision, tuple[Answer, ...]]:
    """One chunk's decision from its answers (each decided against the chunk's own
    binding, then agreed), and the answers; a chunk never sent because its prompt cannot
    fit the window and cannot be split further is ``context_overflow``."""
    answers = tuple(_answer(chunk, paced, config) for paced in asked)
    decision = agree([answer.decision for answer in answers])
    if asked[-1].overflow and not any(paced.outcome.attempts for paced in asked):
        detail = (
            f"chunk {chunk.name}: {too_long(prompt.size, config)}; it cannot be split further"
            if not fits_served(prompt.size, config)
            else f"chunk {chunk.name}'s prompt ({prompt.size} bytes, about "
            f"{estimate_tokens(prompt.size)} tokens, and max_tokens "
            f"{config.reviewer.max_tokens}) does not fit the model's window of "
            f"{input_window(config)} tokens and was not sent: it cannot be split "
            "further within max_cost; raise max_input_tokens or max_cost, or "
            "split the change"
        )
        decision = blocked(State.NEEDS_HUMAN, CONTEXT_OVERFLOW, detail, status=Status.FAILURE)
    return decision, answers


def _answer(chunk: Chunk, paced: PacedOutcome, config: Config) -> Answer:
    """One answer of a chunk, decided against the chunk's own binding."""
    binding = Binding(diff_sha=chunk.sha, policy_version=config.policy_version)
    decision = decide(
        paced.outcome.envelope,
        binding=binding,
        min_confidence=config.min_confidence,
        attempts=paced.outcome.attempts,
    )
    return Answer(decision, paced.outcome.attempts, paced.outcome.envelope)


def _chunk_table(plan: Plan, reviews: Sequence[ChunkReview], config: Config) -> Decision:
    """The chunk table over the leaves: every planned chunk must be answered by itself or
    by all of its halves (a chunk answered by neither is missing, never a pass)."""
    leaves = [(r.chunk.name, r.decision) for r in reviews if not r.split]
    covered = {r.chunk.name.split(".")[0] for r in reviews if not r.split}
    leaves += [(c.name, None) for c in plan.chunks if c.name not in covered]
    whole = Binding(diff_sha=plan.coverage.diff_sha, policy_version=config.policy_version)
    return aggregate(leaves, binding=whole)


def no_room(config: Config, overhead: int, files: int) -> Decision:
    """The block when the prompt around the diff leaves no room for any of it: in the
    model's window, or in the server's context where it is known."""
    window = config.reviewer.window()
    return blocked(
        State.NEEDS_HUMAN,
        "too_large",
        f"the prompt around the diff (about {overhead} tokens, with the list of "
        f"{files} files) and max_tokens fill the model's window of "
        f"{input_window(config)} tokens; raise max_input_tokens or split the change"
        if window is None
        else f"the prompt around the diff (with the list of {files} files) and "
        f"max_tokens {config.reviewer.max_tokens:,} leave no room for any diff in the "
        f"server's context of {window:,} tokens (one token a byte, the chat template's "
        "own); raise the server's context (llama.cpp --ctx-size, Ollama PARAMETER "
        "num_ctx, vLLM --max-model-len, llama-cpp-python --n_ctx) or lower max_tokens",
    )


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
    question: Asked | None = None,
    head: HeadFiles | None = None,
) -> ReviewResult | None:
    """The review in chunks, or None when the diff fits one request
    whole (then :func:`review_diff` asks exactly as it always has). ``question``: the
    key of the question the whole review answers, from which each chunk's question is
    derived (what the certificate records and ``carry`` is looked up by); without it
    the chunks answer no named question and nothing is carried. ``head``: the files
    ``context: files`` shows beside each chunk."""
    setup = chunk_setup(diff, config, coverage, head)
    if setup is None:
        return None
    plan, files, limit, overhead = setup.plan, setup.files, setup.limit, setup.overhead
    template = chunk_template_sha(config)
    asked = (
        question.chunk_question(template, model=config.reviewer.model)
        if question is not None
        else ""
    )
    reviews: tuple[ChunkReview, ...] = ()
    outcome = ReviewOutcome(attempts=(), envelope=None)
    if limit < 1:
        review_decision = no_room(config, overhead, len(files))
    elif (over := too_many(plan, config, overhead)) is not None:
        review_decision = over
    elif not plan.chunks:
        review_decision = nothing_reviewed(plan.coverage) or blocked(
            State.NEEDS_HUMAN, "nothing_reviewed", "nothing to review"
        )
    elif gap := coverage_before_call(plan.coverage, allow_partial=config.allow_partial_coverage):
        review_decision = gap  # a too_large file: the chunks would be paid for, then block
    else:
        review_decision, reviews = run_chunks(
            plan, files, config, settings, sleep=sleep, on_attempt=on_attempt,
            carry=carry if asked else None, question=asked, head=head,
        )  # fmt: skip
        outcome = ReviewOutcome(
            attempts=tuple(a for r in reviews for a in r.outcome.attempts), envelope=None
        )
    decision, note = guard_coverage(
        review_decision, plan.coverage, allow_partial=config.allow_partial_coverage
    )
    context = dict(extra_cert or {})
    context["chunks"] = manifest_json(plan, reviews, asked, template)
    sent = [(r.chunk.name, r.chunk.data) for r in reviews if r.carried is None]
    shown = record(config, head, sent) if sent else None
    if shown is not None:
        context["reviewer_context"] = shown
    carried = sum(1 for r in reviews if r.carried is not None)
    notes = (*(() if note is None else (note,)), *partial_note(shown))
    if carried:
        notes = (
            f"{carried} of {len(plan.chunks)} chunks carried: their exact bytes passed (or "
            "failed) the same question in an earlier run, so they were not sent again",
            *notes,
        )
    return ReviewResult(
        decision=decision,
        outcome=outcome,
        binding=Binding(diff_sha=diff_sha(diff), policy_version=config.policy_version),
        # the question's prompt digest is the whole diff's, whatever the shape of the
        # review (gate/memory/question.py); each chunk's own digest is in the manifest
        prompt_sha256=whole_prompt_sha256(diff, config, head),
        config_sha256=config_sha256(config),
        reviewer=reviewer_of(settings),
        min_confidence=config.min_confidence,
        coverage=plan.coverage,
        review_decision=review_decision,
        notes=notes,
        extra=context,
        chunks=reviews,
    )


def manifest_json(
    plan: Plan, reviews: Sequence[ChunkReview], question: str = "", template: str = ""
) -> dict[str, Any]:
    """The certificate's record: the manifest of the chunks as reviewed, each review, the
    chunks' question (:meth:`gate.memory.question.QuestionKey.chunk_question`, what a
    later run carries by) with the chunk prompts' template digest it was derived from
    (so the certificate's own key re-derives it), and how many chunks were carried
    instead of sent."""
    leaves = [r.chunk for r in reviews if not r.split] or list(plan.chunks)
    reviewed = Plan(
        chunks=tuple(leaves),
        coverage=plan.coverage,
        too_large=plan.too_large,
        max_chunk_bytes=plan.max_chunk_bytes,
    )
    return {
        "manifest": reviewed.manifest(),
        "max_chunk_bytes": plan.max_chunk_bytes,
        "question": question,
        "template_sha": template,
        "carried": sum(1 for r in reviews if r.carried is not None),
        "reviews": [r.to_json() for r in reviews],
    }


def _wait(pool: ThreadPoolExecutor, pending: set[Future[Any]]) -> tuple[set[Any], set[Any]]:
    """The next finished chunks. On Ctrl-C the chunks not yet started are cancelled, so
    no new request is sent (those under way end within their own deadlines)."""
    try:
        finished, left = wait(pending, return_when=FIRST_COMPLETED)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    return set(finished), set(left)


def recorded_attempts(answer: object) -> tuple[Attempt, ...]:
    """The attempts one chunk's answer records (none when the record is malformed): a
    re-decision without an envelope names the recorded cause (``connection_cut``), not
    ``no_response``. Attempts never turn a missing envelope into anything but incomplete."""
    if not isinstance(answer, dict) or not isinstance(answer.get("attempts"), list):
        return ()
    try:
        return attempts_from(answer)
    except UsageError:
        return ()


def redecide(
    record: Mapping[str, Any],
    diff: bytes,
    *,
    policy_version: str,
    min_confidence: float,
    coverage: Mapping[str, Any] | None = None,
    allow_gaps: bool = False,
    read: bool = True,
) -> Decision:
    """Decide a chunked certificate again, offline, from ``diff`` (the selected bytes).
    ``read``: by the contract with the read words (a certificate made before them: False).

    Only the bytes the record names are accepted. The diff is planned again with the
    recorded ``max_chunk_bytes`` (and the recorded halvings), and that plan must be the
    recorded one: its manifest (every chunk's digest, size and files, in order) equal to
    ``record["manifest"]``, every file it leaves out (``too_large``) named so in the
    recorded ``coverage``, and the bytes it sends the recorded ``coverage["diff_sha"]``;
    anything else is ``incomplete`` (``certificate_mismatch``), naming what differs.
    Each chunk's digest is recomputed from ``diff``, never read from the record; each
    recorded envelope is decided against its recomputed chunk's binding, then
    :func:`gate.decide.chunk_table.aggregate`. A pass over a plan that leaves files out
    stands only when ``allow_gaps`` (the run itself passed with those gaps: the caller
    checks the recorded decision), else it is ``needs_human`` (``partial_coverage``).
    """
    limit = record.get("max_chunk_bytes")
    reviews = record.get("reviews")
    if not isinstance(limit, int) or limit < 1 or not isinstance(reviews, list):
        return blocked(State.INCOMPLETE, "certificate_invalid", "the chunk record is malformed")
    sections = split_diff(diff)
    whole = Coverage(
        reviewed=tuple(s.path for s in sections if s.path),
        skipped=(),
        diff_bytes=len(diff),
        diff_sha=diff_sha(diff),
    )
    cut = plan(diff, whole, max_chunk_bytes=limit, sections=sections)
    chunks = {c.name: c for c in cut.chunks}
    rows: list[tuple[str, Decision | None]] = []
    split = {str(r.get("chunk")) for r in reviews if isinstance(r, dict) and r.get("split")}
    for name in sorted(split, key=_order):
        parent = chunks.get(name)
        halves = halve(parent) if parent is not None else None
        if not halves:
            # a split that has no halves (one hunk, or no such chunk): nothing answered
            # for these bytes, so the chunk is missing, never left out of the table
            rows.append((name, None))
            continue
        for half in halves:
            chunks[half.name] = half
    leaves = sorted(
        (c for c in chunks.values() if c.name not in split), key=lambda c: _order(c.name)
    )
    replanned = Plan(
        chunks=tuple(leaves),
        coverage=cut.coverage,
        too_large=cut.too_large,
        max_chunk_bytes=limit,
    )
    mismatch = plan_mismatch(replanned, record.get("manifest"), coverage)
    if mismatch is not None:
        return blocked(
            State.INCOMPLETE,
            "certificate_mismatch",
            f"the diff given is not what the certificate names: {mismatch}; give the diff "
            "the run reviewed (its selected bytes), or re-run the review",
        )
    rows += [
        _recorded_row(review, chunks, policy_version, min_confidence, read=read)
        for review in reviews
        if isinstance(review, dict) and not review.get("split")
    ]
    answered = {name for name, _ in rows}
    rows += [(c.name, None) for c in chunks.values() if c.name not in answered | split]
    rows.sort(key=lambda row: _order(row[0]))
    decision = aggregate(rows, binding=Binding(whole.diff_sha, policy_version))
    if decision.state is State.PASS and cut.too_large and not allow_gaps:
        names = ", ".join(json.dumps(s.path) for s in cut.too_large)
        return blocked(
            State.NEEDS_HUMAN,
            "partial_coverage",
            f"every chunk passes, but the plan leaves out {names} (too_large) and the "
            "recorded decision did not allow partial coverage",
        )
    return decision


def _recorded_row(
    review: Mapping[str, Any],
    chunks: Mapping[str, Chunk],
    policy_version: str,
    min_confidence: float,
    *,
    read: bool,
) -> tuple[str, Decision | None]:
    """One recorded chunk decided again: its answers' envelopes against the binding of the
    chunk recomputed from the diff (a chunk the diff does not hold, or of other bytes, is
    missing), agreed as the run agreed them."""
    name = str(review.get("chunk"))
    chunk = chunks.get(name)
    if chunk is None or chunk.sha != review.get("diff_sha"):
        return name, None
    binding = Binding(diff_sha=chunk.sha, policy_version=policy_version)
    recorded = review.get("answers")
    answers = recorded if isinstance(recorded, list) and recorded else [review]
    decisions = [
        decide(
            envelope_bytes(one.get("envelope") if isinstance(one, dict) else None),
            binding=binding,
            min_confidence=min_confidence,
            attempts=recorded_attempts(one),  # a missing envelope keeps its recorded cause
            read=read,
        )
        for one in answers
    ]
    return name, agree(decisions)


def plan_mismatch(replanned: Plan, manifest: Any, coverage: Mapping[str, Any] | None) -> str | None:
    """How ``replanned`` differs from the recorded ``manifest`` and ``coverage``, or None.

    Every chunk (digest, size, files, order) must be the recorded one, and every file the
    plan leaves out must be recorded as left out for that reason (path and bytes), so a
    file added to the diff can never slip out of the review unnamed.
    """
    if not isinstance(manifest, dict):
        return "the certificate records no chunk manifest"
    again = replanned.manifest()
    if manifest.get("sha256") != again["sha256"] or manifest.get("chunks") != again["chunks"]:
        recorded = manifest.get("chunks")
        count = len(recorded) if isinstance(recorded, list) else "no"
        return (
            f"its chunks ({len(again['chunks'])}, manifest {again['sha256'][:12]}) are not "
            f"the recorded ones ({count}, manifest {str(manifest.get('sha256'))[:12]})"
        )
    skipped = coverage.get("skipped") if isinstance(coverage, Mapping) else None
    named = {
        (item.get("path"), item.get("why"), item.get("bytes"))
        for item in (skipped if isinstance(skipped, list) else [])
        if isinstance(item, dict)
    }
    for item in replanned.too_large:
        if (item.path, str(item.why), item.size) not in named:
            return (
                f"{json.dumps(item.path)} ({item.size} bytes) is left out as {item.why}, "
                "which the certificate's coverage does not name"
            )
    sent = coverage.get("diff_sha") if isinstance(coverage, Mapping) else None
    if sent != replanned.coverage.diff_sha:
        return (
            f"the bytes it sends (sha256 {replanned.coverage.diff_sha[:12]}) are not the "
            f"recorded coverage's ({str(sent)[:12]})"
        )
    return None


__all__ = [
    "MAX_SPLIT_DEPTH",
    "carried_reviews",
    "chunk_rows",
    "manifest_json",
    "plan_mismatch",
    "redecide",
    "review_chunks",
    "run_chunks",
]
