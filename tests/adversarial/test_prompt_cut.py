"""Class: a server that cut the prompt, then answered honestly about what it saw.

Cause: the gate proved the answer whole, never the question. Self-hosted servers cut
prompts silently (Ollama keeps the last ``num_ctx`` tokens, 2,048 by default; a chat
template can drop the system message); an honest model that saw half a diff answers a
bound, confident ``pass`` about that half.

Fix, two pieces of evidence: :mod:`gate.reviewers.prompt_read`: where the server reports
the prompt tokens it read, fewer than one per 8 bytes of the prompt is ``prompt_cut`` (not
sealed, never retried, no fallback asked); and :mod:`gate.decide.readback`: the verdict
repeats a read word from each part of the prompt (the system message, the head, the middle
of the diff, the end), and a verdict that does not is ``prompt_unread`` (it stands like a
chosen end: not retried, no fallback asked), whether or not the server reports usage.

Variants (Hypothesis, over real sockets against the reviewer simulator's
:class:`~gate.lab.sim.PromptCut`): the server drops the head, the middle or the tail of the
user message, or the system message, and answers ``pass`` bound with what it saw (or with
the binding a grammar writes in), repeating the read words it saw, with and without usage:
never a pass, one attempt, no fallback asked. The same servers given the whole prompt: a
pass. (Without usage, a region dropped strictly between two read words is not seen:
docs/reviewers.md says so.) Checked failing before the read words: every no-usage variant
passed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import State
from gate.decide.readback import PART_NAMES
from gate.lab.sim import MODEL, PromptCut, ReviewerSimulator, SimResponse, extract_prompt
from gate.review.pipeline import review_diff


def _diff(lines: int) -> bytes:
    body = "".join(f"+value_{n} = compute({n})  # a line of the change\n" for n in range(lines))
    return (
        f"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -0,0 +1,{lines} @@\n{body}"
    ).encode()


def _review(server: PromptCut, diff: bytes) -> tuple[Any, int, int]:
    with (
        ReviewerSimulator("openai", chooser=server) as primary,
        ReviewerSimulator("openai", chooser=PromptCut()) as fallback,
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
    kept=st.floats(min_value=0.05, max_value=0.3),
    lines=st.integers(min_value=200, max_value=600),
)
def test_a_cut_prompt_is_never_a_pass(where: str, kept: float, lines: int) -> None:
    """Under half the prompt's bytes reached the model (the system message and what was
    kept of the user message), and the server says so: ``prompt_cut`` before any verdict."""
    result, asked, fallback_asked = _review(PromptCut(where, kept), _diff(lines))
    assert result.decision.state is not State.PASS, result.decision
    assert result.decision.reason == "prompt_cut", result.decision
    assert asked == 1, "a cut prompt is cut again: never retried"
    assert fallback_asked == 0, "the diff's size chose this end: no fallback"
    assert "num_ctx" in result.decision.detail or "num_ctx" in result.attempts[-1].detail


#: what a cut the usage does not show is decided as: the read words name it; with the
#: binding lines gone and no grammar to write them in, the model cannot bind its answer
UNSEEN = {"prompt_unread", "diff_sha_mismatch", "policy_version_mismatch"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    where=st.sampled_from(["head", "middle", "tail", "system"]),
    kept=st.floats(min_value=0.05, max_value=0.9),
    lines=st.integers(min_value=50, max_value=600),
    usage=st.booleans(),
    grammar=st.booleans(),
)
def test_a_cut_the_count_does_not_show_is_never_a_pass(
    where: str, kept: float, lines: int, usage: bool, grammar: bool
) -> None:
    """No usage, or a cut too small for the count (over half kept, or the system message
    alone): the read words catch it."""
    kept = 1.0 if where == "system" else kept
    server = PromptCut(where, kept, usage=usage, grammar=grammar)
    result, asked, fallback_asked = _review(server, _diff(lines))
    decision = result.decision
    assert decision.state is not State.PASS, decision
    assert decision.reason in UNSEEN | {"prompt_cut"}, decision
    if not usage or kept > 0.5:
        assert decision.reason in UNSEEN, decision
    if grammar or where == "system":  # bound all the same: the read words name the cut
        assert decision.reason in {"prompt_unread", "prompt_cut"}, decision
    if decision.reason == "prompt_unread":
        named = decision.detail.split(":")[0]
        assert PART_NAMES[where] in named, decision.detail
        assert "num_ctx" in decision.detail
        assert "max_chunk_bytes" in decision.detail
    assert asked == 1, "a cut prompt is cut again: never retried"
    assert fallback_asked == 0, "the diff's size chose this end: no fallback"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.integers(min_value=1, max_value=600), usage=st.booleans(), grammar=st.booleans())
def test_the_same_server_with_the_whole_prompt_passes(
    lines: int, usage: bool, grammar: bool
) -> None:
    result, asked, _ = _review(PromptCut(usage=usage, grammar=grammar), _diff(lines))
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
    return replace(PromptCut()(body), prompt_tokens=borders * 5 + rest // 4)


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
