"""The local reviewer simulator: framing on the wire, prompts, clean shutdown."""

from __future__ import annotations

import threading

import httpx
import pytest

from gate.lab.sim import (
    DIALECTS,
    ReviewerSimulator,
    SimResponse,
    extract_prompt,
    render_events,
    wire_for,
)
from gate.reviewers.gemini import build_request as gemini_request
from gate.reviewers.openai import build_request as openai_request
from gate.reviewers.transport import review

pytestmark = pytest.mark.timeout(60)


def test_framings_on_the_wire() -> None:
    body = b"".join(render_events("openai", "hi"))
    chunked = wire_for("openai", "hi")
    assert b"Transfer-Encoding: chunked\r\n" in chunked
    assert chunked.endswith(b"0\r\n\r\n")
    length = wire_for("openai", "hi", SimResponse(framing="length"))
    assert f"Content-Length: {len(body)}\r\n".encode() in length
    assert length.endswith(body)
    close = wire_for("openai", "hi", SimResponse(framing="close"))
    assert b"Content-Length" not in close
    assert b"Transfer-Encoding" not in close
    assert close.endswith(body)
    sized = wire_for("openai", "hi", SimResponse(chunk_size=5))
    assert b"\r\n5\r\n" in sized


def test_gemini_events_use_crlf_and_carry_no_done() -> None:
    body = b"".join(render_events("gemini", "hello"))
    assert body.endswith(b"\r\n\r\n")
    assert b"[DONE]" not in body
    assert b'"finishReason":"STOP"' in body


@pytest.mark.parametrize("dialect", DIALECTS)
def test_prompts_are_recovered_from_each_request(dialect: str) -> None:
    seen: list[tuple[str, str]] = []

    def responder(request: dict[str, object]) -> str:
        seen.append(extract_prompt(dialect, request))
        return "ok"

    with ReviewerSimulator(dialect, responder) as sim:
        review(sim.settings(), system="the system", user="the user")
    assert seen == [("the system", "the user")]


def test_unknown_path_is_404() -> None:
    with ReviewerSimulator("openai") as sim:
        response = httpx.post(f"http://127.0.0.1:{sim.port}/nope", json={}, timeout=5)
    assert response.status_code == 404


def test_request_builders_target_the_simulator_paths() -> None:
    with ReviewerSimulator("gemini") as sim:
        request = gemini_request(sim.settings(model="models/gemini-x"), system="s", user="u")
        assert request.url.endswith("/v1beta/models/gemini-x:streamGenerateContent?alt=sse")
    with ReviewerSimulator("openai") as sim:
        assert openai_request(sim.settings(), system="s", user="u").url.endswith(
            "/v1/chat/completions"
        )


def test_stop_leaves_no_thread_behind_even_while_stalling() -> None:
    before = {t.ident for t in threading.enumerate()}
    sim = ReviewerSimulator("anthropic", script=[SimResponse(stall_after=10)])
    sim.start()
    outcome = review(sim.settings(deadline=0.5, attempts=1), system="s", user="u")
    sim.stop()
    assert outcome.last is not None
    assert outcome.last.reason == "deadline"
    left = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert left == []


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown dialect"):
        ReviewerSimulator("cohere")


def test_each_servers_context_endpoint_is_in_its_real_shape() -> None:
    """The bodies the simulator plays (issue 33), as each server's source writes them:
    llama.cpp's /props (``default_generation_settings.n_ctx``, nlohmann's compact dump),
    vLLM's ``ModelCard`` (``max_model_len``), Ollama's ShowResponse (``parameters`` as
    ``"%-*s %#v"`` 30 wide), llama-cpp-python's ``ModelList`` and FastAPI's 404 (both
    checked against the real server)."""
    import json

    from gate.lab.sim import SimServer, context_json, context_wire

    props = json.loads(context_json(SimServer("llama.cpp", 4096), "GET", "/props", "m") or b"")
    assert props["default_generation_settings"]["n_ctx"] == 4096
    assert list(props)[:2] == ["default_generation_settings", "total_slots"]
    models = json.loads(context_json(SimServer("vllm", 4096), "GET", "/v1/models", "m") or b"")
    assert models["data"][0]["max_model_len"] == 4096
    assert models["data"][0]["owned_by"] == "vllm"
    show = json.loads(context_json(SimServer("ollama", 4096), "POST", "/api/show", "m") or b"")
    assert show["parameters"].splitlines()[0] == "num_ctx" + " " * 24 + rf"{4096}"
    python = context_json(SimServer("llama-cpp-python"), "GET", "/v1/models", "m")
    assert (
        python == b'{"object":"list","data":[{"id":"m","object":"model","owned_by":"me",'
        b'"permissions":[]}]}'
    )
    wire = context_wire(SimServer("llama-cpp-python"), "GET", "/props", "m")
    assert wire.startswith(b"HTTP/1.1 404 ")
    assert wire.endswith(b'\r\n\r\n{"detail":"Not Found"}')
