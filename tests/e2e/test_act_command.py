"""End to end: the comment command ``/review-gate review`` in the action's image, run by act.

act runs tests/e2e/workflow/review-gate-command-e2e.yml for an ``issue_comment`` event (a
real ``created`` payload from @octokit/webhooks-examples, moved onto a pull request of the
fake repository). The job's ``if:`` is the example workflow's (checked below), so act
evaluates the very filter users copy; the gate then checks the commenter's permission
through the API. Around the container, on 127.0.0.1: the fake GitHub (every request
checked against GitHub's OpenAPI description) and the reviewer simulator.

- a writer's command: one review of the pull request's current head, 👀 on the comment,
  ``pending`` then ``success`` on that head;
- a collaborator who can only read: a polite reply, no model call, no status;
- anyone else (not OWNER, MEMBER or COLLABORATOR): the job does not even start.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gate.lab.sim import ReviewerSimulator
from tests.e2e.test_act import (
    PR_NUMBER,
    REPOSITORY,
    ROOT,
    ActRun,
    World,
    _reviewer_requests,
    _verdict,
    assert_key_kept,
    build_workspace,
    image,
    run_act,
    tools,
    world,
)
from tests.fakes.events import issue_comment_event

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools", "world"]  # the fixtures of test_act.py

WORKFLOW = Path(__file__).resolve().parent / "workflow" / "review-gate-command-e2e.yml"
EXAMPLE = ROOT / "examples" / "review-gate.yml"
COMMENT_ID = 492700400  # the webhook example's comment id


def _job_if(text: str) -> str:
    """The first job's ``if:`` block (a folded scalar), whitespace-normalised."""
    found = re.search(r"\n    if: >-\n((?:      .*\n)+)", text)
    assert found is not None
    return " ".join(found.group(1).split())


def test_the_e2e_workflow_filters_comments_exactly_as_the_example_does() -> None:
    assert _job_if(WORKFLOW.read_text("utf-8")) == _job_if(EXAMPLE.read_text("utf-8"))


def _comment(login: str, association: str, body: str = "/review-gate review") -> dict[str, Any]:
    event = issue_comment_event(repository=REPOSITORY, number=PR_NUMBER, body=body, login=login)
    event["comment"]["author_association"] = association
    return event


def _act(
    tools: dict[str, str], tmp_path: Path, world: World, event: dict[str, Any]
) -> tuple[ActRun, int]:
    """Run the command workflow; the run and how many reviews the simulator answered."""
    with ReviewerSimulator("openai", _verdict("pass")) as sim:
        run = run_act(
            tools,
            build_workspace(tmp_path, WORKFLOW),
            event,
            api_url=world.github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key=world.key,
            event_name="issue_comment",
            workflow=WORKFLOW,
        )
        _reviewer_requests(sim, world)
        reviews = sim.count
    assert_key_kept(run, world)
    return run, reviews


def test_a_writers_command_runs_one_review_of_the_current_head(
    tools: dict[str, str], image: str, tmp_path: Path, world: World
) -> None:
    world.github.permissions["maintainer"] = "write"
    run, reviews = _act(tools, tmp_path, world, _comment("maintainer", "MEMBER"))
    assert reviews == 1, run.explain()
    statuses = world.github.status_list(world.head_sha)
    assert [s["state"] for s in statuses] == ["pending", "success"], run.explain()
    assert world.github.reactions == [(COMMENT_ID, "eyes")]
    assert run.outputs["state"] == "pass"
    assert run.job_outputs.get("state") == "pass"
    assert run.job_result == "success"
    assert run.exit_code == 0
    cert = json.loads((run.workspace / run.outputs["certificate"]).read_text("utf-8"))
    assert cert["context"]["github"]["event"] == "issue_comment"
    assert cert["context"]["github"]["command"] == {
        "comment_id": COMMENT_ID,
        "login": "maintainer",
        "permission": "write",
    }
    assert world.key not in json.dumps(cert)


def test_a_collaborator_who_can_only_read_gets_a_polite_reply_and_no_review(
    tools: dict[str, str], image: str, tmp_path: Path, world: World
) -> None:
    world.github.permissions["visitor"] = "read"
    run, reviews = _act(tools, tmp_path, world, _comment("visitor", "COLLABORATOR"))
    assert reviews == 0, run.explain()
    assert world.github.status_list(world.head_sha) == []
    assert world.github.reactions == []
    (reply,) = world.github.comments[PR_NUMBER]
    assert reply["body"].startswith("Thanks for asking, visitor."), reply["body"]
    assert run.outputs["state"] == "skipped"
    assert run.job_result == "success"  # a refusal is not a failed job
    assert run.exit_code == 0


@pytest.mark.parametrize(
    ("association", "body"),
    [("CONTRIBUTOR", "/review-gate review"), ("OWNER", "please /review-gate review")],
)
def test_anyone_else_does_not_start_the_job(
    tools: dict[str, str], image: str, tmp_path: Path, world: World, association: str, body: str
) -> None:
    world.github.permissions["passer-by"] = "write"
    run, reviews = _act(tools, tmp_path, world, _comment("passer-by", association, body))
    assert reviews == 0, run.explain()
    assert world.github.requests == []
    assert run.job_result == "skipped", run.explain()
    assert run.step_events() == []
