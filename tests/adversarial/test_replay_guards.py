"""Class: replay spends what the review refused (issue 18, finding 12).

``replay_one`` asked the reviewer with no cost guard: a record the review refused as
``over_budget`` was reviewed at full price, and any PR author could fill the nightly job
with large paid reviews. A replay now applies the review's own guards before anything is
spent. Each variant (diff size, agreement, attempts, chunking, a budget below the
estimate) must come back without a single request; and a record with no verdict to
compare is never asked again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace

import pytest

from gate.config.model import Config, ModelPrice, ReviewerConfig
from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator
from gate.memory import replay as core
from gate.review.cost import estimate
from gate.review.prompt import prompt_sha256
from gate.review.scope import select_diff
from tests.integration.test_chunked_review import big_diff


def _recorded(data: bytes, config: Config, verdict: str | None, state: str) -> core.Recorded:
    return core.Recorded(
        name="#7", diff_sha=hashlib.sha256(data).hexdigest(), policy_version=config.policy_version,
        provider="openai", model="sim-model", base_url=None,
        prompt_sha=prompt_sha256(data, config), verdict=verdict, state=state, degraded=None,
    )  # fmt: skip


@pytest.mark.parametrize("files", [1, 5, 12])
@pytest.mark.parametrize("agreement", [1, 3])
@pytest.mark.parametrize("attempts", [1, 3])
@pytest.mark.parametrize("share", [0.05, 0.5, 0.99])
def test_a_replay_over_max_cost_asks_nothing(
    sim_factory: Callable[..., ReviewerSimulator],
    files: int,
    agreement: int,
    attempts: int,
    share: float,
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    reviewer = ReviewerConfig(
        provider="openai", model="sim-model", base_url=sim.base_url, attempts=attempts,
        max_tokens=1000,
    )  # fmt: skip
    base = Config(
        reviewer=reviewer, max_chunk_bytes=2048, agreement=agreement,
        pricing=(ModelPrice("sim-model", 3.0, 15.0),),
    )  # fmt: skip
    data = select_diff(big_diff(files), base).data
    _tokens_in, _tokens_out, full = estimate(data, base)
    assert full is not None
    config = replace(base, max_cost=full * share)  # a budget the review would refuse
    row = core.replay_one(_recorded(data, config, "pass", "pass"), data, config, api_key="k")
    assert sim.count == 0, "a replay over the budget must not ask"
    assert row.outcome is core.Outcome.UNREPLAYABLE
    assert "max_cost" in row.note


@pytest.mark.parametrize(
    "state", ["needs_human", "incomplete", "skipped"]
)  # over_budget, too_large, unstable, malformed, draft...: nothing to compare
def test_a_record_without_a_verdict_is_not_asked_again(
    sim_factory: Callable[..., ReviewerSimulator], state: str
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    reviewer = ReviewerConfig(provider="openai", model="sim-model", base_url=sim.base_url)
    config = Config(reviewer=reviewer)
    data = select_diff(big_diff(1), config).data
    row = core.replay_one(_recorded(data, config, None, state), data, config, api_key="k")
    assert sim.count == 0
    assert row.outcome is core.Outcome.DEGRADED
