"""The workflow event: what the run was triggered by, and what it asks the gate to review.

Reads ``GITHUB_EVENT_NAME`` and the JSON at ``GITHUB_EVENT_PATH`` and turns them into
one :class:`Target` (pull request, merge group or a dispatched pull request number);
an event the gate does not review is a clear :class:`~gate.errors.UsageError`, and an
``edited`` event that did not change the base asks for nothing (``Target.ignore``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.action.github.records import PullInfo
from gate.diff import COMMIT_ID
from gate.errors import UsageError
from gate.safe import strictjson

PULL_ACTIONS = frozenset(
    {"opened", "synchronize", "reopened", "ready_for_review", "labeled", "unlabeled", "edited"}
)
SUPPORTED_EVENTS = (
    "pull_request",
    "pull_request_target",
    "merge_group",
    "workflow_dispatch",
    "issue_comment",
)
#: the comment command that asks for a fresh review of the pull request's current head
REVIEW_COMMAND = "/review-gate review"


@dataclass(frozen=True)
class Target:
    """What the event asks the gate to review."""

    event: str  # pull_request | pull_request_target | merge_group | workflow_dispatch
    action: str  # the event's action ("" for workflow_dispatch)
    pr_number: int | None  # None for merge_group
    head_sha: str  # from the payload; run.py re-reads the PR for the current head
    base_sha: str
    sender: str
    label: str | None = None  # the label of a "labeled" or "unlabeled" event
    pull: PullInfo | None = None  # the payload's pull request, when there is one
    #: non-empty when the event asks for nothing (an ``edited`` that did not change the
    #: base): why; the run posts no status and exits 0
    ignore: str = ""
    #: the id of the comment holding :data:`REVIEW_COMMAND` (an ``issue_comment`` event)
    comment_id: int | None = None
    #: the head before a ``synchronize`` push (its ``before``; "" otherwise): an earlier
    #: head whose gate statuses still count after a force-push took it out of the pull
    #: request (:mod:`gate.action.earlier`)
    before: str = ""

    @property
    def is_merge_group(self) -> bool:
        return self.event == "merge_group"


def read_event(env: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """Read ``GITHUB_EVENT_NAME`` and the JSON at ``GITHUB_EVENT_PATH``."""
    name = env.get("GITHUB_EVENT_NAME", "")
    path = env.get("GITHUB_EVENT_PATH", "")
    if not name or not path:
        raise UsageError(
            "GITHUB_EVENT_NAME/GITHUB_EVENT_PATH are not set; "
            "review-gate action runs inside a GitHub Actions job"
        )
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise UsageError(f"cannot read the event payload {path}: {err.strerror}") from err
    payload = strictjson.loads(raw, what=f"the event payload {path}", error=UsageError)
    if not isinstance(payload, dict):
        raise UsageError(f"the event payload {path} is not a JSON object")
    return name, payload


def _pr_number_from(value: object) -> int | None:
    text = str(value).strip().lstrip("#") if value is not None else ""
    if not text:
        return None
    # ASCII digits only: str.isdigit() also accepts superscripts, which int() refuses;
    # and a bounded length, as int() refuses more than 4300 digits
    if not (text.isascii() and text.isdigit()) or len(text) > 20 or int(text) <= 0:
        raise UsageError(f"pull request number {value!r} is not a positive integer")
    return int(text)


def _object(payload: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``payload[key]`` as an object: empty when absent or null; a UsageError when another type."""
    value = payload.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UsageError(f"the event payload's {key!r} is a {type(value).__name__}, not an object")
    return value


def _base_changed(payload: Mapping[str, Any]) -> bool:
    """Whether an ``edited`` payload says the base branch changed (``changes.base``)."""
    changes = payload.get("changes")
    return isinstance(changes, Mapping) and bool(changes.get("base"))


def _sha_or_empty(value: object) -> str:
    """A commit SHA (40 or 64 lowercase hex), else "" (anything else names no commit)."""
    text = value if isinstance(value, str) else ""
    return text if COMMIT_ID.fullmatch(text) else ""


def target_from_event(name: str, payload: Mapping[str, Any], *, pr_number: str = "") -> Target:
    """Decide what to review from the event; anything unsupported is a clear UsageError."""
    sender = str(_object(payload, "sender").get("login", ""))
    if name in ("pull_request", "pull_request_target"):
        action = str(payload.get("action", ""))
        if action not in PULL_ACTIONS:
            raise UsageError(
                f"{name} action {action!r} is not reviewed; trigger review-gate on "
                f"types: [{', '.join(sorted(PULL_ACTIONS))}]"
            )
        pull = PullInfo.from_json(_object(payload, "pull_request"))
        labelled = action in ("labeled", "unlabeled")
        label = _object(payload, "label").get("name") if labelled else None
        ignore = ""
        if action == "edited" and not _base_changed(payload):
            changed = ", ".join(sorted(str(k) for k in _object(payload, "changes"))) or "none"
            ignore = (
                f"{name} edited without a base change (changed: {changed}): the diff and the "
                "policy are the same, nothing to review; no status posted"
            )
        return Target(
            event=name,
            action=action,
            pr_number=pull.number,
            head_sha=pull.head_sha,
            base_sha=pull.base_sha,
            sender=sender,
            label=str(label) if label is not None else None,
            pull=pull,
            ignore=ignore,
            before=_sha_or_empty(payload.get("before")) if action == "synchronize" else "",
        )
    if name == "merge_group":
        group = _object(payload, "merge_group")
        action = str(payload.get("action", ""))
        if action != "checks_requested":
            raise UsageError(f"merge_group action {action!r} is not reviewed (checks_requested)")
        head, base = group.get("head_sha"), group.get("base_sha")
        if not head or not base:
            raise UsageError("the merge_group payload lacks head_sha/base_sha")
        return Target(
            event=name, action=action, pr_number=None, head_sha=str(head), base_sha=str(base),
            sender=sender,
        )  # fmt: skip
    if name == "issue_comment":
        return _comment_command(payload, sender)
    if name == "workflow_dispatch":
        inputs = _object(payload, "inputs")
        number = _pr_number_from(pr_number)
        for key in ("pr-number", "pr_number", "pull_request", "pr"):
            if number is None and key in inputs:
                number = _pr_number_from(inputs[key])
        if number is None:
            raise UsageError(
                "workflow_dispatch needs a pull request number: set the action input "
                "'pr-number' (e.g. pr-number: ${{ inputs.pr-number }})"
            )
        return Target(
            event=name, action="", pr_number=number, head_sha="", base_sha="", sender=sender
        )
    raise UsageError(
        f"event {name!r} is not supported; review-gate runs on {', '.join(SUPPORTED_EVENTS)}"
    )


def is_review_command(body: str) -> bool:
    """Whether a comment asks for a review: its first non-blank line is exactly
    :data:`REVIEW_COMMAND` (surrounding blanks ignored)."""
    for line in body.splitlines():
        if line.strip():
            return line.strip() == REVIEW_COMMAND
    return False


def _comment_command(payload: Mapping[str, Any], sender: str) -> Target:
    """An ``issue_comment``: a review of the pull request's current head when a new comment
    on a pull request holds :data:`REVIEW_COMMAND`; anything else asks for nothing."""
    action = str(payload.get("action", ""))
    issue, comment = _object(payload, "issue"), _object(payload, "comment")
    author = _object(comment, "user")
    ignore = ""
    if action != "created":
        ignore = f"issue_comment {action!r}: only a new comment can be a command"
    elif not isinstance(issue.get("pull_request"), Mapping):
        ignore = "a comment on an issue, not on a pull request: nothing to review"
    elif not is_review_command(str(comment.get("body") or "")):
        ignore = f"the comment is not the command {REVIEW_COMMAND!r}: nothing to review"
    elif str(author.get("type", "")) == "Bot":
        ignore = "a command written by a bot is not run"
    number = _pr_number_from(issue.get("number")) if not ignore else None
    comment_id = comment.get("id")
    if not ignore and not (isinstance(comment_id, int) and comment_id > 0):
        raise UsageError("the issue_comment payload lacks the comment's id")
    return Target(
        event="issue_comment",
        action=action,
        pr_number=number,
        head_sha="",
        base_sha="",
        sender=str(author.get("login") or sender),
        ignore=ignore,
        comment_id=comment_id if not ignore and isinstance(comment_id, int) else None,
    )
