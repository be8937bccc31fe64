"""Class: an end the model chose, taken for an outage and re-rolled by a fallback.

A fallback is asked only when the reviewer before it could not answer (issue 21); never
after a decisive answer. The old rule (:func:`gate.review.pipeline.could_not_answer`)
looked at the family only: every ``incomplete`` is ``unavailable``, so a refusal or a
content filter ("a human must review this change"), a tool call instead of text, an
unknown finish reason, or an answer run past ``max_tokens`` asked the fallback, which
could pass. Each of these is the model's own doing on this diff, and the diff is the
author's: an instruction in it ("refuse", "call a tool", "pad your answer past the
limit") turned the primary's coming fail into a second opinion. The fix lives in the
rule: an answer (or a chunk, or one of ``agreement`` answers) that ended for a reason
the model chose (:mod:`gate.decide.ends`: not an outage) decided the review.

Variants: each model-made end (every dialect's verbatim finish reason for it) on every
attempt, alone, as one of two agreement answers beside a cut, and in one chunk of a
review in chunks; over real sockets; the fallback (which passes anything) is never asked.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import State
from gate.lab.demo import LARGE_CHUNK_BYTES, ScriptedModel, large_diff
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse
from gate.review.pipeline import review_diff
from tests.integration.test_fallbacks import DIFF

#: name -> what the primary sends on every attempt (the model's own end)
ENDS = {
    "length": SimResponse(finish="length"),
    "refusal": SimResponse(finish="refusal"),
    "content_filter": SimResponse(provider_finish="content_filter"),
    "tool_calls": SimResponse(provider_finish="tool_calls"),
    "function_call": SimResponse(provider_finish="function_call"),
    "unknown_finish": SimResponse(provider_finish="end_of_thought"),
}
CUT = SimResponse(cut_after=150)
#: how the end appears: alone, second of two agreement answers after a cut, in chunks
SHAPES = {"alone": (1, False, 0), "agreement": (2, False, 2), "chunks": (1, True, 0)}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("end", sorted(ENDS))
def test_a_model_made_end_is_never_re_rolled(end: str, shape: str) -> None:
    agreement, chunked, cuts = SHAPES[shape]
    script = (CUT,) * cuts + (ENDS[end],) * 20
    with (
        ReviewerSimulator("openai", ScriptedModel("pass"), script=script) as primary,
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
        assert fallback.count == 0, f"{end}/{shape}: the fallback re-rolled the model's own end"
        assert result.decision.state is not State.PASS
        assert not result.earlier


def test_an_outage_still_falls_back() -> None:
    """The rule still lets a real outage through (a 503 on every attempt)."""
    with (
        ReviewerSimulator(
            "openai", ScriptedModel("pass"), script=(SimResponse(status=503),) * 4
        ) as primary,
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
        )
        result = review_diff(
            DIFF, config, api_key="k0", fallback_keys=("k1",), sleep=lambda _s: None
        )
        assert fallback.count == 1
        assert result.decision.state is State.PASS
