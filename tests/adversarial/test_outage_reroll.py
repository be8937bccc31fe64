"""Class: an outage used as a re-roll. A fallback reviewer may be asked only when the one
before could not answer at all; if any answer (or chunk) of it decided anything, a fail, a
low-confidence or malformed or unbound answer, an unstable set, then that decision is the
review's, even when another answer or chunk was cut and the aggregate reads
``incomplete``. Each variant, over real sockets, checks that the fallback (which would
pass anything) is never asked and the primary's block stands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import State
from gate.lab.demo import LARGE_CHUNK_BYTES, ScriptedModel, binding_in, large_diff, request_text
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse
from gate.review.pipeline import review_diff
from tests.integration.test_fallbacks import DIFF
from tests.verdicts import fenced_verdict

CUT = SimResponse(cut_after=150)


def bound(verdict: str, confidence: float, *, sha: str | None = None) -> Callable[..., str]:
    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(request_text(request))
        assert binding is not None
        return fenced_verdict(
            binding,
            verdict=verdict,
            reasons=["a reason"],
            confidence=confidence,
            diff_sha=sha or binding.diff_sha,
        )

    return respond


#: name -> (primary responder, primary script, agreement, chunked, the state that stands)
VARIANTS: dict[str, tuple[Callable[..., str], tuple[SimResponse, ...], int, bool, State]] = {
    "fail": (ScriptedModel("fail"), (), 1, False, State.FAIL),
    "low_confidence": (bound("pass", 0.3), (), 1, False, State.NEEDS_HUMAN),
    "malformed": (ScriptedModel("echo"), (), 1, False, State.NEEDS_HUMAN),
    "unbound": (bound("pass", 0.95, sha="0" * 64), (), 1, False, State.NEEDS_HUMAN),
    "unstable": (ScriptedModel("pass"), (), 2, False, State.PASS),  # replaced below
    "cut_then_fail": (ScriptedModel("fail"), (CUT, CUT), 2, False, State.FAIL),
    # the aggregate of (cut, malformed) is the malformed answer's: an outage beside an
    # answer never hides it (gate.decide.agreement, issue 31)
    "cut_then_malformed": (ScriptedModel("echo"), (CUT, CUT), 2, False, State.NEEDS_HUMAN),
    "cut_then_low_confidence": (bound("pass", 0.2), (CUT, CUT), 2, False, State.NEEDS_HUMAN),
    # in chunks: chunk 1 cut on both attempts, the others malformed: the malformed decide
    "chunk_cut_then_malformed": (ScriptedModel("echo"), (CUT, CUT), 1, True, State.NEEDS_HUMAN),
    "chunk_cut_then_fail": (ScriptedModel("fail"), (CUT, CUT), 1, True, State.FAIL),
}


class Alternating:
    """pass, then fail, then pass...: two answers that disagree (an unstable set)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: dict[str, Any]) -> str:
        self.calls += 1
        return ScriptedModel("pass" if self.calls % 2 else "fail")(request)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_decisive_answer_is_never_re_rolled_by_a_fallback(name: str) -> None:
    responder, script, agreement, chunked, expected = VARIANTS[name]
    if name == "unstable":
        responder, expected = Alternating(), State.NEEDS_HUMAN
    with (
        ReviewerSimulator("openai", responder, script=script) as primary,
        ReviewerSimulator("anthropic", ScriptedModel("pass")) as fallback,
    ):
        config = Config(
            reviewer=ReviewerConfig(
                provider="openai", model=MODEL, base_url=primary.base_url, attempts=2
            ),
            fallbacks=(
                ReviewerConfig(
                    provider="anthropic", model=MODEL, base_url=fallback.base_url, attempts=2
                ),
            ),
            agreement=agreement,
        )
        diff = DIFF
        if chunked:
            config = replace(config, max_chunk_bytes=LARGE_CHUNK_BYTES, concurrency=1)
            diff = large_diff()
        result = review_diff(
            diff, config, api_key="k0", fallback_keys=("k1",), sleep=lambda _s: None
        )
        assert bool(result.chunks) is chunked
        assert fallback.count == 0, f"{name}: the fallback re-rolled a decided review"
        assert result.decision.state is expected, (name, result.decision)
        assert result.decision.state is not State.PASS
        assert not result.earlier


@pytest.mark.parametrize(
    ("failed_by", "asked", "fallbacks"),
    [
        ("fallback-model", "primary-model", ("fallback-model",)),  # the fallback failed it
        ("primary-model", "primary-model", ("fallback-model",)),
        ("second", "primary-model", ("first", "second")),
    ],
)
def test_a_fail_by_any_configured_reviewer_stands_for_all(
    failed_by: str, asked: str, fallbacks: tuple[str, ...]
) -> None:
    """A re-push after a fallback's fail: the question asks the primary's model, and the
    fallback's fail still stands (an outage cannot pick which reviewer judges)."""
    from gate.memory import Question, recall
    from gate.memory.question import QuestionKey
    from tests.unit.memory.test_memory import BASE

    key = QuestionKey(
        diff_sha=BASE.diff_sha or "",
        policy_version=BASE.policy_version,
        config_sha=BASE.config_sha or "",
        model=asked,
        prompt_sha=BASE.prompt_sha or "",
        fallback_models=fallbacks,
    )
    question = Question(key, head_sha="9" * 40)
    decision = recall([replace(BASE, model=failed_by)], question, status_confirmed=False)
    assert decision is not None
    assert decision.reason == "fail_stands"
    alone = Question(replace(key, fallback_models=()), head_sha="9" * 40)
    stands_alone = recall([replace(BASE, model=failed_by)], alone, status_confirmed=False)
    assert (stands_alone is not None) is (failed_by == asked)
