"""The gate reads GitHub's own example webhook payloads (npm @octokit/webhooks-examples).

Every event and action the action supports is read from every real example GitHub publishes
for it, unmodified; actions it does not review are refused with a message naming the ones it
does. ``pull_request_target`` delivers the same payload as ``pull_request`` (GitHub's docs); the
examples package has no separate entry for it, so its pull_request examples are used.
"""

from __future__ import annotations

import json

import pytest

from gate.action.event import PULL_ACTIONS, read_event, target_from_event
from gate.action.github.records import PullInfo
from gate.errors import UsageError
from tests.fakes.events import examples, pull_request_edited_event


def _pull_examples(action: str) -> list[dict]:
    found = examples("pull_request", action)
    assert found, f"webhooks-examples has no pull_request/{action} example"
    return found


@pytest.mark.parametrize("event", ["pull_request", "pull_request_target"])
@pytest.mark.parametrize("action", sorted(PULL_ACTIONS - {"edited"}))  # no edited example
def test_supported_pull_request_actions_from_real_payloads(event, action):
    payloads = examples(event, action) or _pull_examples(action)
    for payload in payloads:
        target = target_from_event(event, payload)
        pr = payload["pull_request"]
        assert target.event == event
        assert target.action == action
        assert target.pr_number == payload["number"] == pr["number"]
        assert target.head_sha == pr["head"]["sha"]
        assert target.base_sha == pr["base"]["sha"]
        assert target.sender == payload["sender"]["login"]
        assert target.pull is not None
        assert target.pull.base_repo == pr["base"]["repo"]["full_name"]
        assert target.pull.draft is bool(pr.get("draft"))
        if action in ("labeled", "unlabeled"):
            assert target.label == payload["label"]["name"]
        else:
            assert target.label is None


def _edited(changes: dict) -> dict:
    return pull_request_edited_event(
        repository="o/r", number=7, head_sha="a" * 40, base_sha="b" * 40, changes=changes
    )


@pytest.mark.parametrize("event", ["pull_request", "pull_request_target"])
def test_edited_with_a_base_change_is_reviewed(event):
    changes = {"base": {"ref": {"from": "staging"}, "sha": {"from": "5" * 40}}}
    target = target_from_event(event, _edited(changes))
    assert target.action == "edited"
    assert target.ignore == ""
    assert (target.pr_number, target.head_sha, target.base_sha) == (7, "a" * 40, "b" * 40)


@pytest.mark.parametrize(
    "changes", [{"title": {"from": "old"}}, {"body": {"from": "old"}}, {}, {"base": {}}]
)
def test_edited_without_a_base_change_is_ignored_not_refused(changes):
    payload = _edited(changes)
    if not changes:
        del payload["changes"]
    target = target_from_event("pull_request", payload)
    assert target.action == "edited"
    assert "without a base change" in target.ignore
    assert "no status posted" in target.ignore


def test_other_actions_are_never_ignored():
    for payload in _pull_examples("opened"):
        assert target_from_event("pull_request", payload).ignore == ""


@pytest.mark.parametrize("action", ["closed", "assigned", "converted_to_draft", "locked"])
def test_unreviewed_pull_request_actions_are_refused_clearly(action):
    for payload in _pull_examples(action):
        with pytest.raises(UsageError, match=r"is not reviewed; trigger review-gate on types: \["):
            target_from_event("pull_request", payload)


def test_draft_flag_is_read_from_real_payloads():
    drafts = [PullInfo.from_json(p["pull_request"]) for p in _pull_examples("converted_to_draft")]
    assert drafts
    assert all(d.draft for d in drafts)


def test_fork_detection_from_a_real_payload():
    payload = _pull_examples("opened")[0]
    assert PullInfo.from_json(payload["pull_request"]).is_fork is False
    payload["pull_request"]["head"]["repo"]["full_name"] = "stranger/fork"
    assert PullInfo.from_json(payload["pull_request"]).is_fork is True
    payload["pull_request"]["head"]["repo"] = None  # the fork was deleted
    assert PullInfo.from_json(payload["pull_request"]).is_fork is True


def test_merge_group_from_real_payloads():
    payloads = examples("merge_group")
    assert payloads
    for payload in payloads:
        target = target_from_event("merge_group", payload)
        assert target.is_merge_group
        assert target.pr_number is None
        assert target.head_sha == payload["merge_group"]["head_sha"]
        assert target.base_sha == payload["merge_group"]["base_sha"]


def test_workflow_dispatch_from_real_payloads_needs_a_pr_number():
    payloads = examples("workflow_dispatch")
    assert payloads
    for payload in payloads:
        with pytest.raises(UsageError, match="needs a pull request number"):
            target_from_event("workflow_dispatch", payload)
        assert target_from_event("workflow_dispatch", payload, pr_number="12").pr_number == 12
        assert target_from_event("workflow_dispatch", payload, pr_number="#12").pr_number == 12
        with_input = {**payload, "inputs": {"pr-number": "34"}}
        assert target_from_event("workflow_dispatch", with_input).pr_number == 34
        with pytest.raises(UsageError, match="not a positive integer"):
            target_from_event("workflow_dispatch", payload, pr_number="abc")


@pytest.mark.parametrize("event", ["push", "issues", "pull_request_review", "release"])
def test_other_events_are_a_clear_error(event):
    payload = (examples(event) or [{}])[0]
    with pytest.raises(UsageError, match=f"event '{event}' is not supported"):
        target_from_event(event, payload)


def test_read_event_from_files(tmp_path):
    payload = _pull_examples("synchronize")[0]
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    name, data = read_event({"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(path)})
    assert name == "pull_request"
    assert data == payload
    path.write_text("[1, 2]")
    with pytest.raises(UsageError, match="not a JSON object"):
        read_event({"GITHUB_EVENT_NAME": "x", "GITHUB_EVENT_PATH": str(path)})
    path.write_text("{")
    with pytest.raises(UsageError, match="not JSON"):
        read_event({"GITHUB_EVENT_NAME": "x", "GITHUB_EVENT_PATH": str(path)})
    with pytest.raises(UsageError, match="cannot read"):
        read_event({"GITHUB_EVENT_NAME": "x", "GITHUB_EVENT_PATH": str(tmp_path / "nope")})
    with pytest.raises(UsageError, match="GITHUB_EVENT_NAME"):
        read_event({})


def test_issue_comment_examples_ask_for_nothing_unless_they_are_the_command():
    """GitHub's issue_comment examples are comments on issues, none is the command."""
    for payload in examples("issue_comment"):
        target = target_from_event("issue_comment", payload)
        assert target.ignore
        assert target.pr_number is None
        assert target.comment_id is None
