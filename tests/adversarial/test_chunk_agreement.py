"""Class: ``agreement: k`` dropped when a pull request is reviewed in chunks.

Cause: ``agreement: k`` asks the reviewer k times and passes only on k passes (a
disagreement is ``needs_human``, ``unstable``), so one lucky answer cannot pass a change.
``review_diff`` honoured it for a diff that fits one request, but a diff over one
chunk's budget went to ``gate.review.chunked.run_chunks``, which asked each chunk once: a pull
request made large enough to be chunked (one big generated file) got one roll per chunk
where the configuration asked for k, and an unstable reviewer's first pass stood.
``redecide`` (``verify --from-certificate``) likewise read one envelope per chunk.

Fix (``gate/review/chunked.py``): each chunk is asked k times, every answer decided against the
chunk's own binding and the k decisions aggregated by ``gate.decide.agreement.aggregate`` (the
same rule as for a whole diff) before the chunk table; each answer is in the
certificate's chunk record, and ``redecide`` decides every recorded answer. The asking
stops at the answer that decides a block (issue 33): the deviating answer is the last asked.

Variants: for k in (2, 3), every (chunk, answer number) that deviates, and each way of
deviating (a ``fail``, a pass bound to another digest, a pass below min_confidence);
none may pass, live (through the simulator) or re-decided from the record.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import Binding, State
from gate.lab.demo import PASS_REASONS, answer, request_text, verdict_block
from gate.lab.sim import ReviewerSimulator
from gate.review.chunked import redecide
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from gate.review.scope import select_diff
from tests.adversarial.test_chunk_binding import _diff

DIFF = _diff(3)
MAX_CHUNK = 1024
DEVIATIONS = ("fail", "unbound", "low_confidence")


class Responder:
    """Answers pass, except answer ``number`` (1-based) to the ``chunk``-th digest seen."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset(None, 0, "")

    def reset(self, chunk: str | None, number: int, how: str) -> None:
        self.target, self.number, self.how = chunk, number, how
        self.asked: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> str:
        binding = binding_in(request_text(body))
        assert binding is not None
        with self.lock:
            count = self.asked[binding.diff_sha] = self.asked.get(binding.diff_sha, 0) + 1
        if binding.diff_sha != self.target or count != self.number:
            return answer("pass", binding)
        if self.how == "fail":
            return answer("fail", binding)
        if self.how == "unbound":
            return answer("pass", Binding("0" * 64, binding.policy_version))
        return verdict_block(binding, "pass", PASS_REASONS, 0.1)  # below min_confidence


RESPOND = Responder()


@pytest.fixture(scope="module")
def sim() -> Iterator[ReviewerSimulator]:
    server = ReviewerSimulator("openai", RESPOND)
    server.start()
    yield server
    server.stop()


def _review(sim: ReviewerSimulator, k: int) -> tuple[Any, Config]:
    reviewer = ReviewerConfig(provider="openai", model="sim-model", base_url=sim.base_url)
    config = Config(reviewer=reviewer, max_chunk_bytes=MAX_CHUNK, concurrency=3, agreement=k)
    selected = select_diff(DIFF, config)
    result = review_diff(
        selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
    )
    return result, config


VARIANTS = [
    (k, chunk, number, how)
    for k in (2, 3)
    for chunk in range(3)
    for number in range(1, k + 1)
    for how in DEVIATIONS
]


@pytest.mark.parametrize("k", [2, 3])
def test_k_passes_per_chunk_pass(sim: ReviewerSimulator, k: int) -> None:
    RESPOND.reset(None, 0, "")
    result, _ = _review(sim, k)
    assert len(result.chunks) == 3
    assert result.decision.state is State.PASS
    assert sorted(RESPOND.asked.values()) == [k, k, k]


@pytest.mark.parametrize(("k", "chunk", "number", "how"), VARIANTS)
def test_one_deviating_answer_of_k_never_passes(
    sim: ReviewerSimulator, k: int, chunk: int, number: int, how: str
) -> None:
    RESPOND.reset(None, 0, "")
    probe, config = _review(sim, k)
    target = probe.chunks[chunk].chunk.sha
    RESPOND.reset(target, number, how)
    result, config = _review(sim, k)
    assert RESPOND.asked[target] == number  # the deviating answer ends the asking
    assert result.decision.state is not State.PASS, (k, chunk, number, how)
    assert result.chunks[chunk].state != "pass"
    record = result.extra["chunks"]
    assert result.coverage is not None
    again = redecide(
        record,
        DIFF,
        policy_version=config.policy_version,
        min_confidence=config.min_confidence,
        coverage=result.coverage.to_json(),
    )
    assert again.state is not State.PASS
