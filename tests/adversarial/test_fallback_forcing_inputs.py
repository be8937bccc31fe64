"""Class: a workflow input that hands the review to a fallback reviewer.

On ``pull_request`` every ``with:`` input is the author's (issue 20). ``timeout`` and
``attempts`` were classed as unable to lower the bar ("a deadline can only end a review
early, which blocks"), but they apply to the primary reviewer only: with ``fallbacks:``
in the base config, ``timeout: 0.5`` makes the primary time out, an ``unavailable``
end, and the next reviewer (with its own settings) is asked and decides. The author
picks who judges, which is what re-pinning ``model`` or ``provider`` is refused for. The
fix lives in the classification (:mod:`gate.action.bar`): both lower the bar when the
base config names fallbacks (:data:`gate.action.bar.ONLY_WITH_FALLBACKS`); without
one a reviewer that stops early only blocks, and the inputs still apply.

Variants: each input, values below, equal to and above the base's, with and without a
fallback, on each event; refused exactly when lower, with a fallback, on an event whose
workflow is the pull request's, and not listed in ``inputs_may_lower``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gate.action import bar
from gate.config.inputs import apply_inputs
from gate.config.model import Config, ReviewerConfig, default_config
from gate.errors import ConfigError

BASE_VALUES = {"timeout": 120.0, "attempts": 3}
EVENTS = ["pull_request", "merge_group", "pull_request_target", "workflow_dispatch"]


def _base(fallback: bool, allowed: bool, name: str) -> Config:
    config = default_config()
    reviewer = replace(config.reviewer, model="strong", deadline=120.0, attempts=3)
    config = replace(config, reviewer=reviewer)
    if fallback:
        config = replace(config, fallbacks=(ReviewerConfig(provider="anthropic", model="weak"),))
    if allowed:
        config = replace(config, inputs_may_lower=(name,))
    return config


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("allowed", [False, True])
@pytest.mark.parametrize("fallback", [False, True])
@pytest.mark.parametrize("factor", [0.01, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("name", sorted(BASE_VALUES))
def test_an_input_that_hands_the_review_to_a_fallback_is_refused(
    name: str, factor: float, fallback: bool, allowed: bool, event: str
) -> None:
    base = _base(fallback, allowed, name)
    value = BASE_VALUES[name] * factor
    given = {name: str(max(1, int(value))) if name == "attempts" else f"{value:g}"}
    merged = apply_inputs(base, given)
    lower = (merged.reviewer.attempts < 3) if name == "attempts" else factor < 1
    expect = lower and fallback and not allowed and event in bar.UNTRUSTED_WORKFLOW_EVENTS
    if expect:
        with pytest.raises(ConfigError) as err:
            bar.check(event, base, merged, given)
        assert name in err.value.message
        assert "fallback" in err.value.message
    else:
        bar.check(event, base, merged, given)
