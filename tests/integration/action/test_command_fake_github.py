"""``/review-gate review`` in a pull request comment, through the whole action, against the
fake GitHub (every request checked against the OpenAPI description): a writer's command
runs one fresh review of the current head, a reader's gets a polite reply and no model call,
anything else is not a command."""

from __future__ import annotations

import pytest

from gate.action.event import is_review_command, target_from_event
from tests.fakes.events import issue_comment_event
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import HEAD, REPO, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory

COMMENT_ID = 492700400  # the webhook example's comment id


def command(body: str = "/review-gate review", **kw):
    return issue_comment_event(repository=REPO, number=7, body=body, **kw)


def test_a_writers_command_runs_one_review_of_the_current_head(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.permissions["maintainer"] = "write"
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, command(login="maintainer"), event="issue_comment")
    assert result.code == 0, result.stdout
    assert len(sim.requests) == 1
    assert fake.states(HEAD) == ["pending", "success"]
    assert fake.reactions == [(COMMENT_ID, "eyes")]
    ops = [r.operation for r in fake.requests]
    assert ops.index("reactions/create-for-issue-comment") < ops.index("repos/create-commit-status")
    assert result.certificate["context"]["github"]["event"] == "issue_comment"
    assert result.certificate["context"]["github"]["command"] == {
        "comment_id": COMMENT_ID,
        "login": "maintainer",
        "permission": "write",
    }


def test_a_readers_command_gets_a_polite_reply_and_no_model_call(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.permissions["visitor"] = "read"
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, command(login="visitor"), event="issue_comment")
    assert result.code == 0, result.stdout
    assert sim.requests == []
    assert fake.status_list(HEAD) == []
    assert fake.reactions == []
    (reply,) = fake.comments[7]
    assert reply["body"].startswith("Thanks for asking, visitor.")
    assert "write, maintain or admin" in reply["body"]
    assert result.outputs["state"] == "skipped"


@pytest.mark.parametrize(
    "kw",
    [
        {"body": "please /review-gate review"},
        {"body": "/review-gate reviews"},
        {"body": "/review-gate review", "on_pull_request": False},
        {"body": "/review-gate review", "bot": True, "login": "some-app[bot]"},
        {"body": "/review-gate review", "action": "edited"},
    ],
)
def test_anything_else_is_not_a_command_and_calls_nothing(tmp_path, fake, sim_factory, kw):
    setup_pull(fake)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, command(**kw), event="issue_comment")
    assert result.code == 0, result.stdout
    assert fake.requests == []
    assert sim.requests == []


def test_the_command_is_the_first_non_blank_line():
    assert is_review_command("\n  /review-gate review  \nthanks")
    assert not is_review_command("thanks\n/review-gate review")
    target = target_from_event("issue_comment", command("\n/review-gate review\n"))
    assert (target.pr_number, target.comment_id, target.ignore) == (7, COMMENT_ID, "")
