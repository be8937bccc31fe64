"""``mode: triage`` against the fake GitHub (every request checked against GitHub's OpenAPI
description): a night with two waiting pull requests, one past the SLA; the next night
(no second mention); a night with none (the issue closes). Triage never posts a status."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gate.action import report
from gate.action.triage import TRACKING_TITLE, _checked, family_of_status
from gate.decide.decision import Family
from gate.errors import GitHubError
from gate.memory import record
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import BASE, run_gate
from tests.unit.memory.test_memory import BASE as RECORD

fake = base.fake
CONFIG = (
    "escalation:\n  after_hours: 24\n  mention: ['@octo-org/reviewers', octocat]\n"
    "needs_human_label: waiting-for-human\n"
)
NOW = datetime.now(UTC)


def ago(hours: float) -> str:
    return (NOW - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def head(n: int) -> str:
    return f"{n:x}" * 40 if n < 16 else f"{n:02x}" * 20


def night(tmp_path, fake, name: str):
    (tmp_path / name).mkdir()
    return run_gate(
        tmp_path / name,
        fake,
        None,
        {},
        event="schedule",
        inputs={"mode": "triage", "api-key": None, "identity": "github-actions[bot]"},
        env={"GITHUB_SHA": BASE},
    )


def setup(fake) -> None:
    fake.set_file(BASE, ".github/review-gate.yml", CONFIG)
    waiting = {
        7: ("error", "unavailable, not about the code: incomplete after 1 attempt: quota", 30),
        8: ("failure", "needs_human: low_confidence: pass with confidence 0.4", 2),
        9: ("success", "pass: confidence 0.9, 2 reasons", 1),
        10: ("failure", "rejected: fail: leaks a token", 40),
        11: ("pending", "pending: review in progress", 50),
    }
    for number, (state, text, hours) in waiting.items():
        labels = ("waiting-for-human",) if number == 9 else ()
        fake.add_pull(number, head_sha=head(number), base_sha=BASE, labels=labels)
        fake.add_status(head(number), state=state, description=text, created_at=ago(hours))
    fake.add_pull(12, head_sha=head(12), base_sha=BASE)  # someone else's error status
    fake.add_status(head(12), state="error", description="needs_human: x", login="mallory")
    rec = replace(RECORD, time=ago(3).replace("Z", "+00:00"), state="needs_human",
                  reason="low_confidence", status="failure", verdict="pass")  # fmt: skip
    body = report.comment_marker("review-gate") + "\n" + record.encode_block([rec])
    fake.add_comment(8, body, login="github-actions[bot]")
    fake.pulls[8]["updated_at"] = ago(1)  # updated in the window: its records are read


def test_two_waiting_one_past_the_sla_then_the_next_night_then_none(tmp_path, fake):
    setup(fake)
    first = night(tmp_path, fake, "one")
    assert first.code == 0, first.stdout
    [issue] = [i for i in fake.issues.values() if i["title"] == TRACKING_TITLE]
    body = issue["body"]
    assert body.index("\\#7") < body.index("\\#8")  # oldest first
    for absent in ("\\#9", "\\#10", "\\#11", "\\#12"):
        assert absent not in body
    assert "`unavailable`" in body
    assert "`needs_human`" in body
    assert "review\\-gate\\:override" in body  # inert Markdown
    assert "to `@octo-org/reviewers`, `@octocat`." in body  # named, not mentioned
    assert "⏰" in body.split("\\#8")[0]  # #7 is past the SLA, #8 is not
    mentions = [c["body"] for c in fake.comments.get(issue["number"], [])]
    assert len(mentions) == 1
    assert mentions[0].startswith("@octo-org/reviewers @octocat ")
    assert "#7" in mentions[0]
    assert "#8" not in mentions[0]
    labels = {n: [x["name"] for x in fake.pulls[n]["labels"]] for n in (7, 8, 9, 10)}
    assert labels == {7: ["waiting-for-human"], 8: ["waiting-for-human"], 9: [], 10: []}
    assert "needs\\_human 1 \\(low\\_confidence 1\\)" in first.summary  # the health report
    assert "needs\\_human 1 \\(low\\_confidence 1\\)" in body
    assert first.outputs["state"] == "waiting"
    # the next night: the same queue, #7 is not mentioned again
    second = night(tmp_path, fake, "two")
    assert second.code == 0, second.stdout
    assert len(fake.comments.get(issue["number"], [])) == 1
    # a night with none: every head passed; the issue is closed, the labels removed
    for number in (7, 8):
        fake.add_status(head(number), state="success", description="overridden by @maintainer")
    third = night(tmp_path, fake, "three")
    assert third.code == 0, third.stdout
    assert fake.issues[issue["number"]]["state"] == "closed"
    assert third.outputs["state"] == "empty"
    assert all(not fake.pulls[n]["labels"] for n in (7, 8))
    # triage never posts a status (so never a success) and never asks a reviewer
    posted = [r for r in fake.requests if r.method == "POST" and "/statuses/" in r.path]
    assert posted == []


def test_an_empty_night_opens_no_issue(tmp_path, fake):
    fake.set_file(BASE, ".github/review-gate.yml", CONFIG)
    fake.add_pull(7, head_sha=head(7), base_sha=BASE)
    fake.add_status(head(7), state="success", description="pass: confidence 0.9, 1 reason")
    result = night(tmp_path, fake, "empty")
    assert result.code == 0, result.stdout
    assert not fake.issues


@pytest.mark.parametrize(
    ("state", "description", "family"),
    [
        (
            "error",
            "unavailable, not about the code: incomplete after 3 attempts",
            Family.UNAVAILABLE,
        ),
        ("error", "config, not about the code: needs_human: config_yaml", Family.CONFIG),
        ("failure", "coverage: needs_human: partial coverage", Family.COVERAGE),
        ("failure", "needs_human: unstable: the 2 answers disagree", Family.NEEDS_HUMAN),
        ("error", "superseded by 1234567: unavailable, not about the code: x", Family.UNAVAILABLE),
        ("error", "incomplete after 3 attempts: (an older status, no lead)", Family.NEEDS_HUMAN),
        ("failure", "rejected: fail: leaks a token", None),
        ("failure", "fail: an older rejection", None),
        ("success", "pass: confidence 0.9", None),
        ("pending", "pending: review in progress", None),
    ],
)
def test_the_family_a_status_names(state: str, description: str, family: Family | None) -> None:
    assert family_of_status(state, description) is family


def test_a_forbidden_call_names_the_permission_to_add() -> None:
    def forbidden() -> None:
        raise GitHubError("GitHub answered HTTP 403 to: update the issue", reason="github_http_403")

    with pytest.raises(GitHubError) as caught:
        _checked(forbidden, "issues")
    assert "add `issues: write` to the triage workflow's permissions" in caught.value.message


def test_a_mention_that_is_not_a_user_or_team_is_refused_with_its_line() -> None:
    from gate.config.load import parse_config
    from gate.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        parse_config("escalation:\n  mention: ['not a team!']\n", source="cfg.yml")
    message = caught.value.message
    assert "escalation.mention" in message
    assert "line 2" in message


def test_a_queue_past_the_cap_keeps_the_issue_and_mentions_once(tmp_path, fake, monkeypatch):
    """Issue 31, finding 6: more open pull requests than triage reads (an author can open
    them) must not close the tracking issue while #7 still waits, nor get the owners
    mentioned again for #7's head once they are closed."""
    from gate.action import triage

    monkeypatch.setattr(triage, "MAX_PULLS", 4)
    fake.set_file(BASE, ".github/review-gate.yml", CONFIG)
    fake.add_pull(7, head_sha=head(7), base_sha=BASE)
    fake.add_status(head(7), state="error", description="needs_human: x", created_at=ago(30))
    first = night(tmp_path, fake, "one")
    assert first.code == 0, first.stdout
    [issue] = [i for i in fake.issues.values() if i["title"] == TRACKING_TITLE]
    assert len(fake.comments.get(issue["number"], [])) == 1  # #7 escalated once
    for number in range(20, 26):  # newer outside pull requests, nothing waits on them
        fake.add_pull(number, head_sha=head(number), base_sha=BASE)
    second = night(tmp_path, fake, "two")
    assert second.code == 0, second.stdout
    assert fake.issues[issue["number"]]["state"] == "open", "closed on a cut list"
    assert "newest 4 were read" in fake.issues[issue["number"]]["body"]
    assert "newest 4 were read" in second.summary
    for number in range(20, 26):
        fake.pulls[number]["state"] = "closed"
    third = night(tmp_path, fake, "three")
    assert third.code == 0, third.stdout
    assert "\\#7" in fake.issues[issue["number"]]["body"]
    assert len(fake.comments.get(issue["number"], [])) == 1, "the owners were mentioned again"
