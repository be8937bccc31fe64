"""Real GitHub webhook payloads (npm ``@octokit/webhooks-examples``), adapted for tests.

:func:`examples` returns GitHub's own example payloads for an event; :func:`pull_request_event`
and :func:`merge_group_event` take one and point it at a fake repository, pull request and SHAs,
changing only those fields, so the gate reads real payload shapes.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
EXAMPLES = (
    NODE_DIR / "node_modules" / "@octokit" / "webhooks-examples" / "api.github.com" / "index.json"
)
INSTALL_HINT = "run `npm ci --prefix tests/node` (installs @octokit/openapi and webhooks-examples)"


class ExamplesUnavailable(RuntimeError):
    pass


@lru_cache(maxsize=1)
def _index() -> dict[str, list[dict[str, Any]]]:
    if not EXAMPLES.is_file():
        raise ExamplesUnavailable(f"webhook examples are missing ({EXAMPLES}); {INSTALL_HINT}")
    data = json.loads(EXAMPLES.read_bytes())
    return {entry["name"]: entry["examples"] for entry in data}


def examples(event: str, action: str | None = None) -> list[dict[str, Any]]:
    """GitHub's example payloads for ``event`` (and ``action``), deep-copied."""
    return copy.deepcopy(_found(event, action))


def _found(event: str, action: str | None) -> list[dict[str, Any]]:
    """The examples themselves (shared: copy the one you change)."""
    return [e for e in _index().get(event, []) if action is None or e.get("action") == action]


def _example(event: str, action: str | None, index: int = 0) -> dict[str, Any]:
    """One example, deep-copied (copying every example of the action to keep one was most
    of the cost of building an event)."""
    found = _found(event, action)
    if not found:
        raise ExamplesUnavailable(f"no {event} example with action {action!r}")
    return copy.deepcopy(found[index % len(found)])


def _point_repo(repo: dict[str, Any], full_name: str) -> None:
    owner, name = full_name.split("/")
    repo["full_name"] = full_name
    repo["name"] = name
    if isinstance(repo.get("owner"), dict):
        repo["owner"]["login"] = owner


def pull_request_event(
    action: str,
    *,
    repository: str,
    number: int,
    head_sha: str,
    base_sha: str,
    draft: bool = False,
    head_repo: str | None = None,
    label: str | None = None,
    sender: str | None = None,
    index: int = 0,
) -> dict[str, Any]:
    """A real ``pull_request`` example for ``action``, pointed at the fake repository."""
    payload = _example("pull_request", action, index)
    pr = payload["pull_request"]
    payload["number"] = pr["number"] = number
    pr["draft"] = draft
    pr["state"] = "open"
    pr["head"]["sha"] = head_sha
    pr["base"]["sha"] = base_sha
    _point_repo(payload["repository"], repository)
    _point_repo(pr["base"]["repo"], repository)
    if pr["head"].get("repo") is not None:
        _point_repo(pr["head"]["repo"], head_repo or repository)
    if label is not None:
        payload["label"] = {**payload.get("label", {"id": 1, "color": "ededed"}), "name": label}
    if sender is not None:
        payload["sender"]["login"] = sender
    return payload


def pull_request_edited_event(
    *,
    repository: str,
    number: int,
    head_sha: str,
    base_sha: str,
    changes: dict[str, Any],
    base_ref: str = "main",
) -> dict[str, Any]:
    """A ``pull_request`` ``edited`` payload. webhooks-examples has none, so it is GitHub's
    ``opened`` example with ``action: edited`` and the documented ``changes`` object
    (``{"base": {"ref": {"from": ...}, "sha": {"from": ...}}}``, ``{"title": {"from": ...}}``,
    ``{"body": {"from": ...}}``)."""
    payload = pull_request_event(
        "opened", repository=repository, number=number, head_sha=head_sha, base_sha=base_sha
    )
    payload["action"] = "edited"
    payload["changes"] = copy.deepcopy(changes)
    payload["pull_request"]["base"]["ref"] = base_ref
    return payload


def merge_group_event(*, repository: str, head_sha: str, base_sha: str) -> dict[str, Any]:
    payload = _example("merge_group", "checks_requested")
    payload["merge_group"]["head_sha"] = head_sha
    payload["merge_group"]["base_sha"] = base_sha
    _point_repo(payload["repository"], repository)
    return payload


def workflow_dispatch_event(
    *, repository: str, inputs: dict[str, str] | None = None
) -> dict[str, Any]:
    payload = _example("workflow_dispatch", None)
    payload["inputs"] = dict(inputs or {})
    _point_repo(payload["repository"], repository)
    return payload


def issue_comment_event(
    *,
    repository: str,
    number: int,
    body: str,
    login: str = "octocat",
    bot: bool = False,
    on_pull_request: bool = True,
    action: str = "created",
) -> dict[str, Any]:
    """A real ``issue_comment`` ``created`` example, pointed at the fake repository. The
    examples are comments on issues; a comment on a pull request carries the documented
    ``issue.pull_request`` object, added here when ``on_pull_request``."""
    payload = _example("issue_comment", "created")
    payload["action"] = action
    issue, comment = payload["issue"], payload["comment"]
    issue["number"] = number
    if on_pull_request:
        base = f"https://api.github.com/repos/{repository}/pulls/{number}"
        issue["pull_request"] = {
            "url": base,
            "html_url": f"https://github.com/{repository}/pull/{number}",
            "diff_url": f"https://github.com/{repository}/pull/{number}.diff",
            "patch_url": f"https://github.com/{repository}/pull/{number}.patch",
            "merged_at": None,
        }
    else:
        issue.pop("pull_request", None)
    comment["body"] = body
    comment["user"]["login"] = payload["sender"]["login"] = login
    comment["user"]["type"] = payload["sender"]["type"] = "Bot" if bot else "User"
    _point_repo(payload["repository"], repository)
    return payload
