"""Class: budget bound. ``max_cost`` is decided before any request from an estimate, so
the estimate must bound what the review then sends, whatever shape the review takes:
one request or one per chunk (the chunk's diff plus the prompt and the whole file list),
``agreement`` answers each, ``attempts`` tries each. An estimate of one request for a
review in 12 chunks let a review spend 12 times its budget.

Each variant reviews a generated diff against the simulator (every try cut, so every
attempt is spent) and compares what was sent with :func:`gate.review.cost.estimate`: the prompt
bytes of every request (a token covers at least one byte) and ``max_tokens`` per request.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator, SimResponse, extract_prompt
from gate.review.cost import estimate
from gate.review.pipeline import review_diff
from gate.review.scope import select_diff
from tests.integration.test_chunked_review import big_diff


@pytest.mark.parametrize("files", [1, 6, 14])
@pytest.mark.parametrize("agreement", [1, 2])
@pytest.mark.parametrize("attempts", [1, 2])
@pytest.mark.parametrize("cut", [False, True])
def test_the_estimate_bounds_what_the_review_sends(
    sim_factory: Callable[..., ReviewerSimulator],
    files: int,
    agreement: int,
    attempts: int,
    cut: bool,
) -> None:
    # a cut answer is retried: cutting every answer spends every attempt of every chunk
    script = tuple(SimResponse(cut_after=200) for _ in range(200)) if cut else ()
    sim = sim_factory(ScriptedModel("pass"), script)
    reviewer = ReviewerConfig(
        provider="openai", model="sim-model", base_url=sim.base_url, attempts=attempts,
        max_tokens=1000,
    )  # fmt: skip
    config = Config(reviewer=reviewer, max_chunk_bytes=2048, concurrency=2, agreement=agreement)
    selected = select_diff(big_diff(files), config)
    tokens_in, tokens_out, _cost = estimate(selected.data, config)
    review_diff(
        selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
    )
    sent = 0
    for body in sim.requests:
        system, user = extract_prompt("openai", body)
        sent += len(system.encode()) + len(user.encode())
        assert body.get("max_tokens", body.get("max_completion_tokens")) == 1000
    assert sim.count >= 1
    assert sent <= tokens_in, (sim.count, sent, tokens_in)
    assert sim.count * 1000 <= tokens_out, (sim.count, tokens_out)
