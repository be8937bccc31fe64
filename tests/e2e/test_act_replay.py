"""End to end: the scheduled replay (``mode: replay``) in the action's image, run by act.

The image and the tools come from tests/e2e/test_act.py. Before act runs, the pull
request is reviewed once in-process (:func:`gate.action.run.run_action`) against the same
fake GitHub, which leaves the record in the sticky comment; then act runs the
``schedule`` event: the simulator answers ``fail`` where the record says ``pass``, so the
job fails and opens the tracking issue; where it answers ``pass`` again, the job stays
green. Every request is checked against GitHub's OpenAPI description by the fake.
"""

from __future__ import annotations

import io
import json
import secrets
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gate.action.replay import TRACKING_TITLE
from gate.action.run import run_action
from gate.lab.sim import ReviewerSimulator
from tests.e2e.test_act import (
    DIFF,
    PR_NUMBER,
    REPOSITORY,
    TOKEN,
    build_workspace,
    image,
    run_act,
    tools,
)
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.test_agreement_sim import scripted

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools"]  # the module-scoped fixtures of test_act.py

WORKFLOW = Path(__file__).resolve().parent / "workflow" / "review-gate-replay-e2e.yml"


def _review_once(tmp_path: Path, github: FakeGitHub, sim: ReviewerSimulator, key: str) -> None:
    pull = github.pulls[PR_NUMBER]
    payload = pull_request_event(
        "opened", repository=REPOSITORY, number=PR_NUMBER,
        head_sha=pull["head"]["sha"], base_sha=pull["base"]["sha"],
    )  # fmt: skip
    event = tmp_path / "pr-event.json"
    event.write_text(json.dumps(payload))
    env = {
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_API_URL": github.api_url,
        "RUNNER_TEMP": str(tmp_path), "INPUT_TOKEN": TOKEN, "INPUT_PROVIDER": "openai",
        "INPUT_MODEL": "sim-model", "INPUT_BASE-URL": sim.base_url, "INPUT_API-KEY": key,
        "INPUT_ATTEMPTS": "1",
    }  # fmt: skip
    assert run_action(env, out=io.StringIO(), sleep=lambda _s: None, throttle=False) == 0
    pull["updated_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("night", ["stable", "unstable"])
def test_the_scheduled_replay(
    tools: dict[str, str], image: str, tmp_path: Path, night: str
) -> None:
    """A stable night stays green; an unstable one fails and opens the tracking issue."""
    key = "sk-e2e-" + secrets.token_hex(12)
    head, base = secrets.token_hex(20), secrets.token_hex(20)
    answers = ["pass", "pass"] if night == "stable" else ["pass", "fail"]
    with (
        FakeGitHub(REPOSITORY, token=TOKEN) as github,
        ReviewerSimulator("openai", scripted(answers)) as sim,
    ):
        github.add_pull(PR_NUMBER, head_sha=head, base_sha=base, diff=DIFF)
        _review_once(tmp_path, github, sim, key)
        run = run_act(
            tools,
            build_workspace(tmp_path, WORKFLOW),
            None,
            api_url=github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key=key,
            event_name="schedule",
            workflow=WORKFLOW,
        )
        assert sim.count == 2, run.explain()
        assert github.violations == [], github.violations
        assert github.response_violations == []
        assert key not in json.dumps(github.received())
        assert run.outputs.get("state") == night, run.explain()
        row = f"| pass | {answers[1]} | {night} |"
        assert row in run.summary
        if night == "stable":
            assert run.exit_code == 0, run.explain()
            assert github.issues == {}
        else:
            assert run.exit_code == 1, run.explain()
            [issue] = github.issues.values()
            assert issue["title"] == TRACKING_TITLE
            assert row in issue["body"]
