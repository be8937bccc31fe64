"""``serve --context-window``: the gate's preflight, at the source.

Outside attack of issue 33 (items 1 and 2, decisions 0050 and 0052). The gate refuses a
prompt its server cannot fit before the call (``reviewer.context_window``), but only
for the openai provider: behind ``serve`` (provider ``mc1``) no preflight could be
configured, and ``serve`` forwarded every prompt, so a server that silently cuts (Ollama
keeps the last ``num_ctx`` tokens) was caught only by the prompt tokens it reports and
the values the verdict repeats, and a team that put ``serve`` in front of its server
lost the preflight. Now ``serve`` asks as the gate does and answers the gate's own end.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from gate.decide.ends import CONTEXT_OVERFLOW, name_refusal
from gate.errors import UsageError
from gate.lab.sim import ReviewerSimulator, SimServer
from tests.integration.serve.conftest import GOOD, TOKEN, Running


def _body(user: str, max_tokens: int = 100) -> bytes:
    return json.dumps({**GOOD, "user": user, "max_tokens": max_tokens}).encode()


def _post(running: Running, body: bytes) -> httpx.Response:
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    return httpx.post(running.url, content=body, headers=headers, timeout=30.0)


def test_a_prompt_the_upstream_cannot_fit_is_refused_before_the_call(serve: Any) -> None:
    with ReviewerSimulator("openai", server=SimServer("llama.cpp", 2048)) as sim:
        running: Running = serve(sim, check=False, context_window="llama.cpp")
        big = _post(running, _body("x" * 4000))
        assert big.status_code == 422
        assert "mc1-signature" not in big.headers
        assert name_refusal(422, big.content) == CONTEXT_OVERFLOW  # the gate's own end
        assert sim.count == 0
        small = _post(running, _body("x" * 500))
        assert small.status_code == 200
        assert sim.count == 1


def test_a_size_that_cannot_be_read_is_an_outage_never_a_call(serve: Any) -> None:
    with ReviewerSimulator("openai", server=SimServer("llama.cpp", status=500)) as sim:
        running: Running = serve(sim, check=False, context_window="llama.cpp")
        answer = _post(running, _body("x" * 10))
        assert answer.status_code == 502
        assert answer.json()["error"]["type"] == "context_window_unreachable"
        assert sim.count == 0


def test_off_asks_nothing(serve: Any) -> None:
    with ReviewerSimulator("openai", server=SimServer("llama.cpp", 2048)) as sim:
        running: Running = serve(sim, check=False)
        assert _post(running, _body("x" * 4000)).status_code == 200
        assert sim.preflights == []


def test_a_window_that_cannot_be_read_stops_the_start(serve: Any) -> None:
    with ReviewerSimulator("openai", server=SimServer("llama-cpp-python")) as sim:
        with pytest.raises(UsageError) as err:
            serve(sim, context_window="llama.cpp")  # llama-cpp-python: no /props
        assert "--context-window llama.cpp" in str(err.value)
        running: Running = serve(sim, context_window="auto")  # auto: no size, said so
        assert any("context window" in line for line in running.logs)


def test_the_gate_through_serve_never_passes_a_prompt_that_cannot_fit(
    serve: Any, key_path: Any
) -> None:
    """The gate's own review (provider mc1) through serve: the demo's sample needs more
    than 1,024 tokens at one token a byte, so it blocks on the context, not a call; with
    room for it, the same review passes."""
    from dataclasses import replace

    from gate.decide.decision import State
    from gate.lab.demo import ScriptedModel, demo_config, load_sample
    from gate.review.pipeline import review_diff
    from gate.serve.keys import public_path

    def review(url: str) -> Any:
        config = demo_config(url, read_timeout=10.0, provider="mc1")
        reviewer = replace(config.reviewer, public_key=public_path(key_path).read_text())
        return review_diff(
            load_sample(), replace(config, reviewer=reviewer), api_key=TOKEN, sleep=lambda _: None
        )

    small = SimServer("llama.cpp", 1024)
    with ReviewerSimulator("openai", ScriptedModel("pass"), server=small) as sim:
        result = review(serve(sim, check=False, context_window="llama.cpp").url)
        assert result.decision.state is not State.PASS
        assert CONTEXT_OVERFLOW in json.dumps(result.decision.to_json()), result.decision
        assert sim.count == 0
    roomy = SimServer("llama.cpp", 200_000)
    with ReviewerSimulator("openai", ScriptedModel("pass"), server=roomy) as sim:
        result = review(serve(sim, check=False, context_window="llama.cpp").url)
        assert result.decision.state is State.PASS, result.decision
