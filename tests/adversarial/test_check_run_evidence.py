"""Commit evidence with ``report: check-run`` alone (issue 18, rule 3 of docs/security.md).

The class: "a standing block the gate posted on the commit is not read back in one of the
report modes". The gate's own ``failure`` statuses carry the question's tag, so a second
pull request of the same head (or a run whose record was lost) finds the block on the
commit; with ``report: check-run`` there were no statuses, nothing was read, and the
rejected diff was asked again and passed. Now a completed check run carries the status it
stands for and the question in its ``external_id`` (set by the app that created it, no
reviewer text), and the gate reads back its own app's check runs
(``GET /repos/{owner}/{repo}/commits/{ref}/check-runs``).

Generated over: the token's app, the way the PR record is missed (a second PR of the same
commit, a lost comment), and check runs other apps wrote with the gate's name (a success
that would hide the block, a failure that would forge one). Each variant of the first
test fails on main 482136c.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gate.lab.sim import ReviewerSimulator
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import (
    BASE,
    DIFF,
    HEAD,
    REPO,
    pr_payload,
    run_gate,
    setup_pull,
)
from tests.integration.test_agreement_sim import scripted

Sim = Callable[..., ReviewerSimulator]
NAME = "review-gate"


def _gate_app(fake: FakeGitHub) -> str:
    return fake.token_app or "github-actions[bot]"


def _conclusions(fake: FakeGitHub, app: str) -> list[str | None]:
    """The conclusions of the check runs on HEAD that ``app`` wrote, oldest first."""
    slug = app.removesuffix("[bot]")
    with fake.lock:
        runs = sorted(fake.check_runs.values(), key=lambda r: int(r["id"]))
    return [
        r.get("conclusion")
        for r in runs
        if r["head_sha"] == HEAD and r["name"] == NAME and (r["app"] or {}).get("slug") == slug
    ]


def _lose_the_record(fake: FakeGitHub) -> None:
    with fake.lock:
        fake.comments.pop(7, None)


def _second_pull(tmp_path: Path, fake: FakeGitHub, sim: ReviewerSimulator) -> int:
    fake.add_pull(8, head_sha=HEAD, base_sha=BASE, diff=DIFF)
    payload = pull_request_event("opened", repository=REPO, number=8, head_sha=HEAD, base_sha=BASE)
    return run_gate(tmp_path, fake, sim, payload).code


@pytest.mark.parametrize("app", [None, "my-review-app[bot]"])
@pytest.mark.parametrize("how", ["second_pull", "lost_record", "both"])
@pytest.mark.parametrize("report", ["check-run", "both"])
def test_a_standing_block_is_found_on_the_commit_in_every_report_mode(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, app: str | None, how: str,
    report: str,
) -> None:  # fmt: skip
    fake = fake_github
    fake.token_app = app
    setup_pull(fake, config=f"report: {report}\n")
    sim = sim_factory(scripted(["fail", *["pass"] * 20]))
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    assert _conclusions(fake, _gate_app(fake))[-1] == "failure"
    if how in ("lost_record", "both"):
        _lose_the_record(fake)
    if how in ("second_pull", "both"):
        code = _second_pull(tmp_path, fake, sim)
    else:
        code = run_gate(tmp_path, fake, sim, pr_payload("reopened")).code
    assert sim.count == 1, "the rejected diff was asked again"
    assert code == 1
    assert "success" not in _conclusions(fake, _gate_app(fake))
    assert "success" not in fake.states(HEAD)


@pytest.mark.parametrize("foreign", ["other-app[bot]", "github-actions[bot]"])
@pytest.mark.parametrize("external_id", ["review-gate:success", "", "review-gate:error"])
def test_another_apps_success_never_hides_the_block(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, foreign: str, external_id: str
) -> None:
    fake = fake_github
    fake.token_app = "my-review-app[bot]"
    setup_pull(fake, config="report: check-run\n")
    sim = sim_factory(scripted(["fail", *["pass"] * 20]))
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    # a workflow of another app copies the gate's check name with a newer success
    fake.add_check_run(
        HEAD, NAME, app=foreign, conclusion="success", external_id=external_id, title="ok"
    )
    _lose_the_record(fake)
    assert _second_pull(tmp_path, fake, sim) == 1
    assert sim.count == 1
    assert "success" not in _conclusions(fake, _gate_app(fake))


@pytest.mark.parametrize("foreign", ["other-app[bot]", "github-actions[bot]"])
@pytest.mark.parametrize("tagged", [True, False])
def test_another_apps_failure_is_not_the_gates_block(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, foreign: str, tagged: bool
) -> None:
    """The evidence is the gate's own app's only: another app's failure check run (even
    with a tag in the gate's format) decides nothing; the reviewer is asked."""
    fake = fake_github
    fake.token_app = "my-review-app[bot]"
    setup_pull(fake, config="report: check-run\n")
    external = "review-gate:failure" + (":q:0123456789abcdef" if tagged else "")
    fake.add_check_run(HEAD, NAME, app=foreign, conclusion="failure", external_id=external)
    sim = sim_factory(scripted(["pass"]))
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 0
    assert sim.count == 1
    assert _conclusions(fake, _gate_app(fake))[-1] == "success"


def test_an_error_check_run_decides_nothing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim
) -> None:
    """A check run concludes ``failure`` for an ``error`` too; its ``external_id`` tells
    them apart, so an outage does not stand as a block (the next run asks)."""
    fake = fake_github
    fake.token_app = "my-review-app[bot]"
    setup_pull(fake, config="report: check-run\n", draft=False)
    fake.set_file(HEAD, ".apply/incomplete", "x")
    sim = sim_factory(scripted(["pass"]))
    stopped = run_gate(tmp_path, fake, sim, pr_payload())
    assert stopped.code != 0
    with fake.lock:
        fake.contents.get(HEAD, {}).pop(".apply/incomplete", None)
    _lose_the_record(fake)
    assert run_gate(tmp_path, fake, sim, pr_payload("synchronize")).code == 0
    assert sim.count == 1


@pytest.mark.parametrize("lost", [False, True])
@pytest.mark.parametrize("report", ["check-run", "both"])
def test_an_overrides_success_check_run_hides_no_block(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, lost: bool, report: str
) -> None:
    """A writer's override posts a success check run; once the label is removed, the
    gate's earlier failure on the head stands again (read from its own check runs when the
    record is lost), with no call."""
    fake = fake_github
    fake.token_app = "my-review-app[bot]"
    fake.permissions["maintainer"] = "write"
    setup_pull(fake, config=f"report: {report}\n")
    sim = sim_factory(scripted(["fail", *["pass"] * 20]))
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    with fake.lock:
        fake.pulls[7]["labels"] = [{"name": "review-gate:override", "id": 9, "color": "eee"}]
    labelled = pr_payload("labeled", label="review-gate:override", sender="maintainer")
    assert run_gate(tmp_path, fake, sim, labelled).code == 0
    assert _conclusions(fake, _gate_app(fake))[-1] == "success"
    with fake.lock:
        fake.pulls[7]["labels"] = []
    if lost:
        _lose_the_record(fake)
    removed = run_gate(tmp_path, fake, sim, pr_payload("unlabeled", label="review-gate:override"))
    assert removed.code == 1, removed.stdout
    assert sim.count == 1
    assert _conclusions(fake, _gate_app(fake))[-1] == "failure"
