"""The gate reads its own evidence by structure, never by wording (issue 31, finding 8).

Class: *a description's words read as a verdict.* A writer's override is posted as
``success``; when the head moved during that run, its description starts ``superseded by
<sha>: overridden by @login``, and the gate told an override from a model's pass by the
description's first words (``overridden by @``): this one read as the model's success and,
being newer, hid the tagged ``failure`` under it. With the comment gone (a writer deleted
it, or ``sticky_comment: false``) and the label off, a later run on that head found no
block, asked the rejected diff again, and its lucky pass was posted ``success``.

The fix: every status and check run the gate posts carries its kind (``override``,
``pass``, ``fail``, ...) and question tag in a field the gate parses
(:mod:`gate.action.github.mark`); an override is never a model's verdict whatever its words.

The variants generate the report channel (statuses or check runs), how the memory is lost,
and the event that decides the head again; each must leave the rejected diff asked once
and the head never ``success`` without the label.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.lab.sim import ReviewerSimulator
from tests.adversarial.test_deleted_comment import BAD, BAD_SHA, Truth, decided, diff_for
from tests.adversarial.test_state_machine import reset
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import BASE, CONFIG_PATH, REPO, run_gate

Sim = Callable[..., ReviewerSimulator]
OVERRIDE = "review-gate:override"
H1, H2 = "a1" * 20, "b2" * 20


def mover(fake: FakeGitHub) -> Callable[[GitHubSettings], GitHubClient]:
    """A client whose permission check (the override guard's) is followed by a push: the
    head moves to H2 while the override run is under way, as a push racing the label does."""

    class Racing(GitHubClient):
        def permission(self, login: str) -> str:
            found = super().permission(login)
            fake.move_head(7, H2)
            return found

    return Racing


@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    report=st.sampled_from(["status", "check-run", "both"]),
    memory=st.sampled_from(["deleted", "sticky_off"]),
    later=st.sampled_from(["reopened", "force_back", "unlabeled"]),
)
def test_an_override_whose_head_moved_does_not_hide_a_failure(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Sim,
    report: str,
    memory: str,
    later: str,
) -> None:
    fake = reset(fake_github)
    fake.permissions["maintainer"] = "write"
    config = f"report: {report}\n" + ("sticky_comment: false\n" if memory == "sticky_off" else "")
    fake.set_file(BASE, CONFIG_PATH, config)
    truth = Truth()
    sim = sim_factory(truth)
    fake.add_compare(BASE, H1, BAD)
    fake.add_compare(BASE, H2, diff_for("return a * b"))
    fake.add_pull(7, head_sha=H1, base_sha=BASE, diff=BAD)

    run_gate(
        tmp_path,
        fake,
        sim,
        pull_request_event("opened", repository=REPO, number=7, head_sha=H1, base_sha=BASE),
    )
    assert truth.asked[BAD_SHA] == 1
    assert decided(fake, H1, "check-run" if report == "check-run" else "status") == ["failure"]

    # a writer overrides H1 while a push moves the head: the override lands on H1, "superseded"
    fake.pulls[7]["labels"].append({"id": 99, "name": OVERRIDE})
    payload = pull_request_event(
        "labeled", repository=REPO, number=7, head_sha=H1, base_sha=BASE, label=OVERRIDE,
        sender="maintainer",
    )  # fmt: skip
    run_gate(tmp_path, fake, sim, payload, client_factory=mover(fake))
    shown = decided(fake, H1, "check-run" if report == "check-run" else "status")
    assert shown[-1] == "success", shown  # the writer's override, for exactly H1
    if memory == "deleted":
        with fake.lock:
            fake.comments[7] = [
                c for c in fake.comments.get(7, []) if "review-gate:sticky" not in c["body"]
            ]

    # the label comes off, and H1 is decided again without it
    fake.pulls[7]["labels"] = [lb for lb in fake.pulls[7]["labels"] if lb["name"] != OVERRIDE]
    if later == "force_back":
        fake.move_head(7, H1)
        payload = pull_request_event(
            "synchronize", repository=REPO, number=7, head_sha=H1, base_sha=BASE
        )
        payload["before"] = H2
    elif later == "unlabeled":
        fake.move_head(7, H1)
        payload = pull_request_event(
            "unlabeled", repository=REPO, number=7, head_sha=H1, base_sha=BASE, label=OVERRIDE,
            sender="maintainer",
        )  # fmt: skip
    else:
        fake.move_head(7, H1)
        payload = pull_request_event(
            "reopened", repository=REPO, number=7, head_sha=H1, base_sha=BASE
        )
    outcome = run_gate(tmp_path, fake, sim, payload)
    assert truth.asked[BAD_SHA] == 1, f"the rejected diff was asked again: {truth.asked}"
    assert outcome.code != 0, outcome.stdout
    shown = decided(fake, H1, "check-run" if report == "check-run" else "status")
    assert shown[-1] != "success", (shown, fake.status_list(H1))
    assert fake.violations == [], fake.violations
