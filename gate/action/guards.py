"""The action's guards: each a small function returning a :class:`Decision` or None.

:mod:`gate.action.run` takes them in order (docs/design.md): draft, then a pending
status, override, apply marker, credentials, then the diff, superseded (head or base
moved while it was fetched), coverage, memory (an earlier decision of the same
question), and only then the review. The first guard that returns a decision ends the
run with it; None lets the run go on. Only the override can return a pass for a
writer's label on this exact head, and memory only by repeating a success the gate's
own identity posted on this head for the same question.
"""

from __future__ import annotations

from dataclasses import replace

from gate import REPOSITORY_URL
from gate.action import carry
from gate.action.github.client import GitHubClient
from gate.action.github.pull import OVERRIDE_PERMISSIONS
from gate.action.github.records import PullInfo
from gate.action.report import comment_marker
from gate.action.state import Override, RunState
from gate.config import Config
from gate.decide.decision import MAX_DESCRIPTION, Decision, State, Status, blocked
from gate.diff import Coverage
from gate.errors import ConfigError
from gate.memory import Question, earlier, recall, record, status_confirms_pass
from gate.review.carry import Book, CarryError
from gate.review.scope import coverage_before_call, nothing_reviewed
from gate.reviewers.settings import ReviewerSettings, needs_api_key

APPLY_MARKER = ".apply/incomplete"
#: the label a writer applies to ask for a fresh review (the memory is not consulted)
FRESH_LABEL = "review-gate:fresh"


def draft(pull: PullInfo | None, config: Config) -> Decision | None:
    """A draft pull request is skipped (the caller posts it as pending, never success)."""
    if pull is None or not pull.draft or not config.skip_drafts:
        return None
    return replace(
        blocked(
            State.NEEDS_HUMAN,
            "draft",
            "draft pull request: the review is skipped until it is marked ready for review",
        ),
        description="draft: review skipped until the pull request is ready for review",
    )


def override(run: RunState, config: Config) -> Decision | None:
    """A human override: the override label just applied, by a writer, on this exact head."""
    target, pull, gh = run.target, run.pull, run.gh
    if target is None or pull is None or gh is None:
        return None
    if target.action != "labeled" or target.label != config.override_label:
        return None
    labelled_head = target.pull.head_sha if target.pull else ""
    if labelled_head != run.head:
        run.notes.append(
            f"override label was applied on {labelled_head[:12]}, but the head is now "
            f"{run.head[:12]}: a new push needs a new override"
        )
        return None
    if config.override_label not in pull.labels:
        run.notes.append(
            f"the override label {config.override_label!r} is no longer on the pull request"
        )
        return None
    login = target.sender
    permission = gh.permission(login) if login else "none"
    if permission not in OVERRIDE_PERMISSIONS:
        run.notes.append(
            f"override label applied by @{login} (permission {permission}) was ignored: "
            "only users with write, maintain or admin permission can override"
        )
        return None
    run.evidence.override = Override(login, permission, config.override_label, run.head)
    detail = (
        f"overridden by @{login} ({permission}) with the label {config.override_label!r} "
        f"on {run.head[:12]}; no model review was used for this status"
    )
    return Decision(
        state=State.PASS,
        status=Status.SUCCESS,
        reason="override",
        description=f"overridden by @{login}"[:MAX_DESCRIPTION],
        detail=detail,
    )


def apply_marker(gh: GitHubClient, head: str) -> Decision | None:
    """Block while an ``.apply/incomplete`` exists at any depth of the head tree, or when
    GitHub's listing of that tree was truncated (absence cannot be known)."""
    listing = gh.tree_paths(head)
    found = [p for p in listing.paths if p == APPLY_MARKER or p.endswith("/" + APPLY_MARKER)]
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return blocked(
            State.NEEDS_HUMAN,
            "apply_incomplete",
            f"{found[0]} exists in the head tree{more}: an agent write was not applied "
            "whole; finish or revert it and delete the marker",
        )
    if listing.truncated:
        return blocked(
            State.NEEDS_HUMAN,
            "tree_truncated",
            f"GitHub truncated the listing of the head tree ({len(listing.paths)} paths), so "
            f"the absence of {APPLY_MARKER} cannot be checked; review by hand",
        )
    return None


#: the workflow for pull requests from forks, as an absolute link
FORKS_EXAMPLE_URL = f"{REPOSITORY_URL}/blob/main/examples/review-gate-forks.yml"


def fork_on_pull_request(event: str, pull: PullInfo | None) -> str | None:
    """What to tell a fork's ``pull_request`` run: GitHub gives it a read-only token and no
    secrets, so the status branch protection waits for may never arrive. Said at the
    start, in the log and as an annotation, never a silent wait."""
    if event != "pull_request" or pull is None or not pull.is_fork:
        return None
    return (
        f"pull request #{pull.number} comes from a fork, and on pull_request GitHub gives a "
        "fork's run a read-only token and no secrets: the reviewer cannot be asked and the "
        "required status may never be posted. Run the gate on pull_request_target with the "
        f"workflow for forks, which never checks out or runs the pull request's code: "
        f"{FORKS_EXAMPLE_URL}"
    )


def credentials(pull: PullInfo | None, config: Config, api_key: str | None) -> Decision | None:
    """No reviewer key where one is needed: name the variable (and why a fork has none)."""
    if api_key:
        return None
    try:
        probe = ReviewerSettings.from_config(config.reviewer, None)
    except ConfigError:
        return None  # review_diff reports it with the config's own message
    explicit = bool(config.reviewer.api_key_env)
    if not (explicit or needs_api_key(probe)):
        return None
    key_env = config.reviewer.key_env()
    if pull is not None and pull.is_fork:
        return blocked(
            State.NEEDS_HUMAN,
            "fork_no_credentials",
            f"fork PR without reviewer credentials: {key_env} is not available to runs "
            f"from forks; use pull_request_target ({FORKS_EXAMPLE_URL}: it never checks "
            "out fork code) or review by hand",
        )
    return blocked(
        State.NEEDS_HUMAN,
        "missing_api_key",
        f"no reviewer API key: set the secret in {key_env} or the action input api-key",
    )


def base_moved(first: PullInfo | None, base: str, now: PullInfo) -> str:
    """How the pull request was retargeted since the run read it ("" when it was not).

    Only a change of base *branch* supersedes the review (its config and its diff
    belong to another target). New commits on the same base branch move the base
    SHA all the time in a busy repository; the diff reviewed (base...head) is still
    the pull request's change, so that alone must not turn every review into an
    error that nothing re-runs.
    """
    if first is None or now.base_ref == first.base_ref:
        return ""
    return f"the base moved from {first.base_ref}@{base[:12]} to {now.base_ref}@{now.base_sha[:12]}"


def superseded(run: RunState, gh: GitHubClient) -> Decision | None:
    """The head or the base moved while the diff was fetched: the new run decides."""
    if run.pull is None:
        return None
    now = gh.get_pull(run.pull.number)
    if now.head_sha != run.head:
        return blocked(
            State.INCOMPLETE,
            "superseded",
            f"superseded: the head moved to {now.head_sha[:12]} while the diff was "
            "fetched; the run for the new head decides",
        )
    moved = base_moved(run.pull, run.base, now)
    if moved:
        return blocked(
            State.INCOMPLETE,
            "superseded",
            f"superseded: {moved} while the diff was fetched; the review under the "
            "new base decides (re-run the job if none started)",
        )
    return None


def coverage(selected: Coverage, config: Config) -> Decision | None:
    """Nothing left to review after the selection (never ask the model about nothing), or
    files left out that block on coverage (never pay for a review that will block)."""
    return nothing_reviewed(selected) or coverage_before_call(
        selected, allow_partial=config.allow_partial_coverage
    )


def fresh_requested(run: RunState, gh: GitHubClient) -> bool:
    """A fresh review asked for by a writer: the ``review-gate:fresh`` label just applied,
    or the ``fresh`` input of a ``workflow_dispatch``; the sender's permission is checked
    as for the override."""
    target = run.target
    if target is None:
        return False
    by_label = target.action == "labeled" and target.label == FRESH_LABEL
    by_input = run.inputs.fresh()
    if not (by_label or by_input):
        return False
    login = target.sender
    permission = gh.permission(login) if login else "none"
    how = f"the label {FRESH_LABEL!r}" if by_label else "the input fresh"
    if permission not in OVERRIDE_PERMISSIONS:
        run.notes.append(
            f"a fresh review asked with {how} by @{login or 'unknown'} (permission "
            f"{permission}) was ignored: only write, maintain or admin can ask for one"
        )
        return False
    run.notes.append(f"a fresh review was asked by @{login} ({permission}) with {how}")
    return True


def carried(run: RunState, body: str | None) -> Book | None:
    """The chunk answers the gate's own comment carries (:mod:`gate.action.carry`); a
    block that is not well-formed carries nothing, with a note (every chunk is sent)."""
    try:
        return carry.read(body)
    except CarryError as err:
        run.notes.append(
            f"the carried chunk answers in the review-gate comment were not read "
            f"({err.message}); every chunk is sent"
        )
        return None


def memory(run: RunState, gh: GitHubClient, config: Config, diff_sha: str) -> Decision | None:
    """An earlier decision of this PR for the same question (:mod:`gate.memory`): a fail
    stands, a pass on this head is kept, with no model call; None asks the reviewer.

    The records come only from the sticky comment the token itself wrote (the adoption
    rule); a pass is kept only when the newest final status the gate's own identity
    posted on this head is a success. An unreadable history is ignored with a note: the
    reviewer is asked.
    """
    if run.pull is None:
        return None
    body = gh.own_comment(run.pull.number, marker=comment_marker(run.context))
    try:
        run.history = record.parse_history(body or "")
    except record.RecordError as err:
        run.history = []
        run.notes.append(f"the history in the review-gate comment was not read ({err.message})")
    run.fresh = fresh_requested(run, gh)
    # a writer's fresh review (label, input) or comment command asks for every chunk again
    if not run.fresh and run.command is None:
        run.carry = carried(run, body)
    if run.fresh or not run.history:
        return None
    question = Question(
        diff_sha=diff_sha,
        policy_version=config.policy_version,
        model=config.reviewer.model,
        prompt_sha=run.prompt_sha,
        head_sha=run.head,
        config_sha=run.config_sha,
        fallback_models=tuple(fb.model for fb in config.fallbacks),
    )
    found = earlier(run.history, question)
    confirmed = False
    if found is not None and found.state == "pass" and found.head_sha == run.head:
        statuses = gh.own_statuses(run.head, context=run.context)
        confirmed = status_confirms_pass([state for state, _ in statuses])
    return recall(run.history, question, status_confirmed=confirmed)
