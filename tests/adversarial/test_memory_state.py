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
    # the block, as the base config asks for it; under nothing_in_scope: pass (the
    # default) a maintainer's exclude-all is a new question that passes with no reviewer
    # call (issue 34): no guard, and no author's doing
    fake.set_file(BASE, CONFIG_PATH, "exclude: ['**']\nnothing_in_scope: block\n")


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
    # the asking stopped at the fail (issue 33), and the short set's fail stands
    assert sim.count == answers.index("fail") + 1
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


# --- class 4: the token's identity was guessed ---------------------------------------


@pytest.mark.parametrize("app", ["my-review-app[bot]", "github-actions[bot]"])
@pytest.mark.parametrize("report", ["check-run", "both"])
def test_the_identity_is_learned_from_the_check_run_never_guessed(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, app: str, report: str
) -> None:
    fake = fake_github
    fake.token_app = None if app == "github-actions[bot]" else app
    setup_pull(fake, config=f"report: {report}\n")
    other = "github-actions[bot]" if app != "github-actions[bot]" else "other-app[bot]"
    marker = "<!-- review-gate:sticky:review-gate -->"
    fake.add_comment(7, f"{marker}\nanother workflow's comment", login=other, bot=True)
    sim = sim_factory(fail_then_pass())
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    run_gate(tmp_path, fake, sim, pr_payload("reopened"))
    assert sim.count == 1  # its own comment was found: memory works
    assert fake.comments[7][0]["body"] == f"{marker}\nanother workflow's comment"
    assert len(fake.comments[7]) == 2  # one comment of its own, not one per run
    never_success(fake)


# --- class 7: the fresh label was not bound to the head it was applied on ------------


@pytest.mark.parametrize("seen", ["a" * 40, "b" * 40])
@pytest.mark.parametrize("permission", ["write", "admin"])
def test_a_fresh_label_on_another_head_asks_nothing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, seen: str, permission: str
) -> None:
    fake = fake_github
    setup_pull(fake)
    sim = sim_factory(fail_then_pass())
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1  # HEAD rejected
    fake.permissions["maintainer"] = permission
    # the writer labelled the head they saw; the author force-pushed HEAD back before the run
    payload = pull_request_event(
        "labeled", repository=REPO, number=7, head_sha=seen, base_sha=BASE,
        label="review-gate:fresh", sender="maintainer",
    )  # fmt: skip
    again = run_gate(tmp_path, fake, sim, payload)
    assert sim.count == 1
    assert "apply it again" in again.summary
    never_success(fake)


# --- class 8: the history was looked up among the first 1,000 comments only ----------


@pytest.mark.parametrize("spam", [1000, 1050])
def test_the_gates_comment_behind_a_thousand_comments_is_found(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, spam: int
) -> None:
    fake = fake_github
    setup_pull(fake)
    for i in range(spam):
        fake.add_comment(7, f"spam {i}", login="mallory")
    sim = sim_factory(fail_then_pass())
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    run_gate(tmp_path, fake, sim, pr_payload("reopened"))
    assert sim.count == 1
    assert len(fake.comments[7]) == spam + 1  # one gate comment, found again
    never_success(fake)


# --- class 10: a sibling pull request into a weaker base -----------------------------

OTHER_BASE = "4" * 40


@pytest.mark.parametrize("weaker", [None, "min_confidence: 0.1\n", "policy_version: 'lax'\n"])
@pytest.mark.parametrize("first", [7, 8])
def test_a_sibling_into_a_weaker_base_never_satisfies_mains_check(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, weaker: str | None, first: int
) -> None:
    fake = fake_github
    setup_pull(fake, config="policy_version: 'strict'\n")
    fake.add_pull(8, head_sha=HEAD, base_sha=OTHER_BASE, diff=DIFF, base_ref="staging")
    if weaker is not None:
        fake.set_file(OTHER_BASE, CONFIG_PATH, weaker)
    # the reviewer rejects under main's policy and passes under any other
    sim = sim_factory(policy_responder())
    order = [7, 8] if first == 7 else [8, 7]
    for number in order:
        base = BASE if number == 7 else OTHER_BASE
        payload = pull_request_event(
            "opened", repository=REPO, number=number, head_sha=HEAD, base_sha=base
        )
        run_gate(tmp_path, fake, sim, payload)
    never_success(fake)
    assert any("#7 into main" in s["description"] or "#8" in s["description"]
               for s in fake.status_list(HEAD))  # fmt: skip


def test_a_sibling_with_the_same_question_does_not_block(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim
) -> None:
    fake = fake_github
    setup_pull(fake)
    fake.add_pull(8, head_sha=HEAD, base_sha=BASE, diff=DIFF)  # same base, same config
    sim = sim_factory(scripted(["pass"]))
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 0
    assert fake.states(HEAD)[-1] == "success"


def policy_responder() -> Callable[[dict[str, Any]], str]:
    from gate.lab.sim import extract_prompt
    from gate.review.prompt import binding_in
    from tests.integration.action.test_run_fake_github import verdict_text

    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt("openai", request)[1])
        assert binding is not None
        return verdict_text(request, "fail" if binding.policy_version == "strict" else "pass")

    return respond


# --- class 13: a writer's override was undone by the next non-push event -------------


@pytest.mark.parametrize("event", ["reopened", "labeled", "ready_for_review"])
def test_an_override_stays_in_force_for_its_head(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, event: str
) -> None:
    fake = fake_github
    setup_pull(fake, labels=("review-gate:override",))
    fake.permissions["maintainer"] = "write"
    sim = sim_factory(scripted(["fail"]))
    labelled = pr_payload("labeled", label="review-gate:override", sender="maintainer")
    assert run_gate(tmp_path, fake, sim, labelled).code == 0
    payload = pr_payload(event, label="docs") if event == "labeled" else pr_payload(event)
    again = run_gate(tmp_path, fake, sim, payload)
    assert again.code == 0, again.stdout
    assert sim.count == 0
    assert fake.states(HEAD)[-1] == "success"
