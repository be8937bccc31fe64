"""Pull requests from forks through the action, against the fake GitHub (every request
checked against GitHub's OpenAPI description): the plain ``pull_request`` workflow on a
fork ends with a clear message and a link to the workflow for forks, never a silent wait;
on ``pull_request_target`` a fork's pull request gets ``pending``, then the verdict."""

from __future__ import annotations

from gate.action.guards import FORKS_EXAMPLE_URL
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory
FORK = "stranger/hello-world"


def test_a_fork_on_pull_request_is_told_where_the_fork_workflow_is(tmp_path, fake, sim_factory):
    # what GitHub gives a fork's pull_request run: a read-only token (statuses answer 403)
    setup_pull(fake, head_repo=FORK)
    fake.inject(r"^POST /repos/.*/statuses/", 403, count=10, message="Resource not accessible")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(head_repo=FORK))
    assert result.code == 3
    assert sim.requests == []
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error::")]
    assert errors[0].startswith("::error::pull request #7 comes from a fork")
    assert FORKS_EXAMPLE_URL in errors[0]
    assert FORKS_EXAMPLE_URL.startswith("https://github.com/review-gate/review-gate/blob/")


def test_a_fork_on_pull_request_target_gets_pending_then_the_verdict(tmp_path, fake, sim_factory):
    setup_pull(fake, head_repo=FORK)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(head_repo=FORK), event="pull_request_target")
    assert result.code == 0, result.stdout
    assert fake.states(HEAD) == ["pending", "success"]
    assert "comes from a fork" not in result.stdout
    assert len(sim.requests) == 1


def test_the_readme_names_the_fork_workflow() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text("utf-8")
    assert "examples/review-gate-forks.yml" in readme
    assert "outside contributors" in readme
