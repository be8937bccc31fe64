"""gate.review.cost: token counts per dialect, priced per million, unknown never read as zero,
and the max_cost estimate made before any request."""

from __future__ import annotations

import pytest

from gate.config.load import parse_config
from gate.config.model import ModelPrice
from gate.decide.attempt import Attempt, EndReason
from gate.decide.decision import State, Status
from gate.review.cost import cost_of, estimate, over_budget, usage_of

DIFF = b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def attempt(number: int = 1, **usage: int) -> Attempt:
    return Attempt(
        number=number,
        provider="openai",
        complete=True,
        reason="",
        detail="",
        end_reason=EndReason.TRAILER,
        usage=usage,
    )


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}, (10, 3)),
        ({"input_tokens": 10, "output_tokens": 3}, (10, 3)),
        (
            {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 3},
            (15, 3),
        ),
        ({"promptTokenCount": 10, "candidatesTokenCount": 3, "thoughtsTokenCount": 2}, (10, 5)),
        ({"promptTokenCount": 10, "totalTokenCount": 10}, (10, None)),
        ({}, (None, None)),
    ],
)
def test_usage_per_dialect(usage, expected):
    assert usage_of(attempt(**usage)) == expected


def config(text: str = ""):
    return parse_config(
        "reviewer:\n  model: m1\n  attempts: 2\n  max_tokens: 1000\n"
        "pricing:\n  m1: {input: 2, output: 10}\n" + text,
        source="t",
    )


def test_cost_per_attempt_and_total():
    spent = cost_of([attempt(1, input_tokens=1000, output_tokens=100)], config())
    assert spent.price == ModelPrice("m1", 2.0, 10.0)
    assert spent.attempts[0].cost == pytest.approx(0.003)
    assert spent.outputs() == {"input-tokens": "1000", "output-tokens": "100", "cost": "0.003000"}
    assert spent.to_json()["attempts"][0]["cost"] == pytest.approx(0.003)


def test_an_attempt_without_counts_makes_the_totals_unknown_not_smaller():
    spent = cost_of([attempt(1), attempt(2, input_tokens=1000, output_tokens=100)], config())
    assert spent.attempts[0].cost is None
    assert spent.attempts[1].cost == pytest.approx(0.003)
    assert spent.outputs() == {"input-tokens": "", "output-tokens": "", "cost": ""}


def test_no_price_for_the_model_is_an_unknown_cost_with_known_tokens():
    cfg = parse_config("reviewer:\n  model: other\n", source="t")
    spent = cost_of([attempt(1, input_tokens=7, output_tokens=2)], cfg)
    assert spent.outputs() == {"input-tokens": "7", "output-tokens": "2", "cost": ""}


def test_the_estimate_bounds_every_attempt_at_full_size():
    tokens_in, tokens_out, cost = estimate(DIFF, config())
    assert tokens_out == 2 * 1000
    assert tokens_in > 2 * len(DIFF)  # the whole prompt, both attempts
    assert cost == pytest.approx((tokens_in * 2 + tokens_out * 10) / 1e6)


def test_max_cost_blocks_before_the_call_when_the_estimate_exceeds_it():
    _in, _out, cost = estimate(DIFF, config())
    assert cost is not None
    assert over_budget(DIFF, config()) is None  # no limit
    assert over_budget(DIFF, config(f"max_cost: {cost * 2}\n")) is None
    decision = over_budget(DIFF, config(f"max_cost: {cost / 2}\n"))
    assert decision is not None
    assert (decision.state, decision.status, decision.reason) == (
        State.NEEDS_HUMAN,
        Status.FAILURE,
        "over_budget",
    )
    assert "exceeds max_cost" in decision.detail


def test_max_cost_without_a_price_is_a_config_error_and_still_blocks_if_built_around():
    """Refused when the config is read (naming the model and the fix); a Config built
    around the check (in code) still never reaches the reviewer unpriced."""
    from dataclasses import replace

    from gate.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        parse_config("reviewer:\n  model: other\nmax_cost: 100\n", source="t")
    assert caught.value.reason == "config_unpriced_max_cost"
    assert caught.value.line == 3
    assert caught.value.key == "max_cost"
    assert "model other" in caught.value.message
    assert "pricing" in caught.value.fix
    cfg = replace(parse_config("reviewer:\n  model: other\n", source="t"), max_cost=100.0)
    decision = over_budget(DIFF, cfg)
    assert decision is not None
    assert decision.reason == "over_budget"
    assert "no price for the model other" in decision.detail


def test_pricing_is_strict():
    from gate.errors import ConfigError

    for bad in ("pricing:\n  m: {input: 1}\n", "pricing:\n  m: {input: -1, output: 1}\n",
                "pricing:\n  m: {input: 1, output: 1, extra: 2}\n", "max_cost: -1\n"):  # fmt: skip
        with pytest.raises(ConfigError):
            parse_config(bad, source="t")


def test_a_usage_count_that_is_no_count_is_unknown() -> None:
    """Provider usage is the provider's text: booleans, negatives, floats and strings are
    not token counts (a negative count would lower the reported cost)."""
    from gate.reviewers.stream import int_fields

    for bad in (-1, -(2**40), True, False, 1.5, "12", None, [3], {"n": 3}):
        assert int_fields({"prompt_tokens": bad}) == {}, bad
    assert int_fields({"prompt_tokens": 0, "completion_tokens": 7}) == {
        "prompt_tokens": 0,
        "completion_tokens": 7,
    }


def test_one_negative_count_makes_the_whole_record_unknown() -> None:
    from gate.reviewers.stream import int_fields

    usage = {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": -50}
    assert int_fields(usage) == {}
