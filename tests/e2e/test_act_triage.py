"""End to end: the scheduled triage (``mode: triage``) in the action's image, run by act.

A night with two waiting pull requests, one past the SLA: the tracking issue lists both
(oldest first), one escalation comment mentions the config's ``escalation.mention``, the
waiting label is added; a night with none: no issue is opened. Triage posts no status.
Every request is checked against GitHub's OpenAPI description by the fake.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gate.action.triage import TRACKING_TITLE
from tests.e2e.test_act import REPOSITORY, TOKEN, build_workspace, image, run_act, tools
from tests.fakes.github import FakeGitHub

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools"]  # the module-scoped fixtures of test_act.py

WORKFLOW = Path(__file__).resolve().parent / "workflow" / "review-gate-triage-e2e.yml"
CONFIG = (
    "escalation: {after_hours: 24, mention: ['@octo-org/reviewers']}\nneeds_human_label: waiting\n"
)


def _ago(hours: float) -> str:
    return (datetime.now(UTC) - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("night", ["two-waiting", "none"])
def test_the_scheduled_triage(
    tools: dict[str, str], image: str, tmp_path: Path, night: str
) -> None:
    ws = build_workspace(tmp_path, WORKFLOW)
    sha = subprocess.run(
        ["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with FakeGitHub(REPOSITORY, token=TOKEN) as github:
        github.set_file(sha, ".github/review-gate.yml", CONFIG)
        for number, hours in ((7, 30.0), (8, 2.0)):
            head = f"{number}" * 40
            github.add_pull(number, head_sha=head, base_sha="2" * 40)
            if night == "two-waiting":
                github.add_status(
                    head,
                    state="error",
                    description="unavailable, not about the code: incomplete after 1 attempt",
                    created_at=_ago(hours),
                )
            else:
                github.add_status(head, state="success", description="pass: confidence 0.9")
        run = run_act(
            tools, ws, None, api_url=github.api_url, reviewer_url="http://127.0.0.1:9",
            reviewer_key="unused", event_name="schedule", workflow=WORKFLOW,
        )  # fmt: skip
        assert run.exit_code == 0, run.explain()
        assert github.violations == [], github.violations
        assert github.response_violations == []
        posted = [r for r in github.requests if r.method == "POST" and "/statuses/" in r.path]
        assert posted == []  # triage never posts a status
        if night == "none":
            assert github.issues == {}
            assert run.outputs.get("state") == "empty", run.explain()
            return
        assert run.outputs.get("state") == "waiting", run.explain()
        [issue] = github.issues.values()
        assert issue["title"] == TRACKING_TITLE
        assert issue["body"].index("\\#7") < issue["body"].index("\\#8")
        [comment] = github.comments[issue["number"]]
        assert comment["body"].startswith("@octo-org/reviewers ")
        assert "#7" in comment["body"]
        assert "#8" not in comment["body"]
        assert [x["name"] for x in github.pulls[7]["labels"]] == ["waiting"]
        assert "2 waiting for a human" in run.summary
