"""Progress on a long review through the action, against the fake GitHub (every request
checked against GitHub's OpenAPI description): while a review in chunks runs, the
``pending`` status says how many chunks are done, updated at most every 10 seconds; the
job's log gets each attempt as it ends, and a heartbeat while the reviewer is silent."""

from __future__ import annotations

import itertools
import re

import pytest

from gate.action.github.mark import plain
from gate.action.progress import INTERVAL
from gate.lab.sim import SimResponse
from gate.reviewers import heartbeat
from tests.adversarial.test_cost_every_answer import _diff
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory
CHUNKED = "max_chunk_bytes: 2048\nconcurrency: 1\n"


@pytest.mark.parametrize("step", [INTERVAL + 1, INTERVAL / 4])
def test_the_pending_status_counts_the_chunks_done(tmp_path, fake, sim_factory, step) -> None:
    setup_pull(fake, diff=_diff(3), config=CHUNKED)
    sim = sim_factory()
    ticks = itertools.count(0.0, step)  # a clock that moves `step` seconds per reading
    result = run_gate(tmp_path, fake, sim, pr_payload(), clock=lambda: next(ticks))
    assert result.code == 0, result.stdout
    chunks = len(result.certificate["context"]["chunks"]["manifest"]["chunks"])
    assert chunks > 1
    descriptions = [plain(s["description"]) for s in fake.status_list(HEAD)]
    progress = [d for d in descriptions if d.startswith("pending: reviewing: ")]
    if step > INTERVAL:  # every attempt is more than 10 s after the last update
        assert progress == [
            f"pending: reviewing: {k}/{chunks} chunks" for k in range(1, chunks + 1)
        ]
    else:  # never more often than every 10 s
        assert len(progress) <= (chunks * step) // INTERVAL
    assert descriptions[0].startswith("pending")
    assert fake.states(HEAD)[-1] == "success"


# --- the log: each attempt as it ends, and a heartbeat while the reviewer is silent ------


@pytest.fixture
def quick_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heartbeat of the action's log, shortened from 15 s (gate.reviewers.heartbeat)."""
    monkeypatch.setattr(heartbeat, "INTERVAL", 0.2)
    monkeypatch.setattr(heartbeat, "TICK", 0.05)


def test_the_log_says_a_heartbeat_while_the_reviewer_is_silent_and_each_attempt(
    tmp_path, fake, sim_factory, quick_heartbeat
) -> None:
    setup_pull(fake, config="policy_version: '7'\n")
    # the answer's first 300 bytes, then a second of silence, then the rest
    sim = sim_factory(script=(SimResponse(split_at=(300,), pause=1.0, pause_from=1),))
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"attempts": "2"})
    assert result.code == 0, result.stdout
    lines = result.stdout.splitlines()
    beats = [line for line in lines if line.startswith("waiting for the reviewer: ")]
    assert beats, result.stdout
    for beat in beats:
        assert re.fullmatch(r"waiting for the reviewer: \d+ s, [\d,]+ bytes so far", beat), beat
    attempts = [line for line in lines if re.match(r"attempt \d+/2 ", line)]
    assert len(attempts) == 1, result.stdout
    assert re.match(r"attempt 1/2 openai HTTP 200: complete, \d+ bytes in ", attempts[0])
    # in order: the estimate, the silence, the attempt, then the decision's own lines
    assert lines.index(beats[0]) < lines.index(attempts[0])
    assert fake.states(HEAD) == ["pending", "success"]


def test_a_quick_answer_gets_no_heartbeat(tmp_path, fake, sim_factory, quick_heartbeat) -> None:
    setup_pull(fake, config="policy_version: '7'\n")
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert result.code == 0, result.stdout
    assert "waiting for the reviewer" not in result.stdout
    assert re.search(r"^attempt 1/1 openai HTTP 200: complete", result.stdout, re.MULTILINE)


def test_a_review_in_chunks_logs_each_chunks_attempts(tmp_path, fake, sim_factory) -> None:
    setup_pull(fake, diff=_diff(3), config=CHUNKED)
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert result.code == 0, result.stdout
    chunks = len(result.certificate["context"]["chunks"]["manifest"]["chunks"])
    logged = re.findall(r"^chunk (\d+)/(\d+): attempt 1/1 openai", result.stdout, re.MULTILINE)
    assert sorted(int(k) for k, _ in logged) == list(range(1, chunks + 1))
    assert {int(n) for _, n in logged} == {chunks}
