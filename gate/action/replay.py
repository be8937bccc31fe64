"""The action's ``mode: replay``: the nightly job that asks again and diffs the verdicts.

On ``schedule`` or ``workflow_dispatch``: the pull requests updated (merged, reviewed) in
the last ``since`` window (default 24h) whose sticky comment, written by the token's own
identity, carries a record (:mod:`gate.memory.record`) from that window; for each, its newest
decision (not a cached repeat), the diff fetched pinned to the recorded base and head
SHAs, the config read at the recorded base, re-reviewed with :mod:`gate.memory.replay`, within
``max-replays`` (default 20). The job summary holds the table and lists the degraded
records for audit; on any ``unstable`` row the one tracking issue
``review-gate: unstable verdicts`` is opened or updated with the table, and the job fails
(exit 1); an ``unreplayable`` row fails it too (exit 3): the night could not be checked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from gate.action import report
from gate.action.blobfetch import FetchBudget
from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.action.state import RunState
from gate.config.inputs import apply_inputs
from gate.config.load import parse_config
from gate.config.model import Config, default_config
from gate.errors import ConfigError, ExitCode, GateError, UsageError
from gate.memory import record
from gate.memory import replay as core
from gate.memory.question import key_of_record
from gate.review.scope import select_diff
from gate.safe import redact

TRACKING_TITLE = "review-gate: unstable verdicts"
DEFAULT_SINCE = "24h"
DEFAULT_MAX_REPLAYS = 20
MAX_MAX_REPLAYS = 200
#: pull requests looked at, at most (newest updated first)
MAX_PULLS = 300
#: the inputs of replay mode (not config keys)
REPLAY_INPUTS = frozenset({"mode", "since", "max-replays"})

_SPAN = re.compile(r"([1-9][0-9]{0,4})([mhd])")
_UNIT = {"m": "minutes", "h": "hours", "d": "days"}


@dataclass(frozen=True)
class Candidate:
    pr: int
    record: record.Record


def since(raw: Mapping[str, str]) -> timedelta:
    """The ``since`` input: ``<n>m``, ``<n>h`` or ``<n>d`` (default 24h)."""
    value = raw.get("since", "").strip() or DEFAULT_SINCE
    found = _SPAN.fullmatch(value)
    if found is None:
        raise UsageError(f"input since: {value!r} is not a span like 24h, 90m or 7d")
    return timedelta(**{_UNIT[found.group(2)]: int(found.group(1))})


def max_replays(raw: Mapping[str, str]) -> int:
    value = raw.get("max-replays", "").strip()
    if not value:
        return DEFAULT_MAX_REPLAYS
    if not value.isdigit() or not 1 <= int(value) <= MAX_MAX_REPLAYS:
        raise UsageError(f"input max-replays: {value!r} is not a number from 1 to 200")
    return int(value)


def candidates(
    gh: GitHubClient, *, context: str, cutoff: datetime, budget: int
) -> tuple[list[Candidate], list[str]]:
    """The records to replay (newest decision per PR, distinct questions) and notes."""
    notes: list[str] = []
    found: list[Candidate] = []
    seen: set[object] = set()  # one replay per question (gate/memory/question.py)
    skipped = 0
    for number in gh.recent_pulls(cutoff, limit=MAX_PULLS):
        body = gh.own_comment(number, marker=report.comment_marker(context))
        if body is None:
            continue
        try:
            history = record.parse_history(body)
        except record.RecordError as err:
            notes.append(f"#{number}: the history was not read ({err.message})")
            continue
        recent = [
            r
            for r in history
            if r.diff_sha is not None and r.source != "cached" and _time(r.time) >= cutoff
        ]
        if not recent:
            continue
        newest = recent[-1]
        key: object = key_of_record(newest) or (newest.diff_sha, newest.prompt_sha)
        if key in seen:
            continue
        seen.add(key)
        if len(found) >= budget:
            skipped += 1
            continue
        found.append(Candidate(number, newest))
    if skipped:
        notes.append(f"{skipped} more record(s) were not replayed: max-replays is {budget}")
    return found, notes


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _config_at(gh: GitHubClient, path: str, base: str, inputs: Mapping[str, str]) -> Config:
    raw = gh.read_file(path, base)
    config = default_config() if raw is None else parse_config(raw.decode("utf-8"), source=path)
    return apply_inputs(config, {k: v for k, v in inputs.items() if k not in REPLAY_INPUTS})


def replay_candidate(
    run: RunState, gh: GitHubClient, cand: Candidate, sleep: Callable[[float], None]
) -> core.Row:
    """One row: the recorded diff fetched pinned to its SHAs, then :func:`core.replay_one`."""
    rec = cand.record
    name = f"#{cand.pr} {rec.head_sha[:7]}"
    try:
        recorded = core.from_record(rec, name)
        config = core.config_for(recorded, _config_at(gh, run.inputs.config_path, rec.base_sha,
                                                      run.inputs.raw), {})  # fmt: skip
        fetch = gh.compare_diff(rec.base_sha, rec.head_sha, budget=FetchBudget.from_config(config))
        data = select_diff(list(fetch.sections), config, source=fetch.source).data
        key_env = config.reviewer.key_env()
        api_key = redact.first_key(
            (run.inputs.api_key, "the action input api-key"),
            (run.env.get(key_env), f"the environment variable {key_env}"),
        )
        return core.replay_one(recorded, data, config, api_key=api_key, sleep=sleep)
    except (ConfigError, GateError, UnicodeDecodeError) as err:
        message = err.message if isinstance(err, GateError) else str(err)
        return core.unreplayable(name, rec.diff_sha or "", message)


def summary(rows: list[core.Row], notes: list[str], issue: int | None, window: str) -> str:
    lines = [f"## review-gate replay: {len(rows)} record(s) from the last {window}", ""]
    if rows:
        lines += [core.table(rows), ""]
    else:
        lines += ["No pull request carries a record from this window.", ""]
    degraded = [r for r in rows if r.outcome is core.Outcome.DEGRADED]
    if degraded:
        lines += ["### Degraded records (audit by hand)", ""]
        lines += [f"- {report.md(r.name)}: {report.md(r.note)}" for r in degraded]
        lines.append("")
    if issue is not None:
        lines += [f"Unstable verdicts: tracked in issue #{issue}.", ""]
    lines += [f"> {report.md(n)}" for n in notes]
    return "\n".join(lines) + "\n"


def run_replay(
    run: RunState,
    client_factory: Callable[[GitHubSettings], GitHubClient],
    sleep: Callable[[float], None] = time.sleep,
    throttle: bool = True,
) -> int:
    """The scheduled replay, end to end; returns the exit code."""
    raw = run.inputs.raw
    window, budget = since(raw), max_replays(raw)
    window_text = raw.get("since", "").strip() or DEFAULT_SINCE
    token = redact.first_key(
        (raw.get("token"), "the action input token"),
        (run.env.get("GITHUB_TOKEN"), "the environment variable GITHUB_TOKEN"),
    )
    settings = GitHubSettings.from_env(run.env, token=token or "")
    run.settings = replace(settings, throttle=throttle, sleep=sleep)
    run.gh = gh = client_factory(run.settings)
    cutoff = datetime.now(UTC) - window
    found, notes = candidates(gh, context=run.inputs.status_context, cutoff=cutoff, budget=budget)
    rows = [replay_candidate(run, gh, cand, sleep) for cand in found]
    issue = None
    if any(r.outcome is core.Outcome.UNSTABLE for r in rows):
        body = (
            "The nightly replay of review-gate asked the reviewer again for recorded diffs, "
            "and some verdicts changed.\n\n"
            f"{core.table(rows)}\n\nRun: {run.run_url or '(unknown)'}\n"
        )
        issue = gh.upsert_issue(TRACKING_TITLE, body)
    text = summary(rows, notes, issue, window_text)
    outcomes = {str(r.outcome) for r in rows}
    worst = next((o for o in ("unreplayable", "unstable", "degraded") if o in outcomes), "stable")
    try:
        report.append_summary(run.env.get("GITHUB_STEP_SUMMARY"), text)
        report.write_outputs(run.env.get("GITHUB_OUTPUT"), {"state": worst})
    except OSError as err:
        report.emit([f"::warning::could not write the summary/outputs: {err}"], run.out)
    code = core.exit_code(rows)
    line = f"review-gate replay: {len(rows)} record(s), {worst}"
    report.emit([line if code == ExitCode.PASS else f"::error::{report.escape_data(line)}"],
                run.out)  # fmt: skip
    return code
