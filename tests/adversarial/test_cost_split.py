"""Class: budget bound, through a split. ``max_cost`` is decided before any request from
an estimate of every planned request. A chunk the provider says overflows its window is
halved (up to three levels), and each half is a new request with the whole prompt and
file list around it and ``max_tokens`` of answer: requests the estimate never counted.
A pull request whose text tokenizes densely (the estimate assumes 3 bytes a token) makes
every chunk overflow, so a review approved under ``max_cost`` could spend many times it.

Now a chunk is split only while the estimate with its halves added still fits under
``max_cost``; otherwise it stays unsplit and blocks (``context_overflow``: a coverage
block, never a pass). Variants: how many answers overflow, attempts, agreement, files, under a
budget just above the plan's estimate (no room for a half); what was sent must stay
within the estimate that fit under ``max_cost``, and the review must block.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest

from gate.config.model import Config, ModelPrice, ReviewerConfig
from gate.decide.decision import State
from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator, SimResponse, extract_prompt
from gate.review.budget import chunk_setup
from gate.review.cost import estimate, over_budget
from gate.review.pipeline import review_diff
from gate.review.scope import select_diff
from tests.integration.test_chunked_review import big_diff

OVERFLOW = json.dumps({"error": {"message": "too long", "type": "invalid_request_error",
                       "param": "messages", "code": "context_length_exceeded"}})  # fmt: skip
#: one dollar per million tokens each way: a cost is a token count
PRICE = ModelPrice(model="sim-model", input=1.0, output=1.0)


@pytest.mark.parametrize("overflows", [1, 3, 7, 30])
@pytest.mark.parametrize("files", [5, 9])
@pytest.mark.parametrize(("attempts", "agreement"), [(1, 1), (2, 1), (1, 2)])
def test_a_split_never_spends_past_max_cost(
    sim_factory: Callable[..., ReviewerSimulator],
    overflows: int,
    files: int,
    attempts: int,
    agreement: int,
) -> None:
    script = tuple(SimResponse(status=400, error_body=OVERFLOW) for _ in range(overflows))
    sim = sim_factory(ScriptedModel("pass"), script)
    reviewer = ReviewerConfig(
        provider="openai", model="sim-model", base_url=sim.base_url, attempts=attempts,
        max_tokens=1000,
    )  # fmt: skip
    config = Config(
        reviewer=reviewer, max_chunk_bytes=2048, concurrency=1, agreement=agreement,
        pricing=(PRICE,),
    )  # fmt: skip
    selected = select_diff(big_diff(files), config)
    assert chunk_setup(selected.data, config, selected.coverage) is not None  # in chunks
    tokens_in, tokens_out, _cost = estimate(selected.data, config, selected.coverage)
    # a budget the plan fits under, with a little room (less than one more request)
    config = dataclasses.replace(config, max_cost=(tokens_in + tokens_out + 500) / 1_000_000)
    assert over_budget(selected.data, config, selected.coverage) is None
    result = review_diff(
        selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
    )
    sent = sum(
        len(s.encode()) + len(u.encode())
        for s, u in (extract_prompt("openai", body) for body in sim.requests)
    )
    asked_out = 1000 * sim.count
    assert sent + asked_out <= tokens_in + tokens_out + 500, (sim.count, sent, tokens_in)
    # the overflowing chunk was not split: it blocks, the review never passes without it
    assert result.decision.state is State.NEEDS_HUMAN, result.decision
    assert result.decision.reason == "context_overflow"


def test_a_split_the_budget_allows_still_happens(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    """The control: with room for the halves, an overflowing chunk is split and passes."""
    sim = sim_factory(ScriptedModel("pass"), [SimResponse(status=400, error_body=OVERFLOW)])
    reviewer = ReviewerConfig(
        provider="openai", model="sim-model", base_url=sim.base_url, attempts=1, max_tokens=1000
    )
    config = Config(reviewer=reviewer, max_chunk_bytes=2048, concurrency=1, pricing=(PRICE,))
    selected = select_diff(big_diff(5), config)
    tokens_in, tokens_out, _cost = estimate(selected.data, config, selected.coverage)
    config = dataclasses.replace(config, max_cost=3 * (tokens_in + tokens_out) / 1_000_000)
    result = review_diff(
        selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
    )
    assert result.decision.state is State.PASS, result.decision
    assert any(r.split for r in result.chunks)
