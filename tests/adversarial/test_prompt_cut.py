"""Class: a server that cut the prompt, then answered honestly about what it saw.

Cause: the gate proved the answer whole, never the question. Self-hosted servers cut
prompts silently (Ollama keeps the last ``num_ctx`` tokens, 2,048 by default); an honest
model that saw half a diff answers a bound, confident ``pass`` about that half.

Fix: :mod:`gate.reviewers.prompt_read`: where the server reports the prompt tokens it
read, fewer than one per 8 bytes of the prompt is ``prompt_cut``: the answer is not
sealed, never retried (the same prompt is cut the same way), and the fallback is not
asked (the diff's size against the server's context chose this end).

Variants (Hypothesis, over real sockets against the reviewer simulator): the server
drops the head, a middle part or the tail of the user message (what reaches the model
is under half of the prompt's bytes, as a 2,048-token context makes of a 14,000-token
prompt) and answers ``pass`` bound with what it saw, reporting the tokens it read:
never a pass, ``prompt_cut``, one attempt, no fallback asked. The same server given the
whole prompt: a pass. A server that reports no usage gives no evidence (the echoed
values that would catch it are issue 33's open item; docs/reviewers.md says so).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import Binding, State, binding_in
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse, extract_prompt
from gate.review.pipeline import review_diff


def _diff(lines: int) -> bytes:
    body = "".join(f"+value_{n} = compute({n})  # a line of the change\n" for n in range(lines))
    return (
        f"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -0,0 +1,{lines} @@\n{body}"
    ).encode()


def _answer(binding: Binding | None) -> str:
    obj = {
        "verdict": "pass",
        "reasons": ["the part I was shown is fine"],
        "confidence": 0.95,
        # the model copies what it saw; with the head dropped it saw no binding
        "diff_sha": binding.diff_sha if binding else "0" * 64,
        "policy_version": binding.policy_version if binding else "1",
    }
    return "```json\n" + json.dumps(obj) + "\n```\n"


class CuttingServer:
    """Keeps ``kept`` of the user message (from the ``where`` end or the middle) and
    answers about it, reporting the tokens of what it kept (4 bytes a token)."""

    def __init__(self, where: str, kept: float) -> None:
        self.where, self.kept = where, kept

    def __call__(self, body: dict[str, Any]) -> SimResponse:
        system, user = extract_prompt("openai", body)
        raw = user.encode()
        keep = int(len(raw) * self.kept)
        if self.where == "head":  # the head dropped: the end is kept (Ollama's way)
            seen = raw[len(raw) - keep :]
        elif self.where == "tail":
            seen = raw[:keep]
        elif self.where == "middle":
            seen = raw[: keep // 2] + raw[len(raw) - (keep - keep // 2) :]
        else:
            seen = raw
        text = seen.decode("utf-8", "ignore")
        tokens = max(1, (len(system.encode()) * (self.where == "none") + len(seen)) // 4)
        return SimResponse(content=_answer(binding_in(text)), prompt_tokens=tokens)


def _review(server: CuttingServer, diff: bytes) -> tuple[Any, int, int]:
    with (
        ReviewerSimulator("openai", chooser=server) as primary,
        ReviewerSimulator("openai", chooser=CuttingServer("none", 1.0)) as fallback,
    ):
        config = Config(
            reviewer=ReviewerConfig(
                provider="openai", model=MODEL, base_url=primary.base_url, attempts=3
            ),
            fallbacks=(
                ReviewerConfig(
                    provider="openai", model=MODEL, base_url=fallback.base_url, attempts=1
                ),
            ),
        )
        result = review_diff(diff, config, api_key="k", fallback_keys=("k",), sleep=lambda _: None)
        return result, primary.count, fallback.count


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    where=st.sampled_from(["head", "middle", "tail"]),
    kept=st.floats(min_value=0.05, max_value=0.45),
    lines=st.integers(min_value=50, max_value=600),
)
def test_a_cut_prompt_is_never_a_pass(where: str, kept: float, lines: int) -> None:
    result, asked, fallback_asked = _review(CuttingServer(where, kept), _diff(lines))
    assert result.decision.state is not State.PASS, result.decision
    assert result.decision.reason == "prompt_cut", result.decision
    assert asked == 1, "a cut prompt is cut again: never retried"
    assert fallback_asked == 0, "the diff's size chose this end: no fallback"
    assert "num_ctx" in result.decision.detail or "num_ctx" in result.attempts[-1].detail


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.integers(min_value=1, max_value=600))
def test_the_same_server_with_the_whole_prompt_passes(lines: int) -> None:
    result, asked, _ = _review(CuttingServer("none", 1.0), _diff(lines))
    assert result.decision.state is State.PASS, result.decision
    assert asked == 1


#: a line of a Markdown or text table's border: SmolLM2 reads each as 5 tokens (80 bytes;
#: tests/unit/reviewers/test_prompt_read.py has the measured vectors)
BORDER = "+" + "=" * 78 + "\n"


def _honest_tokens(body: dict[str, Any]) -> SimResponse:
    """The whole prompt read, counted as SmolLM2 counts it: 5 tokens a border line, 4
    bytes a token for the rest."""
    system, user = extract_prompt("openai", body)
    borders = user.count(BORDER)
    rest = len(system.encode()) + len(user.encode()) - borders * len(BORDER)
    return SimResponse(content=_answer(binding_in(user)), prompt_tokens=borders * 5 + rest // 4)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.integers(min_value=100, max_value=600))
def test_an_honest_count_of_a_long_run_is_not_a_cut(lines: int) -> None:
    """A diff of table borders, read whole: fewer tokens than one per 8 bytes, because
    the tokenizer merges runs. The bound counts runs as they tokenize: a pass, not a
    ``prompt_cut`` (one token per 8 bytes called it cut)."""
    body = "".join("+" + BORDER for _ in range(lines))
    diff = (
        f"diff --git a/t.md b/t.md\n--- a/t.md\n+++ b/t.md\n@@ -0,0 +1,{lines} @@\n{body}"
    ).encode()
    with ReviewerSimulator("openai", chooser=_honest_tokens) as sim:
        config = Config(
            reviewer=ReviewerConfig(provider="openai", model=MODEL, base_url=sim.base_url)
        )
        result = review_diff(diff, config, api_key="k", sleep=lambda _: None)
    assert result.decision.state is State.PASS, result.decision
