"""Class: a run that stops at a guard drops what the gate's comment carried.

Issue 18: every path that writes the comment carries forward what it read. The history
block was fixed for that (the records are read before the first guard); the carry block
of incremental review was not: it was read only by the memory guard, so a run stopped
earlier (a draft, an ``.apply/incomplete`` marker, a config or key error) rewrote the
comment without it, and the next push sent every chunk again. Safe, but a PR author could
make every push of a large pull request cost the whole review, and a transient guard did.
The fix lives where the comment is written (:func:`gate.action.history.carry_block`).

Generated over the guard that stops the run and how many times it does; every variant
but ``bad_config`` fails on main 482136c (the push after the guard sends every chunk);
``bad_config`` is kept as a regression check (that run leaves the comment as it is).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.action import carry
from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_incremental_fake_github import first_run, pushed, reviews
from tests.integration.action.test_run_chunked import CONFIG
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    NEW_HEAD,
    REPO,
    run_gate,
)

Fake = Callable[[FakeGitHub], None]


def _draft(fake: FakeGitHub) -> None:
    with fake.lock:
        fake.pulls[7]["draft"] = True


def _ready(fake: FakeGitHub) -> None:
    with fake.lock:
        fake.pulls[7]["draft"] = False


def _marker(fake: FakeGitHub) -> None:
    fake.set_file(NEW_HEAD, ".apply/incomplete", "x")


def _unmarker(fake: FakeGitHub) -> None:
    with fake.lock:
        fake.contents.get(NEW_HEAD, {}).pop(".apply/incomplete", None)


def _bad_config(fake: FakeGitHub) -> None:
    fake.set_file(BASE, CONFIG_PATH, CONFIG + "min_confidence: [\n")


def _good_config(fake: FakeGitHub) -> None:
    fake.set_file(BASE, CONFIG_PATH, CONFIG)


def _nothing(fake: FakeGitHub) -> None:
    return None


GUARDS: dict[str, tuple[Fake, Fake, dict[str, str]]] = {
    "draft": (_draft, _ready, {}),
    "apply_marker": (_marker, _unmarker, {}),
    "bad_config": (_bad_config, _good_config, {}),
    "missing_key": (_nothing, _nothing, {"api-key": "", "base-url": ""}),
}


def _event(action: str, **kw: Any) -> dict[str, Any]:
    return pull_request_event(
        action, repository=REPO, number=7, head_sha=NEW_HEAD, base_sha=BASE, **kw
    )


@pytest.mark.parametrize("guard", sorted(GUARDS))
@pytest.mark.parametrize("repeat", [1, 2])
def test_a_run_stopped_by_a_guard_carries_the_chunk_answers_forward(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Callable[..., ReviewerSimulator],
    guard: str,
    repeat: int,
) -> None:
    fake = fake_github
    sim = sim_factory(ScriptedModel("pass"))
    total = len(reviews(first_run(tmp_path, fake, sim)))
    fake.move_head(7, NEW_HEAD)
    fake.add_compare(BASE, NEW_HEAD, pushed())
    enter, leave, inputs = GUARDS[guard]
    for _ in range(repeat):
        enter(fake)
        stopped = run_gate(tmp_path, fake, sim, _event("synchronize"), inputs=inputs)
        assert stopped.outputs.get("state") != "pass", stopped.stdout
        body = fake.comments[7][0]["body"]
        assert len(carry.read(body)) == total, "the guard's run dropped the carry block"
        leave(fake)
    mark = sim.count
    again = run_gate(tmp_path, fake, sim, _event("synchronize"))
    assert again.code == 0, again.stdout
    assert 1 <= sim.count - mark <= 2, "a push after the guard sent every chunk again"
