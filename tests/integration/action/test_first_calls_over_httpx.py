"""The action's first GitHub calls go over the gate's own httpx client: PyGithub (and the
requests, urllib3 and cryptography it brings) is imported only when a later call needs it,
and the review pipeline (guards, memory, diff selection, reviewers, certificate, reports)
only after the first request.

A fresh interpreter runs the whole ``pull_request`` path against the fake GitHub (every
request checked against GitHub's OpenAPI description) and the reviewer simulator, and
records, at each request the fake receives, which of PyGithub's stack was loaded. The
decision and the requests are the same as before; only the client that sends them moved
(issue 22: container start to first request).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT_S = 120

CHILD = r"""
import io, json, sys, tempfile
from pathlib import Path

stack = ("github", "requests", "urllib3", "cryptography")
def loaded():
    return [m for m in stack if m in sys.modules]

PIPELINE_PACKAGES = %(packages)r
PIPELINE_MODULES = %(modules)r
def pipeline(skip=frozenset()):
    return sorted(
        m for m in sys.modules
        if m not in skip and (m in PIPELINE_MODULES
            or any(m == p or m.startswith(p + ".") for p in PIPELINE_PACKAGES))
    )

from gate.action.run import run_action
pipeline_at_import = pipeline()  # before the harness below imports anything of gate
# the fake GitHub and the reviewer simulator load a little of gate themselves: what they
# load before the run is left out of the count below, and reported
before = set(sys.modules)
from gate.lab.sim import ReviewerSimulator, extract_prompt
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
harness = set(sys.modules) - before

at_import = loaded()
HEAD, BASE = "1" * 40, "2" * 40
DIFF = b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"

def answer(request):
    from gate.decide.readback import words_for
    from gate.review.prompt import binding_in

    binding = binding_in(extract_prompt("openai", request)[1])
    body = {"verdict": "pass", "reasons": ["fine"], "confidence": 0.95,
            "diff_sha": binding.diff_sha, "policy_version": binding.policy_version,
            "read": words_for(binding.diff_sha, binding.policy_version)}
    return "```json\n" + json.dumps(body) + "\n```\n"

seen = []
with FakeGitHub("octo-org/hello-world") as fake, tempfile.TemporaryDirectory() as tmp:
    fake.on_request = lambda rec: seen.append(
        [rec.operation or rec.path, loaded(), pipeline(skip=harness)])
    fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=DIFF)
    fake.set_file(BASE, ".github/review-gate.yml", "policy_version: '3'\n")
    sim = ReviewerSimulator("openai", answer)
    sim.start()
    event = Path(tmp) / "event.json"
    event.write_text(json.dumps(pull_request_event(
        "opened", repository=fake.repository, number=7, head_sha=HEAD, base_sha=BASE)))
    env = {
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": fake.repository, "GITHUB_API_URL": fake.api_url,
        "GITHUB_RUN_ID": "1", "RUNNER_TEMP": tmp, "INPUT_TOKEN": fake.token,
        "INPUT_PROVIDER": "openai", "INPUT_MODEL": "sim-model", "INPUT_ATTEMPTS": "1",
        "INPUT_API-KEY": "sk-test-0123456789", "INPUT_BASE-URL": sim.base_url,
    }
    code = run_action(env, out=io.StringIO(), sleep=lambda _s: None, throttle=False)
    sim.stop()
    print(json.dumps({"code": code, "at_import": at_import, "seen": seen,
                      "pipeline_at_import": pipeline_at_import,
                      "harness_pipeline": sorted(m for m in pipeline() if m in harness),
                      "states": fake.states(HEAD), "violations": fake.violations,
                      "comments": len(fake.comments.get(7, []))}))
"""

#: what the run needs only once it has made its first request (issue 22: start-up); at the
#: first request none of these is loaded
PIPELINE_PACKAGES = ("gate.review", "gate.memory", "gate.reviewers", "gate.export", "gate.findings")
PIPELINE_MODULES = tuple(
    f"gate.action.{name}"
    for name in (
        "assets",
        "carry",
        "checks",
        "cost_report",
        "earlier",
        "findings_report",
        "guards",
        "history",
        "next_step",
        "progress",
        "replay",
        "reviews",
        "triage",
    )
) + tuple(f"gate.decide.{name}" for name in ("envelope", "repair", "verdict"))
#: standard-library modules the first calls do without: difflib (only a rebuild from blobs
#: diffs)
PIPELINE_MODULES += ("difflib",)


@pytest.fixture(scope="module")
def child() -> dict[str, Any]:
    """One whole run in a fresh interpreter (both tests read it)."""
    source = CHILD % {"packages": PIPELINE_PACKAGES, "modules": PIPELINE_MODULES}
    done = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == 0
    return result


def test_pygithub_is_not_loaded_before_the_final_status(child: dict[str, Any]) -> None:
    result = child
    assert result["violations"] == []
    assert result["states"] == ["pending", "success"]
    assert result["comments"] == 1
    assert result["at_import"] == []  # importing the action loads none of PyGithub's stack
    seen = [(op, stack) for op, stack, _pipeline in result["seen"]]
    ops = [op for op, _ in seen]
    assert ops[0] == "pulls/get"
    final = len(ops) - 1 - ops[::-1].index("repos/create-commit-status")
    # the pull request, the config, the pending status, the history, the tree, the diff,
    # the memory guard's statuses and sibling pulls, the head re-checks, the final status
    assert {"repos/get-content", "issues/list-comments", "git/get-tree"} <= set(ops[:final])
    assert [(op, stack) for op, stack in seen[: final + 1] if stack] == []
    # PyGithub stays the client of record for the rest: the sticky comment
    assert seen[-1][0] == "issues/create-comment"


def test_the_review_pipeline_is_loaded_only_after_the_first_request(
    child: dict[str, Any],
) -> None:
    """Importing the action, and everything up to its first request, loads none of the
    review pipeline: a module-level import of it in ``gate.action.run`` (or in what the
    first calls import, ``gate.action.state``) fails here, naming the module. The pipeline
    is loaded later in the same run, so the names are the ones the run really uses."""
    result = child
    assert result["pipeline_at_import"] == []
    # the harness's own share is out of the count: keep it to the reviewer's settings and
    # the envelope and event-stream frames the simulator answers with (checked at import,
    # above); the settings bring sigv4 for the name of AWS's key variable
    harness = {"gate.reviewers", "gate.reviewers.settings", "gate.reviewers.sigv4"}
    harness |= {"gate.reviewers.eventstream", "gate.decide.envelope"}
    assert set(result["harness_pipeline"]) <= harness
    first_op, _stack, first_pipeline = result["seen"][0]
    assert first_op == "pulls/get"
    assert first_pipeline == [], f"loaded before the first request: {first_pipeline}"
    # later in the same run the pipeline is there: the list names what the run uses
    last = set(result["seen"][-1][2])
    assert {"gate.action.guards", "gate.review.pipeline", "gate.memory.question"} <= last
    assert {"gate.action.checks", "gate.review.certificate"} <= last
    assert "gate.decide.verdict" in last  # repair: only for an answer that needs one
