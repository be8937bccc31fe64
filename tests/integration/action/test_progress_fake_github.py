"""Progress on a long review through the action, against the fake GitHub (every request
checked against GitHub's OpenAPI description): while a review in chunks runs, the
``pending`` status says how many chunks are done, updated at most every 10 seconds."""

from __future__ import annotations

import itertools

import pytest

from gate.action.progress import INTERVAL
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
    descriptions = [s["description"] for s in fake.status_list(HEAD)]
    progress = [d for d in descriptions if d.startswith("pending: reviewing: ")]
    if step > INTERVAL:  # every attempt is more than 10 s after the last update
        assert progress == [
            f"pending: reviewing: {k}/{chunks} chunks" for k in range(1, chunks + 1)
        ]
    else:  # never more often than every 10 s
        assert len(progress) <= (chunks * step) // INTERVAL
    assert descriptions[0].startswith("pending")
    assert fake.states(HEAD)[-1] == "success"
