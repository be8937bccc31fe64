"""Replay: ask again for a recorded diff, on a fresh connection, and compare the verdicts.

A recorded decision (:class:`Recorded`, read from a certificate or from a
:class:`gate.memory.record.Record`) names the diff (``diff_sha``), the policy, the reviewer and
the prompt it was reviewed with. :func:`replay_one` checks that the diff bytes still hash
to ``diff_sha`` (the raw bytes, or what the config's selection keeps of them) and that the
rebuilt prompt has the recorded (whole-diff) digest, applies the review's own guards before
spending anything (a record with no verdict to compare is not asked again; the ``max_cost``
estimate over every chunk, attempt and agreement answer), reviews them with
:func:`gate.review.pipeline.review_diff`, and classifies the pair:

* ``stable``: the replayed answer gives the recorded verdict;
* ``unstable``: the verdict changed (or a recorded verdict now comes back malformed);
* ``degraded``: stable, but the recorded decision came from a repair, an override, a
  cached decision or partial coverage, or had no verdict to compare: listed for audit;
* ``unreplayable``: the diff is missing or no longer hashes to ``diff_sha``, the prompt
  differs, the certificate is unreadable, or the reviewer's answer did not arrive.

:func:`exit_code` maps rows to 0 (all stable or degraded), 1 (any unstable) and
3 (any unreplayable; it wins, since nothing can be said about those rows).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gate.config.inputs import apply_inputs
from gate.config.model import Config
from gate.decide.decision import State
from gate.diff import Coverage
from gate.errors import ConfigError, ExitCode, GateError, UsageError
from gate.memory.question import key_for
from gate.memory.record import Record
from gate.review import cost
from gate.review.budget import chunk_prompt, chunk_setup
from gate.review.chunks import halve
from gate.review.pipeline import review_diff
from gate.review.prompt import prompt_sha256
from gate.review.scope import select_diff
from gate.safe import strictjson, untrusted

#: recorded sources whose decision is not the reviewer's own clean answer
DEGRADED_SOURCES = frozenset({"repaired", "override", "cached"})


class Outcome(StrEnum):
    STABLE = "stable"
    UNSTABLE = "unstable"
    DEGRADED = "degraded"
    UNREPLAYABLE = "unreplayable"


@dataclass(frozen=True)
class Recorded:
    """What a replay needs from a recorded decision."""

    name: str
    diff_sha: str
    policy_version: str
    provider: str | None
    model: str | None
    base_url: str | None
    prompt_sha: str | None
    verdict: str | None
    state: str
    #: why the recorded decision is degraded (repair, override, cached, partial), or None
    degraded: str | None
    base_sha: str = ""
    head_sha: str = ""
    #: a review in chunks: each chunk's name, the digest of its bytes and of its prompt
    chunk_prompts: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class Row:
    name: str
    diff_sha: str
    recorded: str
    replayed: str
    outcome: Outcome
    note: str


class ReplayError(GateError):
    reason = "unreplayable"


def _verdict_of(decision: Any) -> str | None:
    if isinstance(decision, dict) and isinstance(decision.get("verdict"), dict):
        verdict = decision["verdict"].get("verdict")
        return verdict if verdict in ("pass", "fail") else None
    return None


def from_certificate(data: bytes, name: str) -> Recorded:
    """The recorded decision of a certificate (``review-gate.certificate/1``)."""
    cert = strictjson.loads(data, what=f"the certificate {name}", error=ReplayError)
    if not isinstance(cert, dict) or cert.get("schema") != "review-gate.certificate/1":
        raise ReplayError(f"{name} is not a review-gate certificate (review-gate.certificate/1)")
    binding, decision = cert.get("binding"), cert.get("decision")
    context = _obj(cert.get("context"))
    inputs = _obj(cert.get("inputs"))
    if not isinstance(binding, dict) or not isinstance(decision, dict):
        raise ReplayError(f"{name} has no binding or no decision")
    diff_sha, policy = binding.get("diff_sha"), binding.get("policy_version")
    if not isinstance(diff_sha, str) or len(diff_sha) != 64 or not isinstance(policy, str):
        raise ReplayError(f"{name} records no diff_sha (nothing was reviewed)")
    reviewer = _obj(context.get("reviewer"))
    verdict = _verdict_of(decision) or _verdict_of(context.get("review_decision"))
    degraded = None
    coverage = context.get("coverage")
    if decision.get("source") == "repaired" or str(decision.get("reason")).startswith("repaired"):
        degraded = "repaired"
    elif decision.get("reason") == "override" or "override" in context:
        degraded = "override"
    elif decision.get("source") == "cached":
        degraded = "cached"
    elif isinstance(coverage, dict) and coverage.get("complete") is False:
        degraded = "partial coverage"
    github = _obj(context.get("github"))
    chunk_reviews = _obj(context.get("chunks")).get("reviews")
    chunk_prompts = tuple(
        (
            str(review.get("chunk")),
            str(review.get("diff_sha")),
            str(review.get("prompt_sha256")),
        )
        for review in (chunk_reviews if isinstance(chunk_reviews, list) else [])
        if isinstance(review, dict)
    )
    return Recorded(
        name=name,
        diff_sha=diff_sha,
        policy_version=policy,
        provider=_str(reviewer.get("provider")),
        model=_str(reviewer.get("model")),
        base_url=_str(reviewer.get("base_url")),
        prompt_sha=_str(inputs.get("prompt")),
        verdict=verdict,
        state=str(decision.get("state", "")),
        degraded=degraded,
        base_sha=str(github.get("base_sha") or ""),
        head_sha=str(github.get("head_sha") or ""),
        chunk_prompts=chunk_prompts,
    )


def from_record(record: Record, name: str) -> Recorded:
    """The recorded decision of a history record (the action's scheduled replay)."""
    if record.diff_sha is None:
        raise ReplayError(f"{name} records no diff_sha (nothing was reviewed)")
    degraded = record.source if record.source in DEGRADED_SOURCES else None
    return Recorded(
        name=name,
        diff_sha=record.diff_sha,
        policy_version=record.policy_version,
        provider=record.provider or None,
        model=record.model or None,
        base_url=None,
        prompt_sha=record.prompt_sha,
        verdict=record.verdict,
        state=record.state,
        degraded=degraded,
        base_sha=record.base_sha,
        head_sha=record.head_sha,
    )


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def config_for(recorded: Recorded, base: Config, overrides: Mapping[str, str]) -> Config:
    """``base`` with the recorded reviewer and policy, then ``overrides`` (the flags of
    ``review``, as action input names) on top. A ConfigError names what is wrong."""
    given = {
        name: value
        for name, value in (
            ("provider", recorded.provider),
            ("model", recorded.model),
            ("base-url", recorded.base_url),
            ("policy-version", recorded.policy_version),
        )
        if value
    }
    config = apply_inputs(base, given)
    return apply_inputs(config, dict(overrides))


def bytes_for(recorded: Recorded, diff: bytes, config: Config) -> bytes | None:
    """The bytes that hash to the recorded ``diff_sha``: the diff itself, or what the
    config's selection keeps of it; None when neither does."""
    found = selection_for(recorded, diff, config)
    return None if found is None else found[0]


def selection_for(
    recorded: Recorded, diff: bytes, config: Config
) -> tuple[bytes, Coverage | None] | None:
    """:func:`bytes_for`, with the selection's coverage when the bytes were selected from
    ``diff`` (its skipped files are listed in every chunk's prompt, as in the run)."""
    if hashlib.sha256(diff).hexdigest() == recorded.diff_sha:
        return diff, None
    try:
        selected = select_diff(diff, config)
    except GateError:
        return None
    if hashlib.sha256(selected.data).hexdigest() != recorded.diff_sha:
        return None
    return selected.data, selected.coverage


def chunk_prompts_differ(
    recorded: Recorded, data: bytes, coverage: Coverage | None, config: Config
) -> str | None:
    """Why a review in chunks cannot be replayed as recorded, or None when it can: the
    diff is planned again (:func:`gate.review.budget.chunk_setup`, the recorded halvings
    too) and every recorded chunk's prompt digest must be the re-planned chunk's, so a
    replay asks exactly the questions the run asked, chunk by chunk."""
    setup = chunk_setup(data, config, coverage)
    count = len({name.split(".")[0] for name, _, _ in recorded.chunk_prompts})
    if setup is None:
        return (
            f"the run reviewed this diff in {count} chunks; with this config it fits one "
            "request: pass --config with the run's max_chunk_bytes, max_input_tokens, "
            "incremental and reviewer.max_tokens"
        )
    chunks = {chunk.name: chunk for chunk in setup.plan.chunks}
    total = len(setup.plan.chunks)
    for name, diff_sha, sha in sorted(recorded.chunk_prompts, key=lambda c: c[0].count(".")):
        chunk = chunks.get(name)
        if chunk is None or chunk.sha != diff_sha:
            return (
                f"the run's chunk {name} is not in this config's plan ({total} chunks, the run "
                f"{count}; the diff is cut elsewhere): pass --config with the run's "
                "max_chunk_bytes, max_input_tokens and max_chunks"
            )
        if chunk_prompt(chunk, total, setup.files, config).sha256() != sha:
            return (
                f"chunk {name}'s prompt differs from the recorded one (its bytes are the "
                "same; the instructions, the file list or the gate's prompt differ): pass "
                "--config with the run's instructions, or replay with the run's version"
            )
        if any(other.startswith(name + ".") for other, _, _ in recorded.chunk_prompts):
            for half in halve(chunk) or []:
                chunks[half.name] = half
    return None


def replay_one(
    recorded: Recorded,
    diff: bytes | None,
    config: Config,
    *,
    api_key: str | None,
    sleep: Callable[[float], None] = time.sleep,
) -> Row:
    """Review the recorded diff again and compare (module docstring)."""
    was = recorded.verdict or recorded.state

    def row(replayed: str, outcome: Outcome, note: str) -> Row:
        return Row(recorded.name, recorded.diff_sha, was, replayed, outcome, note)

    if diff is None:
        return row("-", Outcome.UNREPLAYABLE, "diff missing")
    found = selection_for(recorded, diff, config)
    if found is None:
        return row("-", Outcome.UNREPLAYABLE, "diff changed: its bytes no longer hash to diff_sha")
    data, coverage = found
    if config.context == "files":
        return row(
            "-",
            Outcome.UNREPLAYABLE,
            "the config shows the changed files beside the diff (context: files); replay "
            "has the diff alone, so its prompt would not be the run's: pass --config with "
            "context: diff, or backtest the commit with --context files",
        )
    if recorded.chunk_prompts:
        # a review in chunks: compared chunk by chunk (its prompt_sha is chunk 1's only)
        if (why := chunk_prompts_differ(recorded, data, coverage, config)) is not None:
            return row("-", Outcome.UNREPLAYABLE, why)
    elif recorded.prompt_sha is not None and prompt_sha256(data, config) != recorded.prompt_sha:
        return row(
            "-",
            Outcome.UNREPLAYABLE,
            "prompt differs from the recorded one: pass --config with the run's instructions",
        )
    # the review's own guards, before anything is spent (a replay never asks what the
    # review refused, and never at a price the review would not have paid)
    if recorded.verdict is None:
        return row("-", Outcome.DEGRADED, f"recorded {recorded.state}: no verdict to compare")
    if (costly := cost.over_budget(data, config)) is not None:
        return row("-", Outcome.UNREPLAYABLE, f"not asked: {costly.detail}")
    try:
        result = review_diff(
            data, config, api_key=api_key, coverage=coverage, sleep=sleep,
            question=key_for(data, config),
        )  # fmt: skip
    except (UsageError, ConfigError) as err:
        return row("-", Outcome.UNREPLAYABLE, f"reviewer settings: {err.message}")
    answer = result.review_decision or result.decision
    now = answer.verdict.verdict if answer.verdict is not None else None
    if answer.state is State.INCOMPLETE:
        return row(str(answer.state), Outcome.UNREPLAYABLE, f"reviewer: {answer.reason}")
    replayed = now or f"{answer.state} ({answer.reason})"
    if now != recorded.verdict:
        return row(replayed, Outcome.UNSTABLE, "verdict changed")
    if recorded.degraded is not None:
        return row(replayed, Outcome.DEGRADED, f"recorded from {recorded.degraded}")
    return row(replayed, Outcome.STABLE, "")


def unreplayable(name: str, diff_sha: str, note: str) -> Row:
    """A row for a record that could not even be read."""
    return Row(name, diff_sha, "-", "-", Outcome.UNREPLAYABLE, note)


def exit_code(rows: Sequence[Row]) -> ExitCode:
    """0 all stable or degraded, 1 any unstable, 3 any unreplayable (which wins)."""
    outcomes = {r.outcome for r in rows}
    if Outcome.UNREPLAYABLE in outcomes:
        return ExitCode.BLOCKED
    if Outcome.UNSTABLE in outcomes:
        return ExitCode.FAIL
    return ExitCode.PASS


def table(rows: Sequence[Row]) -> str:
    """A Markdown table (readable as text too) of the rows, one per recorded decision."""
    lines = [
        "| record | diff_sha | recorded | replayed | result | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = (r.name, r.diff_sha[:12], r.recorded, r.replayed, str(r.outcome), r.note)
        clean = [untrusted.line(c).replace("|", "/") for c in cells]
        lines.append("| " + " | ".join(clean) + " |")
    return "\n".join(lines)
