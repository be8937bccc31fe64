"""End to end: the workflow for forks (examples/review-gate-forks.yml) run by act on a
``pull_request_target`` payload of a pull request from a fork, against the fake GitHub
(every request checked against GitHub's OpenAPI description) and the reviewer simulator.

The workflow act runs is the example itself, with only what a test must change: the
action is the image under test (``uses: ./``), the model and the reviewer's URL are the
simulator's, the key is the test's secret, and the artifact upload (no artifact server
here) is left out. The run must post ``pending`` and then the verdict on the fork's head
commit, read the config from the base commit, and never check out the fork's code.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.action.github.mark import plain
from gate.lab.sim import ReviewerSimulator
from tests.e2e.test_act import (
    CONFIG,
    DIFF,
    PR_NUMBER,
    REPOSITORY,
    ROOT,
    TOKEN,
    World,
    _event,
    _reviewer_requests,
    _verdict,
    assert_key_kept,
    build_workspace,
    image,
    run_act,
    tools,
)
from tests.fakes.github import FakeGitHub

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools"]  # the fixtures of test_act.py

EXAMPLE = ROOT / "examples" / "review-gate-forks.yml"
FORK = "stranger/hello-world"


def forks_workflow(tmp_path: Path) -> Path:
    """The example, changed only where a test must (module docstring)."""
    text = EXAMPLE.read_text("utf-8")
    code = [line.split("#")[0] for line in text.splitlines()]
    assert not [line for line in code if "checkout" in line]  # never checks out PR code
    assert "pull_request_target:" in text
    text = text[: text.index("      - name: Upload the review certificate")]
    for old, new in (
        ("uses: review-gate/review-gate@v1", "uses: ./"),
        ("model: gpt-4o-mini", "model: sim-model\n          base-url: ${{ env.RG_REVIEWER_URL }}"),
        ("secrets.OPENAI_API_KEY", "secrets.RG_REVIEWER_KEY"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "review-gate-forks.yml"
    path.write_text(text, encoding="utf-8")
    return path


def fork_event(head_sha: str, base_sha: str) -> dict[str, Any]:
    """The real pull_request.opened example, its head moved to a fork."""
    event = _event(head_sha, base_sha)
    pull = dict(event["pull_request"])
    owner = FORK.split("/")[0]
    fork = {
        **pull["base"]["repo"],
        "full_name": FORK,
        "name": FORK.split("/")[1],
        "fork": True,
        "owner": {**pull["base"]["repo"]["owner"], "login": owner},
    }
    pull["head"] = {**pull["head"], "repo": fork, "label": f"{owner}:topic"}
    event["pull_request"] = pull
    return event


@pytest.fixture
def fork_world() -> Iterator[World]:
    head_sha, base_sha = secrets.token_hex(20), secrets.token_hex(20)
    with FakeGitHub(REPOSITORY, token=TOKEN) as github:
        github.add_pull(PR_NUMBER, head_sha=head_sha, base_sha=base_sha, diff=DIFF, head_repo=FORK)
        github.set_file(base_sha, ".github/review-gate.yml", CONFIG)
        # the fork's own config would lower the bar: it must never be read
        github.set_file(head_sha, ".github/review-gate.yml", "min_confidence: 0\n")
        yield World(github, head_sha, base_sha, "sk-e2e-" + secrets.token_hex(12))


def test_a_fork_pull_request_target_posts_pending_then_the_verdict(
    tools: dict[str, str], image: str, tmp_path: Path, fork_world: World
) -> None:
    world = fork_world
    workflow = forks_workflow(tmp_path)
    workspace = build_workspace(tmp_path, workflow)
    with ReviewerSimulator("openai", _verdict("pass")) as sim:
        run = run_act(
            tools,
            workspace,
            fork_event(world.head_sha, world.base_sha),
            api_url=world.github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key=world.key,
            event_name="pull_request_target",
            workflow=workflow,
        )
        assert sim.count == 1, run.explain()
        _reviewer_requests(sim, world)  # the base's config (policy, max_tokens), bound
    assert_key_kept(run, world)
    statuses = world.github.status_list(world.head_sha)
    assert [s["state"] for s in statuses] == ["pending", "success"], run.explain()
    assert {s["context"] for s in statuses} == {"review-gate"}
    gate = [e for e in run.events if e.get("jobID") == "review" and e.get("stepID") == ["gate"]]
    outputs = {
        str(e["name"]): str(e.get("arg", "")) for e in gate if e.get("command") == "set-output"
    }
    assert outputs["state"] == "pass", run.explain()
    assert outputs["description"] == plain(statuses[-1]["description"])
    # the config was read at the base commit only; the fork's head was never fetched as code
    refs = [r.query for r in world.github.requests if "/contents/" in r.path]
    assert refs
    assert all(world.base_sha in query for query in refs), refs
    assert json.dumps(outputs).count(world.key) == 0
    assert run.returncode == 0, run.explain()
