"""The GitHub-side state machine, one generating test per class of hole (issue 18).

Each test plays a PR author (and GitHub faults) against the action's entry point and the
fake GitHub, with a reviewer that rejects the diff first and would pass it on any later
call: a re-roll shows as a second call and a ``success``. Every variant must end with the
rejected head never ``success`` and no new call.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.lab.sim import ReviewerSimulator
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    DIFF,
    HEAD,
    REPO,
    pr_payload,
    run_gate,
    setup_pull,
)
from tests.integration.test_agreement_sim import scripted

Sim = Callable[..., ReviewerSimulator]


def fail_then_pass() -> Callable[[dict[str, Any]], str]:
    """The first answer rejects, every later one passes (what a re-roll would win)."""
    return scripted(["fail", *["pass"] * 50])


def never_success(fake: FakeGitHub, head: str = HEAD) -> None:
    assert "success" not in fake.states(head), fake.status_list(head)


# --- class 1: a run that stops at an early guard erases the history ------------------


def _draft(fake: FakeGitHub) -> None:
    fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=DIFF, draft=True)


def _undraft(fake: FakeGitHub) -> None:
    fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=DIFF)


def _marker(fake: FakeGitHub) -> None:
    fake.set_file(HEAD, ".apply/incomplete", "x")


def _unmarker(fake: FakeGitHub) -> None:
    with fake.lock:
        fake.contents.get(HEAD, {}).pop(".apply/incomplete", None)


def _bad_config(fake: FakeGitHub) -> None:
    fake.set_file(BASE, CONFIG_PATH, "min_confidence: [\n")


def _good_config(fake: FakeGitHub) -> None:
    with fake.lock:
        fake.contents.get(BASE, {}).pop(CONFIG_PATH, None)


def _exclude_all(fake: FakeGitHub) -> None:
    fake.set_file(BASE, CONFIG_PATH, "exclude: ['**']\n")


GUARDS = {  # name: (enter, leave, inputs of the guard's run, the reason it must block with)
    "draft": (_draft, _undraft, {}, "draft"),
    "apply_marker": (_marker, _unmarker, {}, "apply_incomplete"),
    "bad_config": (_bad_config, _good_config, {}, "config_"),
    "missing_key": (
        lambda f: None,
        lambda f: None,
        {"api-key": "", "base-url": ""},
        "missing_api_key",
    ),
    "nothing_reviewed": (_exclude_all, _good_config, {}, "nothing_reviewed"),
}


@pytest.mark.parametrize("guard", sorted(GUARDS))
@pytest.mark.parametrize("repeat", [1, 2])
def test_an_early_guard_never_erases_a_fail(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, guard: str, repeat: int
) -> None:
    fake = fake_github
    setup_pull(fake)
    sim = sim_factory(fail_then_pass())
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    enter, leave, inputs, reason = GUARDS[guard]
    for _ in range(repeat):
        enter(fake)
        stopped = run_gate(tmp_path, fake, sim, pr_payload("synchronize"), inputs=inputs)
        assert stopped.outputs.get("reason", "").startswith(reason), stopped.stdout
        leave(fake)
    again = run_gate(tmp_path, fake, sim, pr_payload("reopened"))
    assert sim.count == 1, again.stdout
    assert again.code == 1
    never_success(fake)


# --- class 2: a review in chunks never remembered its fail ---------------------------


def _large_diff(files: int) -> bytes:
    out = b""
    for i in range(files):
        name = f"app/part{i:02d}.py"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
        out += b"@@ -1 +1,12 @@\n-pass\n"
        out += b"".join(f"+setting_{j} = {i * j}\n".encode() for j in range(12))
    return out


@pytest.mark.parametrize("files", [6, 11])
@pytest.mark.parametrize("event", ["reopened", "synchronize"])
def test_a_chunked_fail_stands(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, files: int, event: str
) -> None:
    fake = fake_github
    fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=_large_diff(files))
    fake.set_file(BASE, CONFIG_PATH, "max_chunk_bytes: 1024\n")
    sim = sim_factory(fail_then_pass())
    first = run_gate(tmp_path, fake, sim, pr_payload())
    assert first.code == 1
    assert first.certificate["context"]["chunks"]["reviews"]
    calls = sim.count
    run_gate(tmp_path, fake, sim, pr_payload(event))
    assert sim.count == calls
    never_success(fake)


# --- class 3: the bounded history evicted fails --------------------------------------


def test_unrelated_pushes_never_evict_the_fail(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim
) -> None:
    fake = fake_github
    setup_pull(fake)
    sim = sim_factory(fail_then_pass())
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    for n in range(18):  # each push a new diff, each passed: 18 more questions
        head = f"{n + 10:040x}"
        diff = DIFF.replace(b"return a + b", f"return a + b + {n}".encode())
        assert diff != DIFF
        fake.move_head(7, head)
        fake.add_compare(BASE, head, diff)
        payload = pull_request_event(
            "synchronize", repository=REPO, number=7, head_sha=head, base_sha=BASE
        )
        run_gate(tmp_path, fake, sim, payload)
    calls = sim.count
    fake.move_head(7, HEAD)  # the author force-pushes the rejected head back
    back = run_gate(tmp_path, fake, sim, pr_payload("synchronize"))
    assert sim.count == calls
    assert back.code == 1
    assert fake.states(HEAD)[-1] == "failure"


# --- class 6: only a clean fail stood ------------------------------------------------


@pytest.mark.parametrize(
    "answers",
    [["pass", "fail", "pass"], ["fail", "pass", "pass"], ["pass", "pass", "fail"]],
)
def test_an_agreement_set_holding_a_fail_stands(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, answers: list[str]
) -> None:
    fake = fake_github
    setup_pull(fake, config="agreement: 3\n")
    sim = sim_factory(scripted([*answers, *["pass"] * 30]))
    first = run_gate(tmp_path, fake, sim, pr_payload())
    assert first.code != 0
    run_gate(tmp_path, fake, sim, pr_payload("reopened"))
    assert sim.count == 3
    never_success(fake)


def test_a_low_confidence_pass_stands(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim
) -> None:
    fake = fake_github
    setup_pull(fake, config="min_confidence: 0.95\n")
    sim = sim_factory(scripted(["pass"]))  # confidence 0.9: below the minimum
    assert run_gate(tmp_path, fake, sim, pr_payload()).code != 0
    run_gate(tmp_path, fake, sim, pr_payload("reopened"))
    assert sim.count == 1
    never_success(fake)


# --- class 9: memory per PR, status per commit ---------------------------------------


@pytest.mark.parametrize("number", [8, 9])
def test_a_second_pull_request_from_the_same_commit_does_not_re_ask(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, number: int
) -> None:
    fake = fake_github
    setup_pull(fake)
    sim = sim_factory(fail_then_pass())
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    fake.add_pull(number, head_sha=HEAD, base_sha=BASE, diff=DIFF)
    payload = pull_request_event(
        "opened", repository=REPO, number=number, head_sha=HEAD, base_sha=BASE
    )
    second = run_gate(tmp_path, fake, sim, payload)
    assert sim.count == 1
    assert second.code == 1
    never_success(fake)


# --- class 11: a GitHub error on the comment write lost the fail's record ------------


@pytest.mark.parametrize("status", [500, 502, 503])
@pytest.mark.parametrize("delete", [False, True])
def test_a_lost_record_leaves_the_gates_failure_standing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, status: int, delete: bool
) -> None:
    fake = fake_github
    setup_pull(fake)
    sim = sim_factory(fail_then_pass())
    fake.inject(r"^POST .*/issues/7/comments", status, count=20)  # every comment write fails
    assert run_gate(tmp_path, fake, sim, pr_payload()).code != 0
    with fake.lock:
        fake.faults.clear()
        if delete:  # a writer deletes whatever comment there is
            fake.comments.pop(7, None)
    run_gate(tmp_path, fake, sim, pr_payload("reopened"))
    assert sim.count == 1
    never_success(fake)
