"""For each dialect and framing: a healthy answer passes, a cut at every byte offset never does.

A real reviewer simulator on 127.0.0.1 answers a bound pass verdict; the fault
proxy sits between it and the gate and cuts the same healthy response after
0, 1, 2, ... N-1 bytes (HTTP headers included), one connection per offset.
Each cut goes through the whole pipeline (transport, envelope, decision).
"""

from __future__ import annotations

import collections
from typing import Any
from urllib.parse import urlsplit

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import Binding, State
from gate.lab.faults import Fault, FaultKind, FaultProxy
from gate.lab.sim import (
    DIALECTS,
    MODEL,
    SIM_EXTRAS,
    VERTEX_CLAUDE,
    ReviewerSimulator,
    SimResponse,
    extract_prompt,
)
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from tests.verdicts import fenced_verdict

#: Every dialect, plus Vertex serving a Claude model (Anthropic's dialect on Vertex's path).
CASES = (*DIALECTS, f"vertex/{VERTEX_CLAUDE}")
#: The dialects whose answer carries its own integrity (MC1's length and digest, the
#: event stream's CRC32s): a flipped byte anywhere in the body must be caught. An SSE
#: answer has none: a flip inside the model's words changes them undetectably, which
#: is what TLS is for, so they get the cut sweep only.
INTEGRITY = ("mc1", "bedrock")

DIFF = b"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def bound_pass(dialect: str) -> Any:
    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt(dialect, request)[1])
        assert binding is not None
        return fenced_verdict(binding, reasons=["x is now 2"])

    return respond


def case(name: str) -> tuple[str, str]:
    """(dialect, model) of a sweep case named ``dialect`` or ``dialect/model``."""
    dialect, _, model = name.partition("/")
    return dialect, model or MODEL


@pytest.fixture(autouse=True)
def aws_key_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bedrock signs every request (the sweeps pass a key); the id is read beside it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)


def config_for(base_url: str, provider: str, model: str = MODEL) -> Config:
    extras: dict[str, Any] = dict(SIM_EXTRAS.get(provider, {}))
    return Config(
        reviewer=ReviewerConfig(
            provider=provider,
            model=model,
            **extras,
            base_url=base_url,
            connect_timeout=5.0,
            read_timeout=5.0,
            deadline=10.0,
            attempts=1,
        ),
        policy_version="3",
    )


def via(proxy: FaultProxy, url: str) -> str:
    return proxy.url + urlsplit(url).path


@pytest.mark.timeout(240)
@pytest.mark.parametrize("framing", ["chunked", "length"])
@pytest.mark.parametrize("name", CASES)
def test_every_cut_of_a_healthy_answer_blocks(name: str, framing: str) -> None:
    dialect, model = case(name)
    # One content piece per answer keeps the response small, so every offset is cheap.
    healthy = SimResponse(piece_size=4096, framing=framing)
    script = [healthy] * 10_000
    with (
        ReviewerSimulator(dialect, bound_pass(dialect), script=script) as sim,
        FaultProxy(("127.0.0.1", sim.port)) as proxy,
    ):
        config = config_for(via(proxy, sim.base_url), dialect, model)
        first = review_diff(DIFF, config, api_key="k")
        assert first.decision.state is State.PASS, first.decision.description
        assert first.binding == Binding(first.binding.diff_sha, "3")
        assert proxy.wait(5)
        total = proxy.records[0].client_bytes
        reference = bytes(proxy.records[0].captured)
        assert total == len(reference) > 200

        reasons: collections.Counter[str] = collections.Counter()
        passed = []
        for offset in range(total):
            proxy.fault = Fault(FaultKind.CUT, offset)
            result = review_diff(DIFF, config, api_key="k")
            if result.decision.state is State.PASS:
                passed.append(offset)
            assert result.decision.state is State.INCOMPLETE, (offset, result.decision)
            reasons[result.decision.reason] += 1
        assert proxy.wait(5)

        # The proxy really delivered each prefix, exactly, from the same healthy answer.
        cuts = proxy.records[1:]
        assert len(cuts) == total
        for offset, record in enumerate(cuts):
            assert record.client_bytes == offset
            assert bytes(record.captured) == reference[:offset]

        proxy.fault = Fault()
        last = review_diff(DIFF, config, api_key="k")
        assert last.decision.state is State.PASS
    assert passed == []
    assert sum(reasons.values()) == total
    assert proxy.alive_threads == 0
    print(f"{name}/{framing}: {total} cuts, reasons {dict(reasons)}")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("dialect", INTEGRITY)
def test_every_flipped_byte_after_the_http_head_blocks(dialect: str) -> None:
    """An MC1 envelope's length and SHA-256, and every event-stream frame's two CRC32s,
    catch a flip anywhere in the answer."""
    script = [SimResponse(piece_size=4096)] * 5_000
    key = None if dialect == "mc1" else "k"
    with (
        ReviewerSimulator(dialect, bound_pass(dialect), script=script) as sim,
        FaultProxy(("127.0.0.1", sim.port)) as proxy,
    ):
        config = config_for(via(proxy, sim.base_url), dialect)
        assert review_diff(DIFF, config, api_key=key).decision.state is State.PASS
        assert proxy.wait(5)
        reference = bytes(proxy.records[0].captured)
        body_start = reference.index(b"\r\n\r\n") + 4
        states: collections.Counter[str] = collections.Counter()
        for offset in range(body_start, len(reference)):
            proxy.fault = Fault(FaultKind.FLIP, offset)
            decision = review_diff(DIFF, config, api_key=key).decision
            assert decision.state is not State.PASS, (offset, decision)
            states[f"{decision.state}:{decision.reason}"] += 1
        assert proxy.wait(5)
        assert all(rec.applied for rec in proxy.records[1:])
    assert sum(states.values()) == len(reference) - body_start > 200
    print(f"{dialect} flips: {len(reference) - body_start}, decisions {dict(states)}")
