"""End to end: the gate's memory across runs, with the example workflow, run by act.

``examples/review-gate.yml`` is the workflow users copy; it runs here as
tests/e2e/test_act_example.py prepares it (the gate's ``uses:`` pointed at ``./`` and the
fake reviewer), and only its ``review`` job (act's ``-j``: the signing and code-scanning
jobs are that test's business). One fake GitHub and one fake reviewer live through every
run of the scenario, so the reviewer's request count is the number of model calls:

1. ``opened``: the reviewer answers ``fail``; the head gets ``failure`` tagged with the
   question (``[q:<16 hex>]``), and the sticky comment's history holds the record.
2. The pull request is closed and reopened on the same head. The example workflow does not
   run on ``closed`` (checked below, so no act run is spent on it); on ``reopened`` the gate
   makes **no model call**: ``fail stands``, the status stays ``failure``, and the summary
   and the comment say the earlier decision stands and that a writer can ask for a fresh
   review.
3. ``synchronize`` to an empty commit (a new head, the same diff): the same question, so
   again no call, and ``failure`` on the new head.
4. A writer's ``/review-gate review`` comment: a fresh review, exactly one call.

docs/security.md ("The state machine", "A worked example") tells the same story.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.action.github.mark import of_status, plain
from gate.action.report import md
from gate.lab.sim import ReviewerSimulator
from gate.memory.question import key_of_record
from gate.memory.record import Record, parse_history
from tests.e2e.test_act import (
    CONFIG,
    PR_NUMBER,
    REPOSITORY,
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
from tests.e2e.test_act_example import EXAMPLE, example_under_act
from tests.fakes.events import issue_comment_event, pull_request_event

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools", "world"]  # the fixtures of test_act.py

JOB = "review"  # the example's job that runs the gate
WRITER = "maintainer"


def test_the_example_workflow_does_not_run_on_closed() -> None:
    """Why the scenario spends no act run on ``closed``: the example never starts on it."""
    workflow = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    types = workflow[True]["pull_request"]["types"]  # YAML 1.1 reads the key `on` as true
    assert "closed" not in types
    assert {"opened", "reopened", "synchronize"} <= set(types)


def _records(world: World) -> list[Record]:
    """The history block of the gate's one sticky comment."""
    comments = world.github.comments.get(PR_NUMBER, [])
    gate = [c for c in comments if "review-gate:history" in c["body"]]
    assert len(gate) == 1, [c["body"][:200] for c in comments]
    return parse_history(gate[0]["body"])


def _comment_body(world: World) -> str:
    [gate] = [c for c in world.github.comments[PR_NUMBER] if "review-gate:history" in c["body"]]
    return str(gate["body"])


def _final(world: World, sha: str) -> dict[str, Any]:
    statuses = world.github.status_list(sha)
    assert statuses, f"no status on {sha}"
    assert {s["context"] for s in statuses} == {"review-gate"}
    return statuses[-1]


def _check_run(
    run: ActRun, world: World, sha: str, state: str, *, wrote: bool = True
) -> dict[str, Any]:
    """What every run of the scenario shows: the key kept, the step's outputs equal to the
    final status on ``sha`` (``wrote``: the run posted it; else the head showed the same
    decision and nothing was written, issue 31), and the job failed as ``fail-job: "true"``
    asks."""
    assert_key_kept(run, world)
    final = _final(world, sha)
    assert final["state"] == "failure", run.explain()
    assert run.outputs["state"] == state, run.explain()
    if wrote:
        assert run.outputs["description"] == plain(final["description"])
        assert md(run.outputs["description"]) in run.summary
    assert run.exit_code == 1
    assert run.gate_result() == "failure"
    return final


def test_a_reopen_after_a_fail_makes_no_model_call(
    tools: dict[str, str], image: str, tmp_path: Path, world: World
) -> None:
    github, head, base = world.github, world.head_sha, world.base_sha
    ws = build_workspace(tmp_path, example_under_act(tmp_path / "review-gate.yml"))
    with ReviewerSimulator("openai", _verdict("fail")) as sim:

        def act(event_name: str, event: dict[str, Any]) -> ActRun:
            return run_act(
                tools,
                ws,
                event,
                api_url=github.api_url,
                reviewer_url=sim.base_url,
                reviewer_key=world.key,
                event_name=event_name,
                workflow=ws / ".github" / "workflows" / "review-gate.yml",
                job=JOB,
            )

        def pr_event(action: str, sha: str) -> dict[str, Any]:
            return pull_request_event(
                action, repository=REPOSITORY, number=PR_NUMBER, head_sha=sha, base_sha=base
            )

        # 1. opened: the model's fail, tagged with the question, recorded in the comment
        run = act("pull_request", pr_event("opened", head))
        assert sim.count == 1, run.explain()
        final = _check_run(run, world, head, "fail")
        assert github.states(head) == ["pending", "failure"]
        question = of_status(final["description"]).tag
        assert question is not None, final["description"]
        [first] = _records(world)
        assert (first.head_sha, first.state, first.status) == (head, "fail", "failure")
        assert (first.source, first.fresh) == ("model", False)
        first_key = key_of_record(first)
        assert first_key is not None
        assert first_key.id.startswith(question)

        # 2. closed (the example does not run on it), then reopened on the same head
        github.pulls[PR_NUMBER]["state"] = "closed"
        github.pulls[PR_NUMBER]["state"] = "open"
        run = act("pull_request", pr_event("reopened", head))
        assert sim.count == 1, run.explain()  # no model call
        final = _check_run(run, world, head, "fail", wrote=False)
        # the head shows this question's failure already: the reopen writes nothing
        assert github.states(head) == ["pending", "failure"]
        assert run.outputs["description"].startswith(
            "rejected: fail stands: the same diff was rejected"
        )
        assert of_status(final["description"]).tag == question
        for text in (run.summary, _comment_body(world)):
            assert "no new call was made" in text
            assert "a writer can ask for a fresh review" in text
            [step] = [line for line in text.splitlines() if line.startswith("**Next step**")]
            assert "a new commit with the same diff is the same question" in step
            assert "`/review-gate review`" in step
        # one row per question: the standing fail is still the model's, not the repeat
        [kept] = _records(world)
        assert (kept.head_sha, kept.source, kept.time) == (head, "model", first.time)

        # 3. an empty commit: a new head, the same diff, the same question
        empty = secrets.token_hex(20)
        github.move_head(PR_NUMBER, empty)
        github.add_compare(base, empty, github.diffs[PR_NUMBER])
        run = act("pull_request", pr_event("synchronize", empty))
        assert sim.count == 1, run.explain()  # no model call
        final = _check_run(run, world, empty, "fail")
        assert github.states(empty) == ["pending", "failure"]
        assert of_status(final["description"]).tag == question
        assert github.states(head) == ["pending", "failure"]

        # 4. a writer's comment command: a fresh review of the current head, one call
        github.permissions[WRITER] = "write"
        event = issue_comment_event(
            repository=REPOSITORY, number=PR_NUMBER, body="/review-gate review", login=WRITER
        )
        event["comment"]["author_association"] = "MEMBER"
        run = act("issue_comment", event)
        assert sim.count == 2, run.explain()  # exactly one new call
        assert [content for _, content in github.reactions] == ["eyes"]
        _reviewer_requests(sim, world)
        final = _check_run(run, world, empty, "fail")
        assert github.states(empty) == ["pending", "failure", "pending", "failure"]
        assert of_status(final["description"]).tag == question
        [fresh] = _records(world)  # the fresh review's record supersedes the older one
        assert (fresh.head_sha, fresh.source, fresh.fresh) == (empty, "model", True)
    cert = json.loads((run.workspace / run.outputs["certificate"]).read_text("utf-8"))
    assert cert["context"]["github"]["command"]["login"] == WRITER


def test_a_block_recorded_nowhere_else_is_found_in_the_ledger(
    tools: dict[str, str], image: str, tmp_path: Path, world: World
) -> None:
    """Issue 31 (finding 7) under act: ``sticky_comment: false`` and a malformed answer,
    posted as ``error`` without the question's tag, so neither a comment nor the commit's
    evidence holds it. The question ledger does: a reopen of the head, then an empty commit,
    make no model call, and their status is ``failure`` (``block stands``)."""
    github, head, base = world.github, world.head_sha, world.base_sha
    github.set_file(base, ".github/review-gate.yml", CONFIG + "sticky_comment: false\n")
    ws = build_workspace(tmp_path, example_under_act(tmp_path / "review-gate.yml"))
    with ReviewerSimulator("openai", lambda _request: "I looked; no JSON today.") as sim:

        def act(event: dict[str, Any]) -> ActRun:
            return run_act(
                tools,
                ws,
                event,
                api_url=github.api_url,
                reviewer_url=sim.base_url,
                reviewer_key=world.key,
                event_name="pull_request",
                workflow=ws / ".github" / "workflows" / "review-gate.yml",
                job=JOB,
            )

        def pr_event(action: str, sha: str) -> dict[str, Any]:
            return pull_request_event(
                action, repository=REPOSITORY, number=PR_NUMBER, head_sha=sha, base_sha=base
            )

        run = act(pr_event("opened", head))
        assert sim.count == 1, run.explain()
        assert_key_kept(run, world)
        assert github.states(head) == ["pending", "error"], run.explain()
        # the error carries its kind and question in its mark (issue 31, item 4), but an
        # error decides nothing on the commit: only the ledger holds the block
        assert of_status(github.status_list(head)[-1]["description"]).kind == "needs_human"
        assert not github.comments.get(PR_NUMBER)
        assert "refs/review-gate/ledger" in github.git.refs

        run = act(pr_event("reopened", head))
        assert sim.count == 1, run.explain()  # no model call: the ledger holds the block
        assert_key_kept(run, world)
        final = _final(world, head)
        assert final["state"] == "failure", run.explain()
        assert final["description"].startswith("needs_human: block stands"), final

        empty = secrets.token_hex(20)
        github.move_head(PR_NUMBER, empty)
        github.add_compare(base, empty, github.diffs[PR_NUMBER])
        run = act(pr_event("synchronize", empty))
        assert sim.count == 1, run.explain()
        assert github.states(empty) == ["pending", "failure"], run.explain()
