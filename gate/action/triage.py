"""The action's ``mode: triage``: the human queue, so a block is never a dead end.

On ``schedule`` or ``workflow_dispatch``, with the config at the default branch's head:

1. every open pull request (the newest :data:`MAX_PULLS`; with more open, the list is
   known to be cut, and the issue is then never closed) whose head carries,
   as the gate's own newest status in its context, a block that waits for a human: family
   ``needs_human``, ``coverage``, ``unavailable`` or ``config`` (a ``rejected`` one waits for
   its author, a pending one for its run, a success for nobody);
2. the one tracking issue ``review-gate: waiting for a human`` lists each, oldest first:
   age, family, reason, link, and who can act (a writer's override label, the fresh label,
   or the comment command). A pull request waiting longer than ``escalation.after_hours``
   is escalated: one comment on the issue mentions ``escalation.mention`` the first time
   it crosses (the issue's hidden marker remembers which heads were escalated);
3. with an empty queue read whole the issue is closed (none is opened);
4. with ``needs_human_label``, the label is added to each waiting pull request and
   removed from every other open one that carries it;
5. the health report (:mod:`gate.memory.stats`) over ``since`` (default 7d), read from the
   records in the sticky comments of the pull requests updated in that window, goes into
   the issue and the job summary.

Triage reads statuses and never writes one: it cannot post ``success`` or change a
decision. A call the token is not allowed to make is reported with the permission to add.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TypeVar

from gate.action import report
from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.action.github.records import OpenPull, SeenStatus
from gate.action.guards import FRESH_LABEL
from gate.action.replay import since
from gate.action.state import RunState
from gate.config.inputs import apply_inputs
from gate.config.load import parse_config
from gate.config.model import Config, default_config
from gate.decide.decision import Family
from gate.errors import ConfigError, ExitCode, GitHubError
from gate.memory import record, stats
from gate.safe import redact

T = TypeVar("T")

TRACKING_TITLE = "review-gate: waiting for a human"
#: open pull requests looked at, at most (newest first)
MAX_PULLS = 300
#: the health report's default window
DEFAULT_WINDOW = "7d"
#: the inputs of triage mode (not config keys)
TRIAGE_INPUTS = frozenset({"mode", "since"})
#: the families that wait for a human (rejected waits for its author)
WAITING = frozenset({Family.NEEDS_HUMAN, Family.COVERAGE, Family.UNAVAILABLE, Family.CONFIG})
#: what each call needs, for a 403 (the workflow's ``permissions:``)
PERMISSION = {
    "statuses": "statuses: read",
    "pulls": "pull-requests: read",
    "issues": "issues: write",
    "labels": "pull-requests: write (or issues: write)",
    "contents": "contents: read",
}
_MARKER = re.compile(r"<!-- review-gate:escalated ([0-9a-f@,#]*) -->")


@dataclass(frozen=True)
class Waiting:
    """One pull request in the queue."""

    pull: OpenPull
    status: SeenStatus
    family: Family
    reason: str
    hours: float

    @property
    def key(self) -> str:
        """What the escalation marker remembers: this head of this pull request."""
        return f"{self.pull.number}@{self.pull.head_sha[:12]}"


def family_of_status(state: str, description: str) -> Family | None:
    """The family a gate status names (its lead, :func:`gate.decide.decision.status_description`),
    when it waits for a human; None for success, pending and rejected. A status without a
    lead (written before families) is ``needs_human`` when it is a failure or an error."""
    if state not in ("failure", "error"):
        return None
    text = (
        description.removeprefix("superseded by ").split(" ", 1)[-1]
        if (description.startswith("superseded by "))
        else description
    )
    lead = re.split(r"[:,]", text, maxsplit=1)[0].strip()
    try:
        family = Family(lead)
    except ValueError:
        family = Family.REJECTED if lead == "fail" else Family.NEEDS_HUMAN
    return family if family in WAITING else None


def queue(
    gh: GitHubClient, *, context: str, now: datetime, limit: int | None = None
) -> tuple[list[Waiting], bool]:
    """The open pull requests waiting for a human, oldest wait first, and whether the list
    was cut: more than ``limit`` are open (one more is asked for, to know), so a pull
    request that waits may be among those not read."""
    limit = MAX_PULLS if limit is None else limit  # read now: a test may shorten it
    pulls = _checked(lambda: gh.open_pulls(limit=limit + 1), "pulls")
    cut = len(pulls) > limit
    found: list[Waiting] = []
    for pull in pulls[:limit]:
        if pull.draft:
            continue
        seen = _status(gh, pull.head_sha, context)
        if seen is None:
            continue
        family = family_of_status(seen.state, seen.description)
        if family is None:
            continue
        hours = max(0.0, (now - seen.created_at) / timedelta(hours=1))
        found.append(Waiting(pull, seen, family, seen.description, hours))
    return sorted(found, key=lambda w: (-w.hours, w.pull.number)), cut


def _status(gh: GitHubClient, sha: str, context: str) -> SeenStatus | None:
    return _checked(lambda: gh.newest_own_status(sha, context=context), "statuses")


def who_can_act(config: Config, family: Family) -> str:
    """The ways out, for one line of the queue."""
    ways = f"a writer: label `{config.override_label}` (passes this head) or `{FRESH_LABEL}`"
    ways += ", or comment `/review-gate review`"
    if family is Family.CONFIG:
        return "a maintainer fixes the config or the workflow; " + ways
    if family is Family.UNAVAILABLE:
        return "re-run the job (a quota: the provider account's owner); " + ways
    return ways


def issue_body(
    waiting: Sequence[Waiting],
    config: Config,
    health: stats.Health | None,
    escalated: set[str],
    run_url: str | None,
    *,
    cut: bool = False,
) -> str:
    after = config.escalation.after_hours
    lines = [
        *_cut_line(cut),
        f"{len(waiting)} open pull request{'s' * (len(waiting) != 1)} wait for a human "
        f"(oldest first). A wait over {after:g} h is escalated"
        + (  # in code spans: the one mention is the escalation comment's
            f" to {', '.join(f'`{m}`' for m in config.escalation.mention)}."
            if config.escalation.mention
            else "."
        ),
        "",
        "| pull request | waiting | family | status | who can act |",
        "|---|---|---|---|---|",
    ]
    for w in waiting:
        late = " ⏰" if w.hours >= after else ""
        lines.append(
            f"| [\\#{w.pull.number}]({w.pull.url}) {report.md(w.pull.title[:80])} "
            f"| {w.hours:.0f} h{late} | `{w.family}` | {report.md(w.reason[:140])} "
            f"| {report.md(who_can_act(config, w.family))} |"
        )
    if health is not None:
        lines += ["", "### Is the gate livable?", ""]
        lines += [f"- {report.md(line)}" for line in health.lines()]
    if run_url:
        lines += ["", f"Run: {run_url}"]
    lines += ["", f"<!-- review-gate:escalated {','.join(sorted(escalated))} -->"]
    return "\n".join(lines) + "\n"


def escalation_comment(late: Sequence[Waiting], config: Config) -> str:
    who = " ".join(config.escalation.mention)
    names = ", ".join(f"#{w.pull.number} ({w.hours:.0f} h, {w.family})" for w in late)
    return (
        f"{who} these pull requests have waited for a human longer than "
        f"{config.escalation.after_hours:g} h: {names}."
    )


def _checked(call: Callable[[], T], need: str) -> T:
    """``call()``, a 403 re-raised naming the workflow permission it needs."""
    try:
        return call()
    except GitHubError as err:
        if err.reason == "github_http_403":
            raise GitHubError(
                f"{err.message}; the token may not do this: add `{PERMISSION[need]}` to the "
                "triage workflow's permissions (examples/review-gate-triage.yml)",
                reason=err.reason,
            ) from err
        raise


def window(raw: Mapping[str, str]) -> timedelta:
    return since({"since": raw.get("since", "").strip() or DEFAULT_WINDOW})


def health_report(
    gh: GitHubClient, *, context: str, now: datetime, span: timedelta
) -> stats.Health:
    """Runs by family and reason over ``span``, from the records in the sticky comments of
    the pull requests updated in it."""
    runs: list[stats.Run] = []
    unreadable = 0
    cutoff = now - span
    for number in _checked(lambda: gh.recent_pulls(cutoff, limit=MAX_PULLS), "pulls"):
        body = gh.own_comment(number, marker=report.comment_marker(context))
        if body is None:
            continue
        try:
            history = record.parse_history(body)
        except record.RecordError:
            unreadable += 1
            continue
        for rec in history:
            run = stats.run_of_record(rec.to_json(), pull=f"#{number}")
            if run is not None:
                runs.append(run)
    return stats.health(runs, since=cutoff, until=now, unreadable=unreadable)


def _config(gh: GitHubClient, run: RunState) -> Config:
    ref = run.env.get("GITHUB_SHA") or run.env.get("GITHUB_REF_NAME") or "HEAD"
    raw = _checked(lambda: gh.read_file(run.inputs.config_path, ref), "contents")
    config = (
        default_config()
        if raw is None
        else parse_config(raw.decode("utf-8"), source=f"{run.inputs.config_path}@{ref[:12]}")
    )
    inputs = {k: v for k, v in run.inputs.raw.items() if k not in TRIAGE_INPUTS}
    return apply_inputs(config, inputs)


def _labels(gh: GitHubClient, label: str, pulls: Sequence[OpenPull], waiting: set[int]) -> None:
    for pull in pulls:
        has, number = label in pull.labels, pull.number
        if number in waiting and not has:
            _checked(partial(gh.add_label, number, label), "labels")
        elif number not in waiting and has:
            _checked(partial(gh.remove_label, number, label), "labels")


def run_triage(
    run: RunState,
    client_factory: Callable[[GitHubSettings], GitHubClient],
    sleep: Callable[[float], None] = time.sleep,
    throttle: bool = True,
    now: datetime | None = None,
) -> int:
    """The scheduled triage, end to end; returns the exit code (0, or 2/3 when it could
    not run: the summary names the setting or the permission to fix)."""
    raw = run.inputs.raw
    span = window(raw)
    token = redact.first_key(
        (raw.get("token"), "the action input token"),
        (run.env.get("GITHUB_TOKEN"), "the environment variable GITHUB_TOKEN"),
    )
    settings = GitHubSettings.from_env(run.env, token=token or "")
    run.settings = replace(settings, throttle=throttle, sleep=sleep)
    run.gh = gh = client_factory(run.settings)
    moment = now or datetime.now(UTC)
    context = run.inputs.status_context
    try:
        config = _config(gh, run)
        waiting, cut = queue(gh, context=context, now=moment)
        health = health_report(gh, context=context, now=moment, span=span)
        issue = _keep_issue(gh, waiting, config, health, run.run_url, cut=cut)
        if config.needs_human_label:
            pulls = _checked(lambda: gh.open_pulls(limit=MAX_PULLS), "pulls")
            _labels(gh, config.needs_human_label, pulls, {w.pull.number for w in waiting})
    except (ConfigError, GitHubError) as err:
        line = f"review-gate triage could not run: {err.message}"
        report.emit([f"::error::{report.escape_data(line)}"], run.out)
        with contextlib.suppress(OSError):
            report.append_summary(run.env.get("GITHUB_STEP_SUMMARY"), f"## {report.md(line)}\n")
        return ExitCode.BLOCKED
    text = summary(waiting, health, issue, config, cut=cut)
    try:
        report.append_summary(run.env.get("GITHUB_STEP_SUMMARY"), text)
        report.write_outputs(
            run.env.get("GITHUB_OUTPUT"),
            {"state": "waiting" if waiting else "empty", "description": health.line()},
        )
    except OSError as err:
        report.emit([f"::warning::could not write the summary/outputs: {err}"], run.out)
    report.emit([f"review-gate triage: {len(waiting)} waiting; {health.line()}"], run.out)
    return ExitCode.PASS


def _keep_issue(
    gh: GitHubClient,
    waiting: Sequence[Waiting],
    config: Config,
    health: stats.Health,
    run_url: str | None,
    *,
    cut: bool = False,
) -> int | None:
    """Open, update or close the tracking issue; escalate heads newly past the limit.

    On a list it knows is ``cut`` the issue is never closed (a pull request that waits may
    be past the cut), and the heads escalated before are kept in its marker, so the owners
    are mentioned once per head, however many pull requests are opened in between."""
    found = _checked(lambda: gh.own_issue(TRACKING_TITLE), "issues")
    if not waiting and not cut:
        if found is not None:
            _checked(lambda: gh.close_issue(found[0]), "issues")
        return None
    if not waiting and found is None:  # cut, nothing read waits, no issue: none is opened
        return None
    before: set[str] = set()
    if found is not None and (mark := _MARKER.search(found[1])) is not None:
        before = {key for key in mark.group(1).split(",") if key}
    late = [w for w in waiting if w.hours >= config.escalation.after_hours]
    fresh = [w for w in late if w.key not in before]
    # a cut list cannot tell a head that stopped waiting from one past the cut: keep it
    kept = before if cut else before & {w.key for w in waiting}
    escalated = {w.key for w in late} | kept
    body = issue_body(waiting, config, health, escalated, run_url, cut=cut)
    number = _checked(lambda: gh.upsert_issue(TRACKING_TITLE, body), "issues")
    if fresh and config.escalation.mention:
        _checked(lambda: gh.comment_on_issue(number, escalation_comment(fresh, config)), "issues")
    return number


def _cut_line(cut: bool) -> list[str]:
    if not cut:
        return []
    return [
        f"**More than {MAX_PULLS} pull requests are open: the newest {MAX_PULLS} were read.** "
        "One that waits may be among the others, so this issue stays open until the "
        "queue is read whole.",
        "",
    ]


def summary(
    waiting: Sequence[Waiting],
    health: stats.Health,
    issue: int | None,
    config: Config,
    *,
    cut: bool = False,
) -> str:
    lines = [f"## review-gate triage: {len(waiting)} waiting for a human", "", *_cut_line(cut)]
    if waiting:
        lines += [f"Tracked in issue \\#{issue}." if issue else "", ""]
        for w in waiting:
            lines.append(
                f"- \\#{w.pull.number}: {w.hours:.0f} h, `{w.family}`: {report.md(w.reason[:140])}"
            )
        lines.append("")
    elif cut:
        lines += ["None of the pull requests read waits; the tracking issue stays open.", ""]
    else:
        lines += ["Nobody waits: the tracking issue is closed.", ""]
    lines += ["### Is the gate livable?", ""]
    lines += [f"- {report.md(line)}" for line in health.lines()]
    return "\n".join(lines) + "\n"
