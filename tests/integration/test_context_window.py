"""``context_window`` through ``review_diff`` against the simulator playing each
self-hosted server over real sockets (issue 33): the server's context is asked once per
review, before any request; the chunks are sized so every prompt surely fits it (one
token a byte, the chat template's 256, ``max_tokens``); a prompt that cannot fit is not
sent and names the setting to raise; a size that cannot be read blocks, never passes.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import Family, State, binding_for
from gate.lab.demo import ScriptedModel, large_diff
from gate.lab.sim import MODEL, ReviewerSimulator, SimServer, extract_prompt
from gate.review.budget import TEMPLATE_TOKENS, chunk_setup, fits_served
from gate.review.pipeline import review_diff
from gate.review.prompt import build_prompt
from gate.review.result import config_sha256

MAX_TOKENS = 1024


def _config(sim: ReviewerSimulator, setting: str | int, **top: object) -> Config:
    reviewer = ReviewerConfig(
        provider="openai",
        model=MODEL,
        base_url=sim.base_url,
        max_tokens=MAX_TOKENS,
        context_window=setting,
        attempts=1,
    )
    return replace(Config(reviewer=reviewer), **top)  # type: ignore[arg-type]


def _prompt_bytes(sim: ReviewerSimulator) -> list[int]:
    sizes = []
    for body in sim.requests:
        system, user = extract_prompt("openai", body)
        sizes.append(len(system.encode()) + len(user.encode()))
    return sizes


@pytest.mark.parametrize("kind", ["llama.cpp", "vllm", "ollama"])
def test_chunks_are_sized_to_the_context_the_server_tells(kind: str) -> None:
    diff = large_diff()
    n_ctx = 12288
    with ReviewerSimulator("openai", ScriptedModel("pass"), server=SimServer(kind, n_ctx)) as sim:
        result = review_diff(diff, _config(sim, "auto"), api_key="k", sleep=lambda _s: None)
        asked = [(r.method, r.path) for r in sim.preflights]
        sizes = _prompt_bytes(sim)
    assert result.decision.state is State.PASS, result.decision
    assert len(result.chunks) > 1
    assert all(size + TEMPLATE_TOKENS + MAX_TOKENS <= n_ctx for size in sizes), sizes
    assert len(asked) == len(set(asked)), "each endpoint asked once per review"
    assert result.certificate["context"]["context_window"]["tokens"] == n_ctx
    assert any(f"{n_ctx:,} tokens" in note for note in result.notes)


def test_the_same_diff_without_the_setting_goes_whole_past_the_context() -> None:
    """What the preflight prevents: with ``off`` the diff goes in one request far larger
    than the server's context (which a real server cuts, or answers empty)."""
    diff = large_diff()
    with ReviewerSimulator(
        "openai", ScriptedModel("pass"), server=SimServer("llama.cpp", 12288)
    ) as sim:
        result = review_diff(diff, _config(sim, "off"), api_key="k", sleep=lambda _s: None)
        sizes = _prompt_bytes(sim)
        assert sim.preflights == []
    assert result.decision.state is State.PASS
    assert len(sizes) == 1
    assert sizes[0] + TEMPLATE_TOKENS + MAX_TOKENS > 12288


@pytest.mark.parametrize("kind", ["llama.cpp", "vllm", "ollama"])
def test_a_context_too_small_for_any_prompt_is_refused_before_the_call(kind: str) -> None:
    with ReviewerSimulator("openai", ScriptedModel("pass"), server=SimServer(kind, 1800)) as sim:
        result = review_diff(large_diff(), _config(sim, kind), api_key="k")
        assert sim.count == 0, "nothing is sent"
    decision = result.decision
    assert decision.state is State.NEEDS_HUMAN
    assert decision.reason == "too_large"
    assert "1,800 tokens" in decision.detail
    assert "--ctx-size" in decision.detail
    assert "num_ctx" in decision.detail


def test_a_whole_prompt_that_cannot_fit_is_not_sent() -> None:
    """A diff under the chunk budget whose prompt is still too long (a long backtick run
    makes both of the prompt's fences as long): refused whole, ``context_overflow``."""
    diff = (
        "diff --git a/t.md b/t.md\n--- a/t.md\n+++ b/t.md\n@@ -0,0 +1 @@\n+" + "`" * 3000 + "\n"
    ).encode()
    with ReviewerSimulator("openai", ScriptedModel("pass")) as sim:
        for window in range(4096, 16384, 64):
            config = _config(sim, window)
            prompt = build_prompt(diff, binding=binding_for(diff, config))
            if chunk_setup(diff, config) is None and not fits_served(prompt.size, config):
                break
        else:
            pytest.fail("no context found where the diff fits a chunk but not its prompt")
        result = review_diff(diff, config, api_key="k")
        assert sim.count == 0
    assert (result.decision.state, result.decision.reason) == (
        State.NEEDS_HUMAN,
        "context_overflow",
    )
    assert f"context of {window:,} tokens" in result.decision.detail
    assert "max_chunk_bytes" in result.decision.detail


def test_auto_with_no_size_goes_on_and_says_so() -> None:
    with ReviewerSimulator(
        "openai", ScriptedModel("pass"), server=SimServer("llama-cpp-python", None)
    ) as sim:
        result = review_diff(large_diff(3), _config(sim, "auto"), api_key="k")
        assert sim.count == 1
    assert result.decision.state is State.PASS
    assert any("tells no context size" in note for note in result.notes)
    assert result.certificate["context"]["context_window"] == {"tokens": None, "source": "none"}


def test_a_size_that_cannot_be_read_blocks_and_a_fallback_is_asked_only_for_an_outage() -> None:
    with (
        ReviewerSimulator(
            "openai", ScriptedModel("pass"), server=SimServer("llama.cpp", body=b"nonsense")
        ) as wrong,
        ReviewerSimulator(
            "openai", ScriptedModel("pass"), server=SimServer("llama.cpp", status=503)
        ) as down,
        ReviewerSimulator("openai", ScriptedModel("pass")) as fallback,
    ):
        spare = ReviewerConfig(provider="openai", model=MODEL, base_url=fallback.base_url)
        config = replace(_config(wrong, "llama.cpp"), fallbacks=(spare,))
        result = review_diff(large_diff(3), config, api_key="k", fallback_keys=("k",))
        assert (wrong.count, fallback.count) == (0, 0)
        assert result.decision.reason == "config_context_window"
        assert result.decision.family is Family.CONFIG
        config = replace(_config(down, "auto"), fallbacks=(spare,))
        result = review_diff(large_diff(3), config, api_key="k", fallback_keys=("k",))
        assert (down.count, fallback.count) == (0, 1)
        assert result.earlier[0].decision.reason == "context_window_unreachable"
        assert result.earlier[0].decision.state is State.INCOMPLETE
    assert result.decision.state is State.PASS  # the fallback, which has no setting


def test_max_cost_holds_over_the_cut_the_servers_size_makes() -> None:
    """The action's max_cost guard runs before the size is known; review_diff checks the
    estimate again over the smaller chunks the size makes, before any request."""
    from gate.config.model import ModelPrice
    from gate.review.cost import over_budget

    diff = large_diff()
    with ReviewerSimulator(
        "openai", ScriptedModel("pass"), server=SimServer("llama.cpp", 12288)
    ) as sim:
        priced = _config(sim, "auto", pricing=(ModelPrice(MODEL, 1.0, 1.0),))
        served = replace(priced, reviewer=replace(priced.reviewer, served_window=12288))
        unserved_cost = _cost(diff, priced)
        served_cost = _cost(diff, served)
        assert served_cost > unserved_cost
        limit = (unserved_cost + served_cost) / 2
        config = replace(priced, max_cost=limit)
        assert over_budget(diff, config) is None  # what the action sees first
        result = review_diff(diff, config, api_key="k")
        assert sim.count == 0
    assert result.decision.reason == "over_budget"


def _cost(diff: bytes, config: Config) -> float:
    from gate.review.cost import estimate

    cost = estimate(diff, config)[2]
    assert cost is not None
    return cost


def test_the_told_size_is_no_part_of_the_configs_digest() -> None:
    config = Config(reviewer=ReviewerConfig(provider="openai", model=MODEL, base_url="http://x/v1"))
    told = replace(config, reviewer=replace(config.reviewer, served_window=4096))
    assert config_sha256(told) == config_sha256(config)
    assert "context_window" not in json.dumps(config.to_json())
    assert "served_window" not in json.dumps(told.to_json())
    auto = replace(config, reviewer=replace(config.reviewer, context_window="auto"))
    assert config_sha256(auto) != config_sha256(config)
